"""Fitting nia's text into a host's hook-output limit without ever cutting it silently.

Over the limit, the whole text goes to a file under the project's ``.nia/``
(``.nia/hook-output/``), and the host is given the head that fits plus a
line that says where the rest is, so the agent can read it. The file name is
the text's hash: the same text always prints the same bytes, which the
transcript check relies on.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from nia_core.digest import sha256_hex
from nia_core.records import record

FOLDER = "hook-output"


@record(frozen=True)
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


SPILLED = FOLDER + r"/([0-9a-f]{16})\.md"
"""How a printed footer names its file, for the transcript check."""


SPILLED_LIMIT = 64 * 1024 * 1024
"""The largest spilled text read back: a name in the transcript costs a bounded read."""


def spilled_texts(root: Path, names: list[str]) -> list[str]:
    """The complete texts behind footers the host recorded (names from :data:`SPILLED`), where still readable.

    The names come from the transcript and the folder from the repository, so
    each file is read through the checked reader (inside the project, a regular
    file, bounded: no symlink to a FIFO or ``/dev/zero``) and counts only if
    its bytes hash to its name, as nia wrote it: a file the repository planted
    cannot make nia believe a text reached the model.
    """
    from nia_core.files import read_checked

    texts = []
    for name in dict.fromkeys(names):
        try:
            content = read_checked(root / ".nia" / FOLDER / f"{name}.md", root, SPILLED_LIMIT)
        except (OSError, ValueError):
            continue
        if content.oversize or sha256_hex(content.data)[:16] != name:
            continue
        texts.append(content.data.decode("utf-8", errors="replace"))
    return texts


def spill_path(root: Path, text: str) -> Path:
    digest = sha256_hex(text.encode("utf-8"))[:16]
    return root / ".nia" / FOLDER / f"{digest}.md"


def _safe_dir(folder: Path) -> None:
    """Create ``folder`` (and ``.nia``) refusing symlinks: a hostile repository must not redirect the write."""
    for part in (folder.parent, folder):
        try:
            os.lstat(part)
        except FileNotFoundError:
            os.mkdir(part, 0o755)
            continue
        if not os.path.isdir(part) or os.path.islink(part):
            raise OSError(f"{part} is not a plain folder")
    ignore = folder / ".gitignore"
    if not os.path.lexists(ignore):
        _write_new(ignore, "*\n")


def _write_new(path: Path, text: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def fit(text: str, limit: int, measure: Callable[[str], int], root: Path, unit: str = "characters") -> Fitted:
    """``text`` if it fits in ``limit``; else the head that fits and where the whole text was saved."""
    size = measure(text)
    if size <= limit:
        return Fitted(text)
    path = spill_path(root, text)
    problem = ""
    try:
        _safe_dir(path.parent)
        _write_new(path, text)
        where = str(path)
    except OSError as exc:
        problem = f"could not save the complete text to {path}: {exc}"
        where = f"(nowhere: {problem})"
    tail = footer(where, size, limit, unit)
    budget = limit - measure(tail)
    head = text[: max(budget, 0)]
    while head and measure(head) > budget:
        head = head[: len(head) - max(1, (measure(head) - budget) // 2)]
    cut = head.rfind("\n")
    if cut > len(head) // 2:  # end on a whole line when one is near
        head = head[:cut]
    return Fitted(head + tail, "" if problem else str(path), problem)
