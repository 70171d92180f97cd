"""nia-template-plugin: the project's notes file, kept in the model's system context.

One context source, ``template-plugin/notes``: the text of ``NOTES.md`` at the
project root (``[plugins.nia-template-plugin] file = "..."`` picks another
file). The model gets the notes in its baseline, an update when they change
and a removal when the file goes away.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from nia_core import UNAVAILABLE, ContextSource, Location, StatCache, hookimpl

__version__ = "0.1.0"

NIA_NAMESPACE = "template-plugin"
"""Every key this plugin contributes starts with ``template-plugin/``; nia enforces it."""

DEFAULT_FILE = "NOTES.md"

_files = StatCache()


def render_baseline(value: dict[str, str]) -> str:
    return f"Project notes ({value['file']}):\n\n{value['text']}"


def render_update(_previous: dict[str, str], current: dict[str, str]) -> str:
    return f"The project notes ({current['file']}) changed. They now read:\n\n{current['text']}"


def render_removal(previous: dict[str, str]) -> str:
    return f"The project notes ({previous['file']}) given earlier no longer apply: the file is gone."


@lru_cache(maxsize=64)
def notes_source(path: Path, label: str) -> ContextSource:
    """One source per file, so an unchanged file keeps its identity (and nia's caches)."""

    def load() -> Any:
        try:
            return {"file": label, "text": _files.read_text(path)}
        except OSError:
            return UNAVAILABLE  # keep what the model was told until the file can be read again

    return ContextSource(
        key="template-plugin/notes",
        load=load,
        baseline=render_baseline,
        update=render_update,
        removal=render_removal,
        timeout=1.0,
    )


@hookimpl
def nia_context_sources(location: Location, config: dict[str, Any]) -> list[ContextSource]:
    label = str(config.get("file", DEFAULT_FILE))
    path = location.root / label
    return [notes_source(path, label)] if path.is_file() else []
