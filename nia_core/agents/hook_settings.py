"""The project's ``[hooks]`` settings in ``.nia/project.toml``.

```toml
[hooks]
deliver_native_files = false   # default: leave the files a host loads itself (AGENTS.md...) to the host
resident = false               # default true: answer this project's hooks in-process only

[hooks.codex]                  # per host, overrides [hooks]
deliver_native_files = true
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nia_core.project.config import project_tables
from nia_core.project.toml import ConfigError


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def deliver_native_files(root: Path, host: str) -> tuple[bool, str]:
    """Whether nia delivers the files ``host`` loads itself, and a warning when the setting is malformed."""
    path = root / ".nia" / "project.toml"
    try:  # the one checked, cached read: no symlink out, no FIFO, bounded size and nesting (no hang)
        data = project_tables(root)
    except ConfigError:  # the plugin host says what is wrong with the file, once, like every command
        return False, ""
    hooks = _table(data.get("hooks"))
    value = _table(hooks.get(host)).get("deliver_native_files", hooks.get("deliver_native_files", False))
    if not isinstance(value, bool):
        return False, f"{path}: [hooks] deliver_native_files must be true or false, not {value!r}"
    return value, ""


def resident_enabled(root: Path) -> tuple[bool, str]:
    """Whether a resident process may answer this project's hooks (``[hooks] resident``, default true).

    A file that does not read leaves them on: the resident reports the file
    exactly as an in-process hook would.
    """
    path = root / ".nia" / "project.toml"
    try:
        data = project_tables(root)
    except ConfigError:
        return True, ""
    value = _table(data.get("hooks")).get("resident", True)
    if not isinstance(value, bool):
        return True, f"{path}: [hooks] resident must be true or false, not {value!r}"
    return value, ""
