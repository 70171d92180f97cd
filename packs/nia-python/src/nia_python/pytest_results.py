"""``nia-pytest``: which tests failed in pytest's last run, from pytest's own cache (nia never runs pytest).

pytest records the tests that failed (and the files that did not collect)
in ``.pytest_cache/v/cache/lastfailed``, a JSON object of node ids, after every
run: a test that passes again leaves it, a test that was not run keeps its
entry. That file is the whole source: the model gets "3 tests failing: ..."
in the baseline and, after each pytest run that changed the set, one update
such as "now failing: 1 (fixed: ...)".

The file is a project file like any other: read through nia's checked reader
with the project root and a size limit, so a ``.pytest_cache`` that is a
symlink out of the project, a FIFO, a huge file or malformed JSON becomes a
sentence saying the results cannot be read, never a hang and never an outside
byte in the prompt.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from nia_core import ContextSource, Location, hookimpl

from nia_python.layout import files, python_folder, read_pyproject, shown, why_not
from nia_python.settings import MIB, check_keys, relative_path, whole
from nia_python.text import MAX_NAME, code, listing, plain, plural, shorten, within

NIA_NAMESPACE = "python"

PLUGIN = "nia-pytest"
KEEP = 1000
"""Failing node ids a value holds (sorted, each at most 300 characters, 256 KiB of JSON in all); more are
counted. Deltas are exact up to this many."""
LASTFAILED = os.path.join("v", "cache", "lastfailed")


@dataclass(frozen=True)
class Settings:
    """``[plugins.nia-pytest]``."""

    cache_dir: str | None = None
    """pytest's cache folder, relative to the project root; default: ``[tool.pytest.ini_options] cache_dir``
    of the Python project's ``pyproject.toml``, else ``.pytest_cache`` beside it."""
    show: int = 10
    """Test ids named in a list; the rest are counted ("and N more")."""
    max_bytes: int = 4 * MIB
    """The largest ``lastfailed`` file read; a larger one is reported, not read."""


def settings_from(config: dict[str, Any]) -> Settings:
    check_keys(PLUGIN, config, ("cache_dir", "show", "max_bytes"))
    return Settings(
        cache_dir=relative_path(PLUGIN, config, "cache_dir", None),
        show=whole(PLUGIN, config, "show", 10),
        max_bytes=whole(PLUGIN, config, "max_bytes", 4 * MIB, least=1),
    )


def cache_folder(folder: str, root: str, settings: Settings) -> str:
    """Where pytest keeps its cache for the project in ``folder``."""
    if settings.cache_dir is not None:
        return os.path.normpath(os.path.join(root, settings.cache_dir))
    table, _ = read_pyproject(folder, root)
    tool = table.get("tool") if table else None
    pytest = tool.get("pytest") if isinstance(tool, dict) else None
    options = pytest.get("ini_options") if isinstance(pytest, dict) else None
    configured = options.get("cache_dir") if isinstance(options, dict) else None
    if isinstance(configured, str) and configured.strip() and "\0" not in configured:
        # Taken as written: pytest would expand ``$VARS`` and ``~``, but a repository that could name an
        # environment variable here would have its value (a token) printed into the prompt.
        return os.path.normpath(os.path.join(folder, configured))
    return os.path.join(folder, ".pytest_cache")


# -- reading ----------------------------------------------------------------------------------


def parse_lastfailed(data: bytes, limit: int, oversize: bool) -> dict[str, Any]:
    """``{"ids": [...], "count": n}`` of what pytest recorded as failing, or ``{"error": clause}``."""
    if oversize:
        return {"error": f"is larger than {limit:,} bytes (the nia-pytest max_bytes setting)"}
    try:
        recorded = json.loads(data)
    except (ValueError, RecursionError):
        return {"error": "is not valid JSON"}
    if not isinstance(recorded, dict):
        return {"error": "is not in pytest's format (a JSON object of test ids)"}
    ids = sorted(name for name, failed in recorded.items() if failed is True)
    return {"ids": ids, "count": len(ids), "files": sorted({name.split("::", 1)[0] for name in ids})}


