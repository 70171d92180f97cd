"""A cache of the entry-point scan, so ``nia --help`` need not read every installed distribution.

Scanning entry points imports ``importlib_metadata`` and opens the metadata
of every distribution on ``sys.path``: the cost grows with what is installed,
not with how many nia plugins there are. Its answer changes only when a
distribution is installed, upgraded or removed, and each of those creates or
deletes a ``*.dist-info`` folder, which changes the modification time of the
``sys.path`` folder holding it. So the scan is cached per interpreter, keyed on
``sys.path`` and each entry's modification time, plus the metadata files of
the distributions that contributed a plugin (for edits made in place).
``NIA_NO_CACHE=1`` turns the cache off.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nia_core.files import read_checked
from nia_core.plugin_host.cachefiles import (
    Pair,
    cache_enabled,
    cache_folder,
    digest,
    ignored,
    prune,
    read_cache,
    shaped,
    write_cache,
)

log = logging.getLogger("nia.host")

CACHE_FORMAT = 2
RACY_NS = 2_000_000_000
"""A folder modified this recently may change again within the same clock tick: its mtime proves nothing yet."""
VALUE_PATTERN = re.compile(r"(?P<module>[\w.]+)\s*(?::\s*(?P<attr>[\w.]+)\s*)?(?:\[[^\]]*\]\s*)?")


@dataclass(frozen=True)
class EntryPointRecord:
    """One entry point as found by the scan: enough to list it and import it."""

    name: str
    value: str
    group: str
    distribution: str | None = None
    version: str | None = None
    metadata: str | None = None
    """The distribution's metadata folder (``*.dist-info``), when known."""
    editable: bool = False
    """An editable install (PEP 610 ``direct_url.json``): its plugin is under development (see
    :func:`nia_core.plugin_host.localimport.compile_from_source`). Kept with the scan, so a start reads no such file."""

    @property
    def module(self) -> str:
        match = VALUE_PATTERN.fullmatch(self.value)
        return match.group("module") if match else self.value

    @property
    def attr(self) -> str | None:
        match = VALUE_PATTERN.fullmatch(self.value)
        return match.group("attr") if match else None

    def load(self) -> Any:
        """Import the module and resolve the attribute path, like ``EntryPoint.load``."""
        if VALUE_PATTERN.fullmatch(self.value) is None:
            raise ValueError(f"entry point value {self.value!r} is not 'module' or 'module:attribute'")
        target: Any = importlib.import_module(self.module)
        for part in (self.attr or "").split("."):
            if part:
                target = getattr(target, part)
        return target


def cache_dir() -> Path:
    """``NIA_CACHE_DIR``, else ``$XDG_CACHE_HOME/nia``, else ``~/.cache/nia``."""
    return Path(cache_folder())


DIRECT_URL_LIMIT = 64 * 1024
"""A PEP 610 ``direct_url.json`` is a few hundred bytes; a larger one is not an editable install's."""
KEEP = 8
"""Cache files kept per interpreter and group (one per ``sys.path`` seen); the oldest beyond go."""


def _prefix(group: str) -> str:
    identity = "\0".join((sys.prefix, sys.executable, group))
    return f"entry-points-{digest(identity)}-"


def cache_name(group: str) -> str:
    """One file per interpreter, group and ``sys.path``.

    Another venv never reads this one's answer, and two processes of one
    interpreter with different ``sys.path`` (``python -c`` and the console
    script, a hook's ``PYTHONPATH`` and a shell) each keep their own file
    instead of evicting each other's at every run.
    """
    return f"{_prefix(group)}{digest(chr(0).join(sys.path))}.json"


def cache_file(group: str) -> Path:
    """Where :func:`cache_name` lies in the cache folder."""
    return cache_dir() / cache_name(group)


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path or os.curdir).st_mtime_ns
    except OSError:
        return None


def path_key(paths: Sequence[str]) -> list[Any]:
    """What must stay equal for the scan to be reused: interpreter, ``sys.path`` and their mtimes."""
    return [CACHE_FORMAT, sys.version, sys.executable, [[p, _mtime(p)] for p in paths]]


