"""``nia/instructions``: the AGENTS.md files in effect, as one ordered aggregate source.

Order: the user-global file (``$XDG_CONFIG_HOME/nia/AGENTS.md``, by default
``~/.config/nia/AGENTS.md``) first, then every ``AGENTS.md`` from the working
directory up to the project root, nearest first. Symlinks are followed and
files deduplicated by real path. A file over the byte budget is cut at a UTF-8
boundary with a visible marker (and a warning), never silently.
"""

from __future__ import annotations

import logging
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from nia_core import UNAVAILABLE, ContextSource, Location, StatCache, hookimpl

NIA_NAMESPACE = "nia"
DEFAULT_MAX_BYTES = 32 * 1024
FILENAME = "AGENTS.md"

log = logging.getLogger("nia.plugins.instructions")
_files = StatCache()


def global_instructions() -> Path:
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config_home) / "nia" / FILENAME


def candidates(location: Location) -> list[tuple[str, str]]:
    """``(label, real path)`` of each AGENTS.md in effect, in order, deduplicated by real path."""
    paths = [global_instructions()]
    folder = location.path
    while True:
        paths.append(folder / FILENAME)
        if folder == location.root or folder.parent == folder:
            break
        folder = folder.parent
    seen: set[str] = set()
    found = []
    for path in paths:
        if not os.path.exists(path):
            continue
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            found.append((str(path), real))
    return found


def cut(data: bytes, budget: int) -> tuple[str, bool]:
    """Decode ``data``, cut at a UTF-8 boundary within ``budget`` bytes when over it."""
    if len(data) <= budget:
        return data.decode("utf-8", errors="replace"), False
    end = budget
    while end > 0 and (data[end] & 0xC0) == 0x80:
        end -= 1
    return data[:end].decode("utf-8", errors="replace"), True


def _body(value: list[dict[str, Any]]) -> str:
    return "\n\n".join(f"## {item['path']}\n\n{item['text']}" for item in value)


def render_baseline(value: list[dict[str, Any]]) -> str:
    return "Instructions from AGENTS.md files (global first, then nearest first):\n\n" + _body(value)


def render_update(_previous: list[dict[str, Any]], current: list[dict[str, Any]]) -> str:
    return (
        "The AGENTS.md instructions changed. This complete set replaces all instructions "
        "loaded earlier:\n\n" + _body(current)
    )


def render_removal(_previous: list[dict[str, Any]]) -> str:
    return "The AGENTS.md instructions loaded earlier no longer apply: no AGENTS.md files are in effect now."


@lru_cache(maxsize=64)
def instructions_source(files: tuple[tuple[str, str], ...], budget: int) -> ContextSource:
    """One source per set of files, so an unchanged set keeps its identity (and its caches)."""
    last: dict[str, Any] = {"data": None, "value": None}

    def load() -> Any:
        contents = []
        for label, real in files:
            try:
                contents.append(_files.read_bytes(real))
            except OSError as exc:
                log.warning("nia/instructions: cannot read %s: %s", label, exc.strerror or exc)
                return UNAVAILABLE
        if last["data"] is not None and all(a is b for a, b in zip(last["data"], contents, strict=True)):
            return last["value"]
        value = []
        for (label, _real), data in zip(files, contents, strict=True):
            text, truncated = cut(data, budget)
            if truncated:
                log.warning("nia/instructions: %s is %d bytes, cut to the %d-byte budget", label, len(data), budget)
                text += f"\n\n[... truncated by nia: {label} is {len(data)} bytes, over the {budget}-byte budget ...]"
            value.append({"path": label, "text": text, "truncated": truncated})
        result = tuple(value)
        last["data"], last["value"] = contents, result
        return result

    return ContextSource(
        key="nia/instructions",
        load=load,
        baseline=render_baseline,
        update=render_update,
        removal=render_removal,
    )


@hookimpl
def nia_context_sources(location: Location, config: dict[str, Any]) -> list[ContextSource]:
    budget = config.get("max_bytes", DEFAULT_MAX_BYTES)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"[plugins.nia-instructions] max_bytes must be a positive number of bytes, not {budget!r}")
    files = tuple(candidates(location))
    return [instructions_source(files, budget)] if files else []
