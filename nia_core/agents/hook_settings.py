"""The project's ``[hooks]`` settings in ``.nia/project.toml``.

```toml
[hooks]
deliver_native_files = false   # default: leave the files a host loads itself (AGENTS.md...) to the host

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
