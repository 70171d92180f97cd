"""Which folders of a working tree an ignore rule names, as git itself says: those a watch may leave out."""

from __future__ import annotations

import os

from nia_plugins.git.process import Budget
from nia_plugins.git.repository import Repository
from nia_plugins.git.running import GitFailed, GitProgram, run_git

LISTING = ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]

CHECK_BATCH = 65536
"""Bytes of paths per ``git check-ignore`` call: well under any system's limit of a command line."""


def ignored_folders(
    git: GitProgram,
    repo: Repository,
    scope: list[str],
    overrides: tuple[tuple[str, str], ...],
    budget: Budget,
) -> list[bytes] | None:
    """The folders (work-tree paths, no trailing ``/``) an ignore rule names; ``None`` when git could not tell.

    ``git ls-files --ignored --directory`` lists a folder whose files all
    happen to be ignored too (by a ``*.o`` rule, say; and those files after
    it): a new file there may not be, so only the folders ``git check-ignore``
    says a rule names count. Both run as every git call does (``overrides``,
    the clean environment, ``budget``).
    """
    try:
        code, out, _err = run_git(git, repo, "ls-files", [*LISTING, *scope], budget, overrides)
        return _named_by_a_rule(git, repo, overrides, budget, out) if code == 0 else None
    except GitFailed:
        return None


def _named_by_a_rule(
    git: GitProgram, repo: Repository, overrides: tuple[tuple[str, str], ...], budget: Budget, listed: bytes
) -> list[bytes] | None:
    """The folders of ``ls-files``' answer an ignore rule names (``./`` in front: a name is never read as
    pathspec magic; one answer line per path, in order, ``::`` when no rule names it)."""
    entries = sorted(path for path in listed.split(b"\0") if path)
    alone = [
        path.rstrip(b"/")
        for index, path in enumerate(entries)
        if path.endswith(b"/") and not (index + 1 < len(entries) and entries[index + 1].startswith(path))
    ]
    ignored: list[bytes] = []
    while alone:
        batch, size = [], 0
        while alone and size < CHECK_BATCH:
            batch.append(alone.pop())
            size += len(batch[-1]) + 3
        args = ["check-ignore", "--verbose", "--non-matching", "--no-index", "--"]
        paths = ["./" + os.fsdecode(path) for path in batch]
        code, out, _err = run_git(git, repo, "check-ignore", [*args, *paths], budget, overrides)
        lines = out.split(b"\n")[: len(batch)]
        if code not in (0, 1) or len(lines) != len(batch):
            return None
        ignored += [path for path, line in zip(batch, lines, strict=True) if not line.startswith(b"::\t")]
    return ignored
