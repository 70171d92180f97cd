"""Fitting nia's text into a host's hook-output limit without ever cutting it silently.

Over the limit, the whole text goes to a file under the project's ``.nia/``
(``.nia/hook-output/``), and the host is given the head that fits plus a
line that says where the rest is, so the agent can read it. The file name is
the text's hash: the same text always prints the same bytes, and the
transcript check recognises a spilled output by recomputing that hash from
nia's own stored texts, never by reading the file back (the repository can
write into its own ``.nia``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FOLDER = "hook-output"


@dataclass(frozen=True)
class Fitted:
    text: str
    """What to print."""
    full_path: str = ""
    """Where the whole text is, when it did not fit."""
    problem: str = ""


def footer(path: str, size: int, limit: int, unit: str) -> str:
    return (
        f"\n\n[nia: this context is {size:,} {unit} long and only {limit:,} reach you here. "
        f"The complete text is in {path} - read that file before relying on what is above.]"
    )


FOOTER = re.compile(
    r"\n\n\[nia: this context is [0-9,]+ \w+ long and only [0-9,]+ reach you here\. "
    r"The complete text is in (?P<where>[^\n]+) - read that file before relying on what is above\.\]\s*\Z"
)
"""A printed footer at the very end of a hook output; ``where`` is the spill file (or why there is none)."""


def spill_name(text: str) -> str:
    """The spill file's name (without ``.md``) for ``text``: its hash, so the same text prints the same bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def spill_path(root: Path, text: str, folder: Path | None = None) -> Path:
    """Where the whole ``text`` goes: the project's ``.nia/hook-output/``, or ``nia-hook-output/`` in a ``folder``
    of the host's own (one its file tools read, where they skip the project's git-ignored files)."""
    if folder is not None:
        return folder / f"nia-{FOLDER}" / f"{spill_name(text)}.md"
    return root / ".nia" / FOLDER / f"{spill_name(text)}.md"


def spilled_name(printed: str) -> str | None:
    """The spill name a printed (fitted) text ends by pointing at, ``None`` when it did not spill."""
    match = FOOTER.search(printed)
    if match is None:
        return None
    name = os.path.basename(match.group("where").strip())
    return name[:-3] if name.endswith(".md") and len(name) == 19 else None


def _save(root: Path, path: Path, text: str, project: bool = True) -> None:
    """Write the spill file as nia writes every file in a project: through folders opened one level at a time
    from the root (a ``.nia`` or ``hook-output`` that leads outside is refused), atomically, never opening or
    following what is at the name (a FIFO or a symlink planted there is replaced, not written through)."""
    from nia_core.files import create_inside, replace_inside
    from nia_core.project.generated import ignore_generated

    replace_inside(root, path, text.encode("utf-8"))
    if project:  # never part of the project: not committed, not in git status
        create_inside(root, path.parent / ".gitignore", b"*\n")
        ignore_generated(root)


def fit(
    text: str,
    limit: int,
    measure: Callable[[str], int],
    root: Path,
    unit: str = "characters",
    folder: Path | None = None,
) -> Fitted:
    """``text`` if it fits in ``limit``; else the head that fits and where the whole text was saved
    (below the project ``root``, or in the host's own ``folder``: :func:`spill_path`)."""
    if measure(text) <= limit:
        return Fitted(text)
    path = spill_path(root, text, folder)
    problem = ""
    try:
        if folder is None:
            _save(root, path, text)
        else:
            _save(folder, path, text, project=False)
        where = str(path)
    except OSError as exc:
        from nia_core.files import Refused

        why = exc.problem if isinstance(exc, Refused) else (exc.strerror or str(exc))
        problem = f"could not save the complete text to {path}: {why}"
        where = f"(nowhere: {problem})"
    return Fitted(printed(text, limit, measure, where, unit), "" if problem else str(path), problem)


def printed(text: str, limit: int, measure: Callable[[str], int], where: str, unit: str = "characters") -> str:
    """What nia prints for ``text`` over ``limit``: the head that fits and a footer naming ``where`` (pure)."""
    size = measure(text)
    tail = footer(where, size, limit, unit)
    budget = limit - measure(tail)
    head = text[: max(budget, 0)]
    while head and measure(head) > budget:
        head = head[: len(head) - max(1, (measure(head) - budget) // 2)]
    cut = head.rfind("\n")
    if cut > len(head) // 2:  # end on a whole line when one is near
        head = head[:cut]
    return head + tail
