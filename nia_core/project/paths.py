"""Canonical paths and path security.

A context path resolves from the repository root (the project root), with
``..`` resolved and symlinks followed; the result must lie inside the root.
Anything that escapes it (``../``, an absolute path elsewhere, a symlink
pointing out), a symlink loop or something that is neither a regular file nor
a folder is refused with an error naming the entry that asked for it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from nia_core.errors import UsageError, escape_name, shown_path
from nia_core.files import in_git_dir, inside, outside_clause

__all__ = [
    "ContextInGitDir",
    "ContextNotFound",
    "ContextOutsideRepository",
    "ContextPathError",
    "canonical",
    "check_kind",
    "escape_name",
    "global_instructions",
    "in_git_dir",
    "inside",
    "shown_path",
]


def user_config_folder() -> Path:
    """``$XDG_CONFIG_HOME/nia`` (by default ``~/.config/nia``): the user's own nia files, outside any project.

    For a plugin, where user-global files it reads live (the built-in
    instructions plugin reads ``AGENTS.md`` there); ``nia dev`` and ``nia mcp``
    watch it.
    """
    home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(home) / "nia"


def global_instructions() -> Path:
    """The user-global ``AGENTS.md`` (:func:`user_config_folder`), which ``nia/instructions`` reads first.

    Named here, below the built-in instructions plugin that reads it and the
    agent hooks that deliver it where a host does not load it itself.
    """
    return user_config_folder() / "AGENTS.md"


class ContextPathError(UsageError):
    """A context path that cannot be used; the message's second line names the entry."""

    def __init__(self, problem: str, path: str, origin: str, detail: str = "") -> None:
        self.problem = problem
        self.path = path
        self.origin = origin
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"{problem}: {escape_name(path)}{suffix}\n  Source: {escape_name(origin)}")


class ContextNotFound(ContextPathError):
    """The entry names a file or folder that does not exist."""


class ContextOutsideRepository(ContextPathError):
    """The entry resolves outside the repository."""


def relative(path: str, root: str) -> str:
    """``path`` (canonical, inside ``root``) relative to ``root``, with ``/`` separators (``.`` for the root)."""
    if path == root:
        return "."
    prefix = root.rstrip(os.sep) + os.sep
    rel = path[len(prefix) :] if path.startswith(prefix) else os.path.relpath(path, root)
    return rel.replace(os.sep, "/") if os.sep != "/" else rel


def canonical(root: Path, raw: str, origin: str, *, kind: str = "file", shown: str | None = None) -> str:
    """The canonical absolute path of ``raw`` (relative to ``root``), checked to lie inside it.

    Raises :class:`ContextNotFound` when nothing is there, and another
    :class:`ContextPathError` for every way of escaping the repository.
    """
    shown = raw if shown is None else shown
    if not raw.strip() or not shown.strip():
        raise ContextPathError("Context path is empty", repr(shown), origin)
    if "\x00" in raw:
        raise ContextPathError("Context path contains a NUL byte", repr(raw), origin)
    base = str(root)
    joined = os.path.join(base, raw)
    try:
        real = os.path.realpath(joined, strict=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ContextPathError("Context path is a symlink loop", shown, origin) from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            lenient = os.path.realpath(joined)
            if not inside(lenient, base):
                raise ContextOutsideRepository(
                    "Context path is outside the repository", shown, origin, outside_clause(lenient)
                ) from None
            missing = "Context directory not found" if kind == "directory" else "Context file not found"
            raise ContextNotFound(missing, shown, origin) from None
        raise ContextPathError("Context path cannot be read", shown, origin, exc.strerror or str(exc)) from None
    if not inside(real, base):
        raise ContextOutsideRepository("Context path is outside the repository", shown, origin, outside_clause(real))
    if in_git_dir(real, base):
        raise ContextInGitDir(GIT_DIR_PROBLEM, shown, origin)
    return real


GIT_DIR_PROBLEM = "Context path is inside a .git folder (version-control data, which can hold credentials)"


class ContextInGitDir(ContextPathError):
    """The entry resolves into a ``.git`` folder: git's own data, never project context."""


def check_kind(real: str, kind: str, shown: str, origin: str, *, flag: bool = False) -> os.stat_result:
    """Stat ``real`` and check it is a regular file (``kind="file"``) or a folder."""
    try:
        info = os.stat(real)
    except OSError as exc:
        raise ContextPathError("Context path cannot be read", shown, origin, exc.strerror or str(exc)) from None
    if kind == "file":
        if stat.S_ISDIR(info.st_mode):
            hint = "use --context-dir" if flag else 'use type = "directory"'
            raise ContextPathError("Context path is a directory, not a file", shown, origin, hint)
        if not stat.S_ISREG(info.st_mode):
            raise ContextPathError("Context path is not a regular file", shown, origin)
    elif not stat.S_ISDIR(info.st_mode):
        hint = "use --context-file" if flag else 'use type = "file"'
        raise ContextPathError("Context path is not a directory", shown, origin, hint)
    return info
