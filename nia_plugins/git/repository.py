"""Finding the repository of a Location as git finds it, and whether its git directory may be read.

Every file nia reads from a git directory goes through the checked reader
(:func:`read_small`): a regular file really inside the folder it belongs to,
bounded, never a FIFO nor a link out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from nia_core import StatCache

_files = StatCache()
"""Checked contents of the git directory's small files, read again only when they change."""


@dataclass(frozen=True)
class Repository:
    worktree: str
    """The folder holding ``.git``."""
    dotgit: str
    """``worktree/.git``: a folder, or a file naming the git dir (linked worktrees, submodules)."""
    gitdir: str
    """Per-worktree files: ``HEAD``, ``index``, in-progress operations."""
    commondir: str
    """Shared files: refs, ``packed-refs``, ``config``, the stash."""


SMALL_FILE = 1024 * 1024
"""At most this much of a file nia reads from a git directory (HEAD, a ref, ``commondir``, config)."""


def read_small(path: str, folder: str) -> str | None:
    """The text of ``path``, through the checked reader: a regular file really inside ``folder``, bounded.

    A FIFO, a device, a symlink leading out of ``folder`` or a file that does
    not exist is ``None``: what git keeps is described only from inside it.
    """
    try:
        return _files.read_text(path, root=folder, limit=SMALL_FILE)
    except OSError:
        return None


def _is_git_dir(path: str) -> bool:
    """What git checks before taking a ``.git`` folder as a repository (else it looks further up)."""
    common = path
    pointer = read_small(os.path.join(path, "commondir"), path)
    if pointer is not None and pointer.strip():
        common = os.path.normpath(os.path.join(path, pointer.strip()))
    return (
        os.path.isfile(os.path.join(path, "HEAD"))
        and os.path.isdir(os.path.join(common, "objects"))
        and os.path.isdir(os.path.join(common, "refs"))
    )


def _repository(worktree: str, dotgit: str, is_dir: bool) -> Repository:
    gitdir = dotgit
    if not is_dir:
        text = read_small(dotgit, worktree) or ""
        first = text.splitlines()[0] if text else ""
        if first.startswith("gitdir:"):
            gitdir = os.path.normpath(os.path.join(worktree, first[len("gitdir:") :].strip()))
    commondir = gitdir
    pointer = read_small(os.path.join(gitdir, "commondir"), gitdir)
    if pointer is not None and pointer.strip():
        commondir = os.path.normpath(os.path.join(gitdir, pointer.strip()))
    return Repository(worktree, dotgit, gitdir, commondir)


def within(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _configured_worktree(gitdir: str) -> str | None:
    """``core.worktree`` of a git dir's own config file (what a submodule's git dir points back with)."""
    text = read_small(os.path.join(gitdir, "config"), gitdir)
    if text is None:
        return None
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped[1:].split("]")[0].strip().lower()
        elif section == "core" and "=" in stripped:
            key, _, value = stripped.partition("=")
            if key.strip().lower() == "worktree":
                value = value.strip().strip('"')
                return os.path.normpath(os.path.join(gitdir, value))
    return None


def untrusted(repo: Repository, root: str) -> str | None:
    """Why the repository's git dir is not read, or ``None``.

    A ``.git`` file or a ``commondir`` file can point anywhere: a cloned
    repository would make nia describe another repository of the user's to
    the model (its branch, its last commit, its file names); so can a ``.git``
    folder that is a symlink (an unpacked archive). A git dir outside the
    project is read only when it points back, as linked worktrees (``gitdir``)
    and submodules (``core.worktree``) do; a ``commondir`` must hold the git
    dir, as in ``.git/worktrees/NAME``.
    """
    if repo.commondir != repo.gitdir and not within(repo.gitdir, repo.commondir):
        return "its git directory names a `commondir` elsewhere, which nia does not follow"
    if within(repo.gitdir, repo.worktree) or within(repo.gitdir, root):
        return None
    back = read_small(os.path.join(repo.gitdir, "gitdir"), repo.gitdir)
    if (
        back is not None
        and back.strip()
        and os.path.realpath(os.path.join(repo.gitdir, back.strip())) == os.path.realpath(repo.dotgit)
    ):
        return None
    configured = _configured_worktree(repo.gitdir)
    if configured is not None and os.path.realpath(configured) == os.path.realpath(repo.worktree):
        return None
    if repo.gitdir == repo.dotgit:
        return "the `.git` folder is a symlink to a git directory outside the project that does not point back to it"
    return "the `.git` file points to a git directory outside the project that does not point back to it"


def _ceilings() -> tuple[str, ...]:
    value = os.environ.get("GIT_CEILING_DIRECTORIES", "")
    return tuple(os.path.normpath(p) for p in value.split(os.pathsep) if os.path.isabs(p))


def find_repository(start: str) -> Repository | None:
    """The repository whose work tree holds ``start``, found as git finds it (``None`` outside one).

    Like git, the search upward stops at a filesystem boundary (unless
    ``GIT_DISCOVERY_ACROSS_FILESYSTEM``) and before any ``GIT_CEILING_DIRECTORIES``.
    """
    ceilings = _ceilings()
    across = os.environ.get("GIT_DISCOVERY_ACROSS_FILESYSTEM", "").lower() in ("1", "true", "yes", "on")
    try:
        device = os.stat(start).st_dev
    except OSError:
        return None
    folder = start
    while True:
        dotgit = os.path.join(folder, ".git")
        if os.path.isfile(dotgit) or (os.path.isdir(dotgit) and _is_git_dir(dotgit)):
            if start == dotgit or start.startswith(dotgit + os.sep):
                return None  # inside the git dir itself: not a work tree
            return _repository(folder, dotgit, os.path.isdir(dotgit))
        parent = os.path.dirname(folder)
        if parent == folder or parent in ceilings:
            return None
        if not across:
            try:
                if os.stat(parent).st_dev != device:
                    return None
            except OSError:
                return None
        folder = parent


def inside_any(path: str, folders: tuple[str, ...]) -> bool:
    real = os.path.realpath(path)
    return any(real == folder or real.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)
