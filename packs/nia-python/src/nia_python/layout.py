"""Where the Python project is, and its ``pyproject.toml`` read through nia's checked reader.

Every file is read with the project root and a size limit (``StatCache`` with
``root=`` and ``limit=``): a file whose real path lies outside the project, a
FIFO, a device or a hard-linked file is refused (an ``OSError``) and only
``limit + 1`` bytes are ever read. One cache for the whole pack: an unchanged
file costs one ``stat``.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from typing import Any

from nia_core import StatCache

from nia_python.settings import MIB

files = StatCache()

MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", ".pytest_cache")
"""What makes a folder a Python project's (or the folder pytest runs in)."""
PYPROJECT_LIMIT = 4 * MIB


def python_folder(path: str, root: str) -> str | None:
    """The nearest folder from ``path`` up to ``root`` holding a Python project's marker, else ``None``.

    Stats only (``lexists``): what a marker holds is read later, checked.
    """
    folder = path
    while True:
        if any(os.path.lexists(os.path.join(folder, marker)) for marker in MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if folder == root or parent == folder:
            return None
        folder = parent


def shown(path: str, root: str) -> str:
    """``path`` as the model reads it: relative to the project root when inside it."""
    relative = os.path.relpath(path, root)
    return path if relative == ".." or relative.startswith(".." + os.sep) else relative


def why_not(exc: OSError) -> str:
    """One clause saying why a file was not read, with no outside path in it (nia's refusals name none)."""
    if isinstance(exc, FileNotFoundError):
        return "does not exist"
    return exc.strerror or type(exc).__name__


def read_pyproject(folder: str, root: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(table, None)``, or ``(None, why)`` when it cannot be read or parsed; ``(None, None)`` without one."""
    path = os.path.join(folder, "pyproject.toml")
    if not os.path.lexists(path):
        return None, None
    try:
        content = files.read(path, root=root, limit=PYPROJECT_LIMIT)
    except OSError as exc:
        return None, why_not(exc)
    if content.oversize:
        return None, f"is larger than {PYPROJECT_LIMIT // MIB} MiB"
    return parse_toml(content.data)


@lru_cache(maxsize=4)
def parse_toml(data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """Parsed once per content (an unchanged file hands back the very same bytes)."""
    try:
        return tomllib.loads(data.decode("utf-8")), None
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 (byte {exc.start})"
    except tomllib.TOMLDecodeError as exc:
        return None, f"is not valid TOML ({str(exc).splitlines()[0]})"
    except RecursionError:
        return None, "is nested too deeply to read"
