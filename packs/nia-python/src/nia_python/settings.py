"""Each plugin's table in ``.nia/project.toml``, checked: a bad value is one line naming the key."""

from __future__ import annotations

from typing import Any

MIB = 1024 * 1024


def check_keys(plugin: str, config: dict[str, Any], known: tuple[str, ...]) -> None:
    unknown = sorted(set(config) - set(known))
    if unknown:
        known_ones = f"known: {', '.join(sorted(known))}" if known else "it has none"
        raise ValueError(f"[plugins.{plugin}] has no setting {unknown[0]!r} ({known_ones})")


def whole(plugin: str, config: dict[str, Any], name: str, default: int, *, least: int = 0) -> int:
    """A whole number of at least ``least``."""
    value = config.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"[plugins.{plugin}] {name} must be a whole number, {least} or more, not {value!r}")
    return value


def relative_path(plugin: str, config: dict[str, Any], name: str, default: str | None) -> str | None:
    """A path relative to the project root (the checked reader refuses one that leads outside)."""
    value = config.get(name, default)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise ValueError(f"[plugins.{plugin}] {name} must be a path relative to the project root, not {value!r}")
    return value
