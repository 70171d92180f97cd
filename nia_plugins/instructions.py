"""``nia/instructions``: the AGENTS.md files in effect, as one ordered aggregate source.

Order: the user-global file (``$XDG_CONFIG_HOME/nia/AGENTS.md``, by default
``~/.config/nia/AGENTS.md``) first, then every ``AGENTS.md`` from the working
directory up to the project root, nearest first. Symlinks are followed and
files deduplicated by real path. A file over the byte budget is cut at a UTF-8
boundary with a visible marker (and a warning), never silently; only the bytes
the budget needs are read.

Path security: every AGENTS.md below the user-global one is read through the
checked reader confined to the project root, so an AGENTS.md (or a folder on
its way) that is a symlink to a file outside the project is left out with a
warning naming the link and where it points (the home folder, a system
folder, ...), never its content; the rest of the instructions still load. A
FIFO, a device or a binary file is left out the same way. The user-global
file is exempt from the root check (the user put it there) but not from the
others.
"""

from __future__ import annotations

import os
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
    user_config_folder,
    warn_once,
)

NIA_NAMESPACE = "nia"
DEFAULT_MAX_BYTES = 32 * 1024
FILENAME = "AGENTS.md"

_files = StatCache()


def candidates(location: Location, budget: int) -> list[tuple[str, str | None]]:
    """``(path, confining root)`` of each AGENTS.md in effect, in order, deduplicated by real path.

    Each is read through the checked reader, confined to the project root (the
    global file has no confining root): one the reader refuses (a link out of
    the project, into ``.git``, a FIFO, a device) is left out with a warning,
    never read. Reading here costs the loader nothing: the cache hands it the
    very same content while the file is unchanged.
    """
    root = str(location.root)
    paths: list[tuple[Path, str | None]] = [(user_config_folder() / FILENAME, None)]
    folder = location.path
    while True:
        paths.append((folder / FILENAME, root))
        if folder == location.root or folder.parent == folder:
            break
        folder = folder.parent
    seen: set[str] = set()
    found = []
    for path, confine in paths:
        if not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        try:
            _files.read(str(path), root=confine, limit=budget, data=False)
        except Refused as exc:
            if not exc.transient:  # a file swapped while it was opened is the loader's to retry
                warn_once(f"nia/instructions: {escape_name(str(path))} {exc.problem}: left out (not read)")
                continue
        except FileNotFoundError:
            continue  # a dangling symlink inside the project: nothing to read
        except OSError:
            pass  # there but unreadable now: the loader says unavailable, so the model keeps what it had
        if real not in seen:
            seen.add(real)
            found.append((str(path), confine))
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
    return "\n\n".join(f"## {escape_name(item['path'])}\n\n{item['text']}" for item in value)


def render_baseline(value: list[dict[str, Any]]) -> str:
    return "Instructions from AGENTS.md files (global first, then nearest first):\n\n" + _body(value)


def render_update(_previous: list[dict[str, Any]], current: list[dict[str, Any]]) -> str:
    return (
        "The AGENTS.md instructions changed. This complete set replaces all instructions "
        "loaded earlier:\n\n" + _body(current)
    )


def render_removal(_previous: list[dict[str, Any]]) -> str:
    return "The AGENTS.md instructions loaded earlier no longer apply: no AGENTS.md files are in effect now."


def _item(label: str, content: Content, budget: int) -> dict[str, Any] | None:
    """One file's part of the value (``None`` for a binary file, left out)."""
    if looks_binary(content.data):
        warn_once(f"nia/instructions: {escape_name(label)} is a binary file: left out")
        return None
    text, truncated = cut(content.data, budget)
    if truncated:
        shown = escape_name(label)
        warn_once(f"nia/instructions: {shown} is {content.size} bytes, cut to the {budget}-byte budget")
        text += f"\n\n[... truncated by nia: {shown} is {content.size} bytes, over the {budget}-byte budget ...]"
    return {"path": label, "text": text, "truncated": truncated}


@lru_cache(maxsize=64)
def instructions_source(files: tuple[tuple[str, str | None], ...], budget: int) -> ContextSource:
    """One source per set of files, so an unchanged set keeps its identity (and its caches)."""
    last: dict[str, Any] = {"contents": None, "items": None, "value": None}

    def load() -> Any:
        previous, items = last["contents"], last["items"]
        contents: list[Content | None] = []
        for index, (label, root) in enumerate(files):
            try:
                content = _files.read(label, root=root, limit=budget, data=False)
                if content.released and (previous is None or previous[index] is not content):
                    content = _files.read(label, root=root, limit=budget)  # its bytes went, and are needed
                contents.append(content)
            except Refused as exc:
                if exc.transient:
                    warn_once(f"nia/instructions: {escape_name(label)} {exc.problem}: retried later")
                    return UNAVAILABLE
                warn_once(f"nia/instructions: {escape_name(label)} {exc.problem}: left out")
                contents.append(None)
            except OSError as exc:
                warn_once(f"nia/instructions: cannot read {escape_name(label)}: {exc.strerror or exc}")
                return UNAVAILABLE
        if previous is not None and all(a is b for a, b in zip(previous, contents, strict=True)):
            return last["value"]
        made: list[dict[str, Any] | None] = []
        for index, ((label, root), read) in enumerate(zip(files, contents, strict=True)):
            if previous is not None and read is not None and previous[index] is read:
                made.append(items[index])  # unchanged: its text as made last time
            elif read is not None:
                made.append(_item(label, read, budget))
                contents[index] = _files.done_with(label, read, root=root, limit=budget)
            else:
                made.append(None)
        result = tuple(item for item in made if item is not None)
        last["contents"], last["items"], last["value"] = contents, made, result
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
    files = tuple(candidates(location, budget))
    return [instructions_source(files, budget)] if files else []
