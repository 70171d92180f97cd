"""Finding the project a working directory belongs to."""

from __future__ import annotations

import os
from pathlib import Path

from nia_core.context.location import Location
from nia_core.errors import UsageError

GONE = "the working directory no longer exists (it was deleted or moved); run nia from an existing folder"


def working_directory() -> Path:
    """The current directory; :class:`UsageError` saying so when it was deleted (or moved) under nia."""
    try:
        return Path.cwd()
    except OSError:
        raise UsageError(GONE) from None


def locate(path: str | os.PathLike[str] | None = None) -> Location:
    """The Location for ``path`` (default: the current directory).

    The project root is the nearest folder upward holding ``.nia/``, else the
    nearest holding ``.git``, else ``path`` itself.
    """
    start = Path(path) if path is not None else working_directory()
    try:
        resolved = start.resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError, RuntimeError):
        raise UsageError(f"location not found: {start}") from None
    except PermissionError:
        raise UsageError(f"location cannot be reached: {start} (permission denied on a folder on the way)") from None
    except OSError as exc:
        raise UsageError(f"location cannot be reached: {start} ({exc.strerror or exc})") from None
    if not resolved.is_dir():
        raise UsageError(f"location is not a directory: {start}")
    git_root: Path | None = None
    for folder in (resolved, *resolved.parents):
        if (folder / ".nia").is_dir():
            is_git = git_root is not None or any((p / ".git").exists() for p in (folder, *folder.parents))
            return Location(resolved, folder, is_git, True)
        if git_root is None and (folder / ".git").exists():
            git_root = folder
    if git_root is not None:
        return Location(resolved, git_root, True, False)
    return Location(resolved, resolved, False, False)
