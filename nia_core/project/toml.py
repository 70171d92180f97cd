"""Reading TOML files with errors that name the file and line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from nia_core.errors import UsageError


class ConfigError(UsageError):
    """A configuration file that cannot be used; the message names file, line and key."""


def read_toml(path: Path, *, missing_ok: bool = True, display: str | None = None) -> dict[str, Any]:
    """Parse ``path`` with :mod:`tomllib`; an absent file is ``{}`` when ``missing_ok``.

    ``display`` names the file in error messages (default: ``path`` itself).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise ConfigError(f"{display or path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"{display or path}: cannot read: {exc.strerror or exc}") from None
    return parse_toml(data, display or str(path))


def parse_toml(data: bytes, display: str) -> dict[str, Any]:
    """Parse TOML bytes; errors name ``display`` and the line."""
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{display}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = re.search(r"\(at line (\d+), column (\d+)\)", message)
        where = f"{display}:{match.group(1)}:{match.group(2)}" if match else display
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", message) or "invalid TOML"
        raise ConfigError(f"{where}: TOML syntax error: {reason}") from None
