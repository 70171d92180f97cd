"""Reading TOML files with errors that name the file and line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from nia_core.errors import UsageError


class ConfigError(UsageError):
    """A configuration file that cannot be used; the message names file, line and key."""


def read_toml(path: Path, *, missing_ok: bool = True) -> dict[str, Any]:
    """Parse ``path`` with :mod:`tomllib`; an absent file is ``{}`` when ``missing_ok``."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise ConfigError(f"{path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = re.search(r"\(at line (\d+), column (\d+)\)", message)
        where = f"{path}:{match.group(1)}:{match.group(2)}" if match else str(path)
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", message) or "invalid TOML"
        raise ConfigError(f"{where}: TOML syntax error: {reason}") from None
