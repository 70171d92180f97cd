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

The work is bounded by nia's own texts, never by the transcript's content:
each recorded output costs a dictionary lookup on its first characters, and
only outputs that begin like one of the epoch's texts are compared further.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nia_core.agents.output_limit import FOOTER, spill_name

KEY = 48
"""Characters of a text's start used to find the recorded outputs that may be it."""

Printed = Callable[[str], str]
"""What nia prints for a text over the host's limit (the head and the footer naming its spill file)."""


def delivered(texts: Sequence[str], outputs: Sequence[str], printed: Printed) -> set[int]:
    """The indexes of ``texts`` that some recorded hook output in ``outputs`` delivered."""
    starts: dict[str, list[int]] = {}
    short: list[int] = []
    for index, text in enumerate(texts):
        head = text.lstrip()
        if len(head) >= KEY:
            starts.setdefault(head[:KEY], []).append(index)
        elif head:
            short.append(index)
    found: set[int] = set()
    for output in dict.fromkeys(o.strip() for o in outputs):
        if not output:
            continue
        footer = FOOTER.search(output)
        for first in [*starts.get(output[:KEY], ()), *(i for i in short if output.startswith(texts[i].lstrip()))]:
            last = _ends(texts, first, output, footer is not None, printed)
            if last is not None:
                found.update(range(first, last))
    return found


def _ends(texts: Sequence[str], first: int, output: str, spilled: bool, printed: Printed) -> int | None:
    """The ``j`` for which ``output`` is what nia printed for ``texts[first:j]`` joined, else ``None``."""
    joined = texts[first]
    head = output[: FOOTER.search(output).start()] if spilled else output  # type: ignore[union-attr]
    for last in range(first + 1, len(texts) + 1):
        whole = joined.strip()
        if not spilled:
            if whole == output:
                return last
            if not output.startswith(whole):
                return None
        elif len(whole) > len(head) and printed(joined).strip() == output and spill_name(joined) in output:
            return last
        elif not (whole.startswith(head) or head.startswith(whole)):
            return None
        if last < len(texts):
            joined = f"{joined}\n\n{texts[last]}"
    return None
