"""``[plugins.nia-git]``: the plugin's settings, each bad value one line naming its key."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Settings:
    """``[plugins.nia-git]`` in ``.nia/project.toml``."""

    paths: int = 10
    """Changed paths named in the summary; the rest are counted ("and N more")."""
    refresh: float = 2.0
    """Seconds after which an unwatched working tree is looked at again although nothing under ``.git/`` moved.

    A process that observes more than once watches the tree instead (:mod:`nia_plugins.git.watch`);
    0 asks git at every boundary, watched or not.
    """
    untracked: bool = True
    """Whether untracked files are looked for and counted."""
    timeout: float = 3.0
    """Seconds the git calls of one observation may take together before they are killed."""


def _number(config: dict[str, Any], name: str, default: float, *, integer: bool, positive: bool) -> Any:
    value = config.get(name, default)
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < 0 or (positive and value == 0):
        what = "a whole number" if integer else "a number of seconds"
        sign = "greater than 0" if positive else "0 or more"
        raise ValueError(f"[plugins.nia-git] {name} must be {what}, {sign}, not {value!r}")
    return value


def settings_from(config: dict[str, Any]) -> Settings:
    """Validate the plugin's table; a bad value is one line naming the key."""
    unknown = sorted(set(config) - {f.name for f in dataclasses.fields(Settings)})
    if unknown:
        raise ValueError(f"[plugins.nia-git] has no setting {unknown[0]!r} (known: paths, refresh, timeout, untracked)")
    untracked = config.get("untracked", True)
    if not isinstance(untracked, bool):
        raise ValueError(f"[plugins.nia-git] untracked must be true or false, not {untracked!r}")
    return Settings(
        paths=_number(config, "paths", 10, integer=True, positive=False),
        refresh=float(_number(config, "refresh", 2.0, integer=False, positive=False)),
        untracked=untracked,
        timeout=float(_number(config, "timeout", 3.0, integer=False, positive=True)),
    )
