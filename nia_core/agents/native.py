"""What a host loads itself, and nia's view of the rest: the user-global ``AGENTS.md`` still reaches the model.

Claude Code loads every ``AGENTS.md`` from the working directory up to the
file-system root, Codex from the git root down to the working directory
(measured with the binaries: tests/real_agents). Neither loads nia's
user-global ``$XDG_CONFIG_HOME/nia/AGENTS.md``, which ``nia/instructions``
renders first. So "don't say twice what the host loads itself" leaves out of
``nia/instructions`` exactly the files inside the project and keeps the rest:
the hook observes the source through a view that keeps the items lying
outside the project, with texts that say the project's files reach the model
separately (the source's own texts speak of the complete set). With no
user-global file the source is left out whole.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nia_core.context import UNAVAILABLE, ContextSource
from nia_core.files import inside
from nia_core.project.paths import escape_name, global_instructions

View = Callable[[ContextSource], ContextSource | None]


def views(keys: tuple[str, ...], root: Path) -> dict[str, View]:
    """For each source key a host delivers itself: how the hook observes it (``None``: left out whole)."""
    return {key: _outside(root) if _global_present() else _none for key in keys}


def _none(source: ContextSource) -> ContextSource | None:
    return None


def _global_present() -> bool:
    try:
        return stat.S_ISREG(os.stat(global_instructions()).st_mode)
    except OSError:
        return False


def _outside(root: Path) -> View:
    """The view of an instructions source that keeps only the files outside the project ``root``."""
    base = os.path.realpath(root)

    def view(source: ContextSource) -> ContextSource | None:
        if source.asynchronous:
            return None  # not an aggregate of files this view understands: the host's copy stands
        load = source.load

        def kept() -> Any:
            value = load()
            if value is UNAVAILABLE or not isinstance(value, (list, tuple)):
                return value
            return tuple(
                item
                for item in value
                if not (isinstance(item, Mapping) and inside(os.path.realpath(str(item.get("path", ""))), base))
            )

        return dataclasses.replace(source, load=kept, baseline=_baseline, update=_update, removal=_removal)

    return view


def _body(value: Any) -> str:
    items = [item for item in value if isinstance(item, Mapping)] if isinstance(value, (list, tuple)) else []
    if not items:
        return "(none could be read)"
    return "\n\n".join(f"## {escape_name(str(item.get('path', '')))}\n\n{item.get('text', '')}" for item in items)


def _baseline(value: Any) -> str:
    return (
        "Instructions from your user-global AGENTS.md (the project's own AGENTS.md files reach you "
        "separately):\n\n" + _body(value)
    )


def _update(_previous: Any, current: Any) -> str:
    return (
        "Your user-global AGENTS.md instructions changed. This replaces the copy of that file given earlier; "
        "the project's own AGENTS.md files are not affected:\n\n" + _body(current)
    )


def _removal(_previous: Any) -> str:
    return (
        "The user-global AGENTS.md instructions given earlier no longer apply; "
        "the project's own AGENTS.md files are not affected."
    )