def scan_uncached(group: str) -> list[EntryPointRecord]:
    """Ask ``importlib_metadata`` (first distribution on ``sys.path`` wins, as for imports)."""
    import importlib_metadata

    records = []
    for entry_point in importlib_metadata.entry_points(group=group):
        dist = entry_point.dist
        metadata = getattr(dist, "_path", None)
        records.append(
            EntryPointRecord(
                entry_point.name,
                entry_point.value,
                group,
                dist.name if dist is not None else None,
                dist.version if dist is not None else None,
                str(metadata) if metadata is not None else None,
                editable_metadata(str(metadata) if metadata is not None else None),
            )
        )
    return sorted(records, key=_precedence(sys.path))


def editable_metadata(metadata: str | None) -> bool:
    """Whether the distribution with this ``*.dist-info`` folder is an editable install (PEP 610).

    Its plugin is under development: every process (a hook runs as a fresh
    one) must import it from source, or a stale ``.pyc`` (same size, same
    second) would hide an edit.
    """
    if not metadata:
        return False
    try:
        content = read_checked(os.path.join(metadata, "direct_url.json"), None, DIRECT_URL_LIMIT)
        data = None if content.oversize else json.loads(content.data)
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and isinstance(data.get("dir_info"), dict) and bool(data["dir_info"].get("editable"))


def _precedence(paths: Sequence[str]) -> Any:
    """Deterministic order: by ``sys.path`` position (as for imports), then distribution and name."""
    positions: dict[str, int] = {}
    for index, entry in enumerate(paths):
        try:
            positions.setdefault(os.path.abspath(entry or os.curdir), index)
        except OSError:  # a relative entry, and the working directory was deleted: it finds nothing
            continue

    def key(record: EntryPointRecord) -> tuple[int, str, str]:
        folder = os.path.dirname(record.metadata) if record.metadata else ""
        return (positions.get(folder, len(positions)), (record.distribution or "").lower(), record.name)

    return key


def watched_files(records: Sequence[EntryPointRecord]) -> list[list[Any]]:
    """The metadata files of the distributions behind ``records``, with their mtimes (edits made in place)."""
    folders = sorted({r.metadata for r in records if r.metadata})
    names = ("entry_points.txt", "METADATA", "PKG-INFO", "direct_url.json")
    files = [os.path.join(folder, name) for folder in folders for name in names]
    return [[f, _mtime(f)] for f in files]


_TEXT = str
_MAYBE_TEXT = (str, type(None))
SHAPE = {
    "key": list,
    "files": [Pair(str, (int, type(None)))],
    "entry_points": [
        {
            "name": _TEXT,
            "value": _TEXT,
            "group": _TEXT,
            "distribution": _MAYBE_TEXT,
            "version": _MAYBE_TEXT,
            "metadata": _MAYBE_TEXT,
            "editable": bool,
        }
    ],
}
"""What :func:`_write` writes; a file of any other shape is ignored before a value in it is used."""
FIELDS = frozenset(SHAPE["entry_points"][0])  # type: ignore[index]


def _read(name: str, key: list[Any]) -> list[EntryPointRecord] | None:
    data = read_cache(name)
    if data is None:
        return None
    if not shaped(data, SHAPE) or any(set(item) != FIELDS for item in data["entry_points"]):
        ignored(name, "not the shape nia writes")
        return None
    if data["key"] != key:
        return None
    if any("\0" in name for name, _ in data["files"]) or any(_mtime(f) != mtime for f, mtime in data["files"]):
        return None
    return [EntryPointRecord(**item) for item in data["entry_points"]]


def _write(name: str, group: str, key: list[Any], records: Sequence[EntryPointRecord]) -> None:
    data = {"key": key, "files": watched_files(records), "entry_points": [asdict(r) for r in records]}
    if write_cache(name, data):
        prune(_prefix(group), KEEP)


def scan(group: str) -> list[EntryPointRecord]:
    """The entry points of ``group``, from the cache when nothing installed has changed."""
    if not cache_enabled():
        return scan_uncached(group)
    name = cache_name(group)
    key = path_key(sys.path)
    cached = _read(name, key)
    if cached is not None:
        return cached
    log.debug("entry points: scanned, no cache valid for this sys.path (%s)", name)
    records = scan_uncached(group)
    if not _racy(key):
        _write(name, group, key, records)
    return records


def _racy(key: list[Any]) -> bool:
    now = time.time_ns()
    return any(mtime is not None and now - mtime < RACY_NS for _path, mtime in key[-1])


def forget(group: str) -> None:
    """Drop this interpreter's cached scans of ``group``, every ``sys.path``'s (after ``nia plugins install``)."""
    prune(_prefix(group), keep=0)
