"""The value of ``nia/git``: what the model is told, compared by value, and its JSON codec."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

KEY = "nia/git"


@dataclass(frozen=True)
class GitStatus:
    """What the model is told; compared by value, so equal states cost no message."""

    error: str = ""
    """Why git could not tell (then every other field is empty)."""
    branch: str = ""
    detached: bool = False
    oid: str = ""
    """HEAD's full id; empty before the first commit."""
    head: str = ""
    """HEAD's short id."""
    subject: str = ""
    parents: tuple[str, ...] = ()
    upstream: str = ""
    ahead: int | None = None
    behind: int | None = None
    """``None`` with an upstream: the upstream branch is gone."""
    operations: tuple[str, ...] = ()
    rebasing: str = ""
    """The branch being rebased, during a rebase."""
    stashes: int = 0
    staged: int = 0
    modified: int = 0
    untracked: int | None = 0
    """``None``: untracked files are not looked for (``untracked = false``)."""
    conflicted: int = 0
    entries: tuple[tuple[str, str], ...] = ()
    """``(path, label)`` of the changed paths named, project-relative and escaped."""
    more: int = 0
    """Changed paths not named."""

    @property
    def clean(self) -> bool:
        return not self.entries and not self.more


class GitStatusCodec:
    """A frozen dataclass of JSON-compatible fields; lists come back as tuples."""

    def encode(self, value: GitStatus) -> Any:
        return dataclasses.asdict(value)

    def decode(self, data: Any) -> GitStatus:
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for GitStatus, got {type(data).__name__}")
        return GitStatus(**{key: _tuples(item) for key, item in data.items()})


def _tuples(value: Any) -> Any:
    return tuple(_tuples(item) for item in value) if isinstance(value, list) else value
