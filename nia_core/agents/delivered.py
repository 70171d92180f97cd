"""Which of an epoch's texts reached the model: matched against what the host recorded as *hook output*.

nia prints, at one hook, either one admitted text or several joined by a blank
line (earlier ones the host lost, then the new one), fitted to the host's
limit. So a hook output the host recorded delivered the texts ``i..j-1`` of
the epoch exactly when it *is* ``"\\n\\n".join(texts[i:j])`` (stripped, as the
hosts store it), or, when that was over the limit, exactly the head and footer
nia prints for it, whose spill file name is that joined text's hash. Nothing
else counts: not a text quoted inside a longer output, not a tool result, not
a file (the spill file in the project is never read back: the repository can
write there, and could plant one whose name is the hash of what it likes).

Two host habits are part of the comparison (:class:`~nia_core.agents.contract.HostAdapter`):
``recorded``, what the host makes of a text (Gemini CLI and Qwen Code escape
``<`` and ``>``), so nia's texts are compared in that form; and ``joins``, the
separator a host puts between several hooks' texts when it records them as one
output, so nia's text also counts when it is one of those texts, whole,
between separators (another hook of the same event printed too).

The work is bounded by nia's own texts, never by the transcript's content:
each recorded output costs a dictionary lookup on its first characters (and
one per separator in it, for a host that joins), and only outputs that begin
like one of the epoch's texts are compared further.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from nia_core.agents.output_limit import spill_name

KEY = 48
"""Characters of a text's start used to find the recorded outputs that may be it."""

Printed = Callable[[str], str]
"""What nia prints for a text over the host's limit (the head and the footer naming its spill file)."""

_FOOTER = re.compile(
    r"\n\n\[nia: this context is [0-9,]+ \w+ long and only [0-9,]+ reach you here\. "
    r"The complete text is in [^\n]+ - read that file before relying on what is above\.\]"
)
"""nia's footer anywhere in an output (a host that joins hooks' texts may put another text after it)."""


def _same(text: str) -> str:
    return text


def delivered(
    texts: Sequence[str],
    outputs: Sequence[str],
    printed: Printed,
    recorded: Callable[[str], str] = _same,
    joins: str = "",
) -> set[int]:
    """The indexes of ``texts`` that some recorded hook output in ``outputs`` delivered.

    ``recorded``: what the host makes of a text before recording it;
    ``joins``: the separator between several hooks' texts in one recorded
    output (``""``: each output is one hook's).
    """
    shown = [recorded(text) for text in texts]
    starts: dict[str, list[int]] = {}
    short: list[int] = []
    for index, text in enumerate(shown):
        head = text.lstrip()
        if len(head) >= KEY:
            starts.setdefault(head[:KEY], []).append(index)
        elif head:
            short.append(index)
    found: set[int] = set()
    for output in dict.fromkeys(o.strip() for o in outputs):
        if not output:
            continue
        for at in _segments(output, joins):
            firsts = [*starts.get(output[at : at + KEY], ())]
            firsts += [i for i in short if output.startswith(shown[i].lstrip(), at)]
            for first in firsts:
                last = _ends(texts, shown, first, output, at, printed, recorded, joins)
                if last is not None:
                    found.update(range(first, last))
    return found


def _segments(output: str, joins: str) -> Iterator[int]:
    """Where one hook's text may begin in a recorded output: its start, and after each separator."""
    yield 0
    if not joins:
        return
    at = output.find(joins)
    while at >= 0:
        after = at + len(joins)
        while after < len(output) and output[after].isspace():  # a text is compared stripped
            after += 1
        yield after
        at = output.find(joins, at + len(joins))


def _ends(
    texts: Sequence[str],
    shown: Sequence[str],
    first: int,
    output: str,
    at: int,
    printed: Printed,
    recorded: Callable[[str], str],
    joins: str,
) -> int | None:
    """The largest ``j`` for which ``output`` holds what nia printed for ``texts[first:j]`` joined, at ``at``.

    It must be all of ``output`` from ``at`` on, or end where a separator
    begins (``joins``). ``None`` when no ``j`` fits.
    """
    footer = _FOOTER.search(output, at)
    head = output[at : footer.start()] if footer is not None else None
    best = None
    joined, joined_shown = texts[first], shown[first]
    for last in range(first + 1, len(texts) + 1):
        whole = joined_shown.strip()
        matches = output.startswith(whole, at)
        if matches and _bounded(output, at + len(whole), joins):
            best = last
        elif head is not None and len(whole) > len(head):
            spilled = recorded(printed(joined)).strip()
            if (
                output.startswith(spilled, at)
                and _bounded(output, at + len(spilled), joins)
                and spill_name(joined) in spilled
            ):
                best = last
        if not (matches or (head is not None and (whole.startswith(head) or head.startswith(whole)))):
            break  # a longer join cannot be what was printed here
        if last < len(texts):
            joined = f"{joined}\n\n{texts[last]}"
            joined_shown = f"{joined_shown}\n\n{shown[last]}"
    return best


def _bounded(output: str, end: int, joins: str) -> bool:
    """Whether a text that ends at ``end`` is a whole text of ``output``: its end, or a separator follows."""
    return end == len(output) or (bool(joins) and output.startswith(joins, end))
