"""nia-template-plugin: the project's notes file, kept in the model's system context.

One context source, ``template-plugin/notes``: the text of ``NOTES.md`` at the
project root (``[plugins.nia-template-plugin] file = "..."`` picks another
file). The model gets the notes in its baseline, an update when they change
and a removal when the file goes away.

The file is read with nia's checked reader (:class:`nia_core.StatCache`),
confined to the project root and to :data:`MAX_BYTES`: whatever a repository
holds (``file = "../secret.txt"``, a ``NOTES.md`` that is a symlink to a file
outside the project or into ``.git``, a FIFO, ``/dev/zero``, a huge or binary
file), nothing from outside the project reaches the model, and the plugin
never hangs.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from nia_core import (
    UNAVAILABLE,
    Content,
    ContextSource,
    Location,
    Refused,
    StatCache,
    escape_name,
    hookimpl,
    looks_binary,
    warn_once,
)

__version__ = "0.1.0"

NIA_NAMESPACE = "template-plugin"
"""Every key this plugin contributes starts with ``template-plugin/``; nia enforces it."""

DEFAULT_FILE = "NOTES.md"
MAX_BYTES = 64 * 1024
"""The most of the file the model gets; a longer file is cut, and the cut is said."""

_files = StatCache()


def render_baseline(value: dict[str, str]) -> str:
    return f"Project notes ({value['file']}):\n\n{value['text']}"


def render_update(_previous: dict[str, str], current: dict[str, str]) -> str:
    return f"The project notes ({current['file']}) changed. They now read:\n\n{current['text']}"


def render_removal(previous: dict[str, str]) -> str:
    return f"The project notes ({previous['file']}) given earlier no longer apply: the file is gone."


def _value(label: str, content: Content) -> dict[str, str]:
    """What the model is told about the file: its text (cut at :data:`MAX_BYTES`), or that it is binary."""
    if looks_binary(content.data):
        return {"file": label, "text": "(a binary file: its content is not shown)"}
    text = content.data[:MAX_BYTES].decode("utf-8", errors="replace")
    if content.oversize:
        text += f"\n\n[... cut: the file is {content.size} bytes, over {MAX_BYTES} ...]"
    return {"file": label, "text": text}


@lru_cache(maxsize=64)
def notes_source(path: Path, root: Path, label: str) -> ContextSource:
    """One source per file, so an unchanged file keeps its identity (and nia's caches).

    Its loader is the checked reader's own (:meth:`StatCache.loader`): while the
    file is unchanged, nia answers it with one ``stat`` and no thread.
    """
    return ContextSource(
        key="template-plugin/notes",
        load=_files.loader(
            path,
            root=root,
            limit=MAX_BYTES,
            derive=lambda content: _value(label, content),
            on_error=lambda error: UNAVAILABLE,  # keep what the model was told until it can be read again
        ),
        baseline=render_baseline,
        update=render_update,
        removal=render_removal,
        timeout=1.0,
    )


@hookimpl
def nia_context_sources(location: Location, config: dict[str, Any]) -> list[ContextSource]:
    name = str(config.get("file", DEFAULT_FILE))
    path = location.root / name
    try:  # the checked reader decides whether the file may be read at all (one stat while it is unchanged)
        _files.read(path, root=location.root, limit=MAX_BYTES, data=False)
    except Refused as exc:
        if not exc.transient:  # outside the project, inside .git, not a regular file: never read, said once
            warn_once(f"template-plugin: {escape_name(str(path))} {exc.problem}: left out")
            return []
    except FileNotFoundError:
        return []
    except OSError:
        pass  # there but unreadable now: the loader says unavailable, so the model keeps what it had
    return [notes_source(path, location.root, escape_name(name))]
