"""Reading TOML files with errors that name the file and line.

Two guards come before :mod:`tomllib`, which recurses once per nesting level
and would raise ``RecursionError`` (a traceback, and a lost project context)
on 100,000 nested arrays or 5,000 nested inline tables:

- :func:`check_nesting` scans the brackets outside strings and comments and
  refuses nesting deeper than :data:`MAX_NESTING` as a :class:`ConfigError`
  naming the file and the line; a file with fewer brackets than that in total
  is not scanned at all, so ordinary files cost nothing;
- a ``RecursionError`` that still comes out of the parser becomes the same
  kind of error, so it can never escape.

Files under a project's ``.nia/`` are read through the checked reader
(:func:`nia_core.files.read_checked`): a ``.nia`` folder or a file in it that
is a symlink to outside the project is refused, and at most
:data:`MAX_CONFIG_BYTES` are read.
"""

from __future__ import annotations

import errno
import logging
import os
import re
from pathlib import Path
from typing import Any

from nia_core.errors import UsageError
from nia_core.files import Refused, read_checked
from nia_core.project.paths import shown_path

log = logging.getLogger("nia.project")

MAX_NESTING = 100
"""Arrays and inline tables nested deeper than this make a configuration file invalid."""
MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""A ``.nia/*.toml`` file larger than this is refused unread (4 MiB)."""

_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?""""{0,2}|\'\'\'.*?\'\'\'\'{0,2}|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]',
    re.DOTALL,
)


class ConfigError(UsageError):
    """A configuration file that cannot be used; the message names file, line and key.

    The same facts travel as fields, for callers that point at the place
    (``nia dev`` reports the line) rather than print the text.
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None, key: str | None = None):
        super().__init__(message)
        self.file = file
        """The file as the message names it."""
        self.line = line
        self.key = key
        """The key path at fault (``[plugins].disabled``), when one is."""


def project_root_of(path: Path) -> Path | None:
    """The project root a ``<root>/.nia/<file>`` path belongs to, else ``None``."""
    return path.parent.parent if path.parent.name == ".nia" else None


def read_toml(
    path: Path, *, missing_ok: bool = True, display: str | None = None, root: Path | None = None
) -> dict[str, Any]:
    """Parse ``path`` with :mod:`tomllib`; an absent file is ``{}`` when ``missing_ok``.

    ``display`` names the file in error messages (default: ``path`` itself).
    ``root`` confines the read to a project (default: the project of a
    ``.nia/`` file; other paths are read unconfined, with the size limit).
    """
    name = display or shown_path(path)
    base = root if root is not None else project_root_of(Path(path))
    try:
        data = read_config_bytes(Path(path), base, name)
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise ConfigError(f"{name}: file not found") from None
    return parse_toml(data, name)


_warned: set[str] = set()


def refused_config(display: str, problem: str, where: str | os.PathLike[str] = "") -> None:
    """Say (once per process and file) that a configuration file is ignored because it was refused."""
    message = f"{display} {problem}: ignored (path security: only regular files inside the project are read)"
    key = f"{os.fspath(where)}\0{message}"
    if key not in _warned:
        _warned.add(key)
        log.warning("%s", message)


def read_config_bytes(path: Path, root: Path | None, display: str) -> bytes:
    """The bytes of a configuration file, checked.

    ``FileNotFoundError`` passes through; so does a file refused by path
    security, after a warning: a ``.nia`` folder or ``.nia/*.toml`` file that
    is a symlink pointing outside the project (or a FIFO, a device) counts as
    absent, so the rest of the context still renders.
    """
    try:
        content = read_checked(path, root, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise
    except Refused as exc:
        shown = os.path.relpath(path, root).replace(os.sep, "/") if root is not None else display
        refused_config(shown, exc.problem, path)
        raise FileNotFoundError(errno.ENOENT, exc.problem, display) from None
    except OSError as exc:
        raise ConfigError(f"{display}: cannot read: {exc.strerror or exc}") from None
    if content.oversize:
        raise ConfigError(f"{display}: larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB; refused unread")
    return content.data


def check_nesting(text: str, display: str, limit: int = MAX_NESTING) -> None:
    """Raise a :class:`ConfigError` naming file and line if arrays/inline tables nest deeper than ``limit``."""
    if text.count("[") + text.count("{") <= limit:
        return
    depth = 0
    for match in _TOKENS.finditer(text):
        char = match.group()[0]
        if char in "[{":
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, match.start()) + 1
                raise ConfigError(
                    f"{display}:{line}: arrays or inline tables nested more than {limit} levels deep; "
                    "nia refuses such a file",
                    file=display,
                    line=line,
                )
        elif char in "]}":
            depth = max(0, depth - 1)


BOM = "\ufeff"
"""The byte-order mark some editors (Windows Notepad, Visual Studio) put at the start of a UTF-8 file."""
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def config_text(data: bytes, display: str) -> str:
    """The text of a configuration file: UTF-8, without a leading byte-order mark (which is no TOML).

    :mod:`tomllib` reads a BOM as a bad key at line 1, column 1; the file is
    read as the editor meant it instead. A file saved as UTF-16 is named as such.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if data.startswith(_UTF16_BOMS):
            raise ConfigError(
                f"{display}: saved as UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8"
            ) from None
        raise ConfigError(f"{display}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text[1:] if text.startswith(BOM) else text


def parse_toml(data: bytes, display: str) -> dict[str, Any]:
    """Parse TOML bytes; errors name ``display`` and the line."""
    text = config_text(data, display)
    check_nesting(text, display)
    import tomllib  # only when a file exists: most hook runs read none

    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ConfigError(f"{display}: nested too deeply to read; nia refuses such a file") from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = re.search(r"\(at line (\d+), column (\d+)\)", message)
        where = f"{display}:{match.group(1)}:{match.group(2)}" if match else display
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", message) or "invalid TOML"
        line = int(match.group(1)) if match else None  # tomllib gives no lineno attribute before Python 3.14
        raise ConfigError(f"{where}: TOML syntax error: {reason}", file=display, line=line) from None


__all__ = [
    "BOM",
    "MAX_CONFIG_BYTES",
    "MAX_NESTING",
    "ConfigError",
    "check_nesting",
    "config_text",
    "parse_toml",
    "read_toml",
]
