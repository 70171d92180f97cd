"""The Location: a resolved working directory inside a project.

Pure data; finding the project root on disk is :func:`nia_core.project.root`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Location:
    path: Path
    """The resolved working directory."""
    root: Path
    """The project root: nearest folder upward holding ``.nia/``, else the git root, else ``path``."""
    is_git: bool = False
    has_project_dir: bool = False
    """Whether ``root`` holds a ``.nia/`` folder."""

    @property
    def nia_dir(self) -> Path:
        return self.root / ".nia"

    def __str__(self) -> str:
        return str(self.path)