class Results:
    """The loader: pytest's record, less the entries whose file is gone; the same object while unchanged.

    pytest keeps an entry for a test file that was deleted until the cache is
    cleared; a test whose file no longer exists is not failing, so it is left
    out. While ``lastfailed`` is unchanged and the files it names are where
    they were, a boundary costs one ``stat`` of it and one ``lstat`` per test
    file named, and gets the very same value object.
    """

    def __init__(self, cache: str, root: str, settings: Settings) -> None:
        self.cache, self.root, self.settings = cache, root, settings
        self.rootdir = os.path.dirname(cache) if os.path.basename(cache) == ".pytest_cache" else None
        inside = shown(cache, root) != cache
        # A folder outside the project is never read, and its path (outside names) is not shown either.
        self.label = shown(cache, root) if inside else "cache_dir"
        self.outside = not inside
        self.file = files.loader(
            os.path.join(cache, LASTFAILED),
            root=root,
            limit=settings.max_bytes,
            derive=lambda content: parse_lastfailed(content.data, settings.max_bytes, content.oversize),
            on_error=lambda exc: exc,
        )
        self.last: dict[str, Any] | None = None
        self._seen: tuple[object, tuple[bool, ...]] | None = None

    def observe(self, recorded: Any, present: tuple[bool, ...]) -> dict[str, Any]:
        value: dict[str, Any] = {"cache": self.label}
        if self.outside:
            return {**value, "state": "unreadable", "why": "outside"}
        if isinstance(recorded, FileNotFoundError):
            if not os.path.lexists(self.cache):
                return {**value, "state": "not-run"}
            real = os.path.realpath(self.cache)
            if real != self.root and not real.startswith(self.root + os.sep):
                return {**value, "state": "unreadable", "why": "resolves outside the project"}
            return {**value, "state": "passing" if os.path.isdir(real) else "not-run"}
        if isinstance(recorded, OSError):
            return {**value, "state": "unreadable", "why": why_not(recorded)}
        if "error" in recorded:
            return {**value, "state": "unreadable", "why": recorded["error"]}
        ids: list[str] = recorded["ids"]
        gone = {name for name, there in zip(recorded["files"], present, strict=False) if not there}
        if gone:
            ids = [name for name in ids if name.split("::", 1)[0] not in gone]
        if not ids:
            return {**value, "state": "passing"}
        return {
            **value,
            "state": "failing",
            "count": len(ids),
            "failing": within([shorten(i, MAX_NAME) for i in ids[:KEEP]]),
        }

    def _present(self, recorded: Any) -> tuple[bool, ...]:
        """Whether each test file ``recorded`` names exists (an empty name, a node id of the root, does)."""
        if self.rootdir is None or not isinstance(recorded, dict) or "files" not in recorded:
            return ()
        rootdir = self.rootdir
        return tuple(not name or os.path.lexists(os.path.join(rootdir, name)) for name in recorded["files"])

    def __call__(self) -> dict[str, Any]:
        recorded = self.file() if not self.outside else None
        present = self._present(recorded)
        seen = self._seen
        if self.last is not None and seen is not None and seen[0] is recorded and seen[1] == present:
            return self.last  # the same record, the same files: the same value, without building it again
        self._seen = (recorded, present)
        value = self.observe(recorded, present)
        if value != self.last:
            self.last = value
        return self.last


# -- rendering -------------------------------------------------------------------------------


def label(name: str) -> str:
    """A node id; one without ``::`` is a file or folder that did not collect."""
    return code(name) if "::" in name else f"{code(name)} (did not collect)"


def _prefix(value: dict[str, Any]) -> str:
    return f"Python tests (pytest's last results in {code(value['cache'])})"


def render_baseline(value: dict[str, Any], show: int, *, now: bool = False) -> str:
    """The test status as a complete statement; ``now`` words it as news (a change of kind, mid-conversation)."""
    state = value["state"]
    if state == "not-run":
        when = "any more" if now else "yet"
        return f"Python tests: pytest has recorded no results here {when} (no {code(value['cache'])})."
    if state == "unreadable" and value["why"] == "outside":
        lost = "can no longer" if now else "cannot"
        where = "its cache folder (`cache_dir`) is outside the project"
        return f"Python tests: pytest's last results {lost} be read: {where}."
    if state == "unreadable":
        return (
            f"Python tests: pytest's last results {'can no longer' if now else 'cannot'} be read: "
            f"{code(os.path.join(value['cache'], LASTFAILED))} {plain(value['why'])}."
        )
    if state == "passing":
        return f"{_prefix(value)}: none failing{' now' if now else ''}."
    count = value["count"]
    failing = f"{'now ' if now else ''}{plural(count, 'test')} failing"
    return f"{_prefix(value)}: {failing}: {listing(value['failing'], count, show, label)}."


def _failing(value: dict[str, Any]) -> int:
    return int(value["count"]) if value["state"] == "failing" else 0


def render_update(old: dict[str, Any], new: dict[str, Any], show: int) -> str:
    """What changed, as a statement of what is true now: ``now failing: 1 (fixed: ...)``."""
    known = ("failing", "passing")
    if old["state"] not in known or new["state"] not in known or old["cache"] != new["cache"]:
        return render_baseline(new, show, now=True)
    if any(_failing(v) > len(v.get("failing", ())) for v in (old, new)):  # too many to compare by name
        now = f"{_prefix(new)}: now failing: {_failing(new):,} (was {_failing(old):,})"
        return now + (f": {listing(new['failing'], new['count'], show, label)}." if _failing(new) else ".")
    before = set(old.get("failing", ()))
    after = new.get("failing", [])
    newly = [name for name in after if name not in before]
    fixed = sorted(before.difference(after))
    still = [name for name in after if name in before]
    parts = [
        f"{what}: {listing(names, len(names), show, label)}"
        for what, names in (("newly failing", newly), ("fixed", fixed), ("still failing", still))
        if names
    ]
    if new["state"] == "passing":
        return f"{_prefix(new)}: none failing now ({'; '.join(parts)})."
    return f"{_prefix(new)}: now failing: {new['count']:,} ({'; '.join(parts)})."


@lru_cache(maxsize=64)
def tests_source(cache: str, root: str, settings: Settings) -> ContextSource:
    show = settings.show
    return ContextSource(
        key="python/tests",
        load=Results(cache, root, settings),
        baseline=lambda value: render_baseline(value, show),
        update=lambda old, new: render_update(old, new, show),
        removal=lambda old: "The Python test status given earlier (pytest's last results) no longer applies.",
        timeout=1.0,
        description="Which tests failed in pytest's last run, from pytest's own cache.",
    )


@hookimpl
def nia_context_sources(location: Location, config: dict[str, Any]) -> list[ContextSource]:
    settings = settings_from(config)
    root = str(location.root)
    folder = python_folder(str(location.path), root)
    if folder is None:
        return []
    return [tests_source(cache_folder(folder, root, settings), root, settings)]
