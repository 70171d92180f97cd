"""Reading what git said: ``git status --porcelain=v2 --branch -z`` and ``git log -1``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from nia_plugins.git.escape import plain

CONFLICTS = {
    "DD": "both deleted",
    "AU": "added by us",
    "UD": "deleted by them",
    "UA": "added by them",
    "DU": "deleted by us",
    "AA": "both added",
    "UU": "both modified",
}


INDEX_WORDS = {"M": "staged", "T": "staged", "A": "staged (new file)", "D": "staged (deleted)"}
INDEX_WORDS |= {"R": "staged (renamed)", "C": "staged (copied)"}


TREE_WORDS = {"M": "modified", "T": "modified", "D": "deleted"}


def _label(xy: str) -> str:
    words = [w for w in (INDEX_WORDS.get(xy[0], ""), TREE_WORDS.get(xy[1], "")) if w]
    return " and ".join(words) or "changed"


@dataclass
class ParsedStatus:
    oid: str = ""
    head: str = ""
    upstream: str = ""
    ahead: int | None = None
    behind: int | None = None
    staged: int = 0
    modified: int = 0
    untracked: int = 0
    conflicted: int = 0
    conflicts: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    tracked: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    new: list[tuple[str, str]] = dataclasses.field(default_factory=list)


def parse_status(out: bytes, relative: Any) -> ParsedStatus:
    """``git status --porcelain=v2 --branch -z`` output; ``relative`` maps a repository path to its display."""
    parsed = ParsedStatus()
    records = out.split(b"\0")
    index = 0
    while index < len(records):
        record = records[index].decode("utf-8", "surrogateescape")
        index += 1
        if not record:
            continue
        kind = record[0]
        if kind == "#":
            name, _, value = record[2:].partition(" ")
            if name == "branch.oid":
                parsed.oid = "" if value == "(initial)" else value
            elif name == "branch.head":
                parsed.head = value
            elif name == "branch.upstream":
                parsed.upstream = value
            elif name == "branch.ab":
                ahead, _, behind = value.partition(" ")
                try:
                    parsed.ahead, parsed.behind = int(ahead.lstrip("+")), int(behind.lstrip("-"))
                except ValueError:
                    pass
        elif kind in "12":
            fields = record.split(" ", 8 if kind == "1" else 9)
            xy, path = fields[1], fields[-1]
            if kind == "2":
                index += 1  # the original path of a rename or copy
            parsed.staged += xy[0] != "."
            parsed.modified += xy[1] != "."
            parsed.tracked.append((relative(path), _label(xy)))
        elif kind == "u":
            fields = record.split(" ", 10)
            parsed.conflicted += 1
            parsed.conflicts.append((relative(fields[-1]), f"in conflict: {CONFLICTS.get(fields[1], 'unmerged')}"))
        elif kind == "?":
            parsed.untracked += 1
            parsed.new.append((relative(record[2:]), "untracked"))
    return parsed


COMMIT_LOG = ("log", "-1", "--no-show-signature", "--no-color", "--format=%H%x00%h%x00%P%x00%s")


def commit_fields(out: bytes) -> tuple[str, tuple[str, tuple[str, ...], str]]:
    """``(full id, (short id, parents, subject))`` of one :data:`COMMIT_LOG` answer."""
    full, _, rest = out.decode("utf-8", "replace").rstrip("\n").partition("\0")
    short, _, rest = rest.partition("\0")
    parents, _, subject = rest.partition("\0")
    return full, (plain(short, 64), tuple(parents.split()), plain(subject))
