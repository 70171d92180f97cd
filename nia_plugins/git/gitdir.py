"""What git keeps in the git directory that nia reads itself: the files to watch, refs, operations, stashes."""

from __future__ import annotations

import os

from nia_plugins.git.repository import Repository, read_small

WATCHED_IN_GITDIR: tuple[str, ...] = ("HEAD", "index", "config.worktree", "MERGE_HEAD", "CHERRY_PICK_HEAD")
WATCHED_IN_GITDIR += ("REVERT_HEAD", "BISECT_LOG", "rebase-merge", "rebase-apply")
"""Per-worktree files git updates when HEAD, the index or an operation moves."""
WATCHED_IN_COMMONDIR = (
    "packed-refs",
    "config",
    os.path.join("logs", "refs", "stash"),
    "reftable/tables.list",
    "info/exclude",
)
"""Shared files git updates when refs, the config or the stash move; and the repository's own ignore rules."""
PER_WORKTREE_REFS = ("refs/bisect/", "refs/worktree/", "refs/rewritten/")


def file_signature(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def ref_file(repo: Repository, ref: str) -> str | None:
    """The loose file of ``ref`` (per-worktree refs in the git dir, the rest in the common dir)."""
    if not ref.startswith("refs/") or ".." in ref.split("/"):
        return None
    base = repo.gitdir if ref.startswith(PER_WORKTREE_REFS) else repo.commondir
    return os.path.join(base, *ref.split("/"))


def operations_in_progress(repo: Repository) -> tuple[tuple[str, ...], str]:
    """In-progress operations, from the files git leaves in the git dir; and the branch being rebased."""
    g = repo.gitdir
    found = []
    rebased = ""
    if os.path.exists(os.path.join(g, "MERGE_HEAD")):
        found.append("merge")
    for folder in ("rebase-merge", "rebase-apply"):
        path = os.path.join(g, folder)
        if os.path.isdir(path):
            if folder == "rebase-apply" and os.path.exists(os.path.join(path, "applying")):
                found.append("am")
                continue
            found.append("rebase")
            name = (read_small(os.path.join(path, "head-name"), g) or "").strip()
            rebased = name.removeprefix("refs/heads/") if name.startswith("refs/") else ""
            break
    if os.path.exists(os.path.join(g, "CHERRY_PICK_HEAD")):
        found.append("cherry-pick")
    if os.path.exists(os.path.join(g, "REVERT_HEAD")):
        found.append("revert")
    if os.path.exists(os.path.join(g, "BISECT_LOG")):
        found.append("bisect")
    return tuple(found), rebased


def stash_count(repo: Repository) -> int:
    """Lines of the stash's reflog (read checked and bounded: a FIFO or ``/dev/zero`` there counts nothing)."""
    text = read_small(os.path.join(repo.commondir, "logs", "refs", "stash"), repo.commondir) or ""
    return sum(1 for line in text.splitlines() if line.strip())
