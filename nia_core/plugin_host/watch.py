"""Watching plugin sources for changes, tuned so a save is seen in tens of milliseconds.

``watchfiles`` groups file events until none has arrived for ``step`` ms (or
``debounce`` ms have passed). Its defaults (50 ms / 1.6 s) are made for
restarting servers; a developer waiting to see a save wants the shortest step
that still groups one editor save (temp file, rename) into one batch. A burst
that outlasts one step (a ``git checkout`` touching hundreds of files) is
caught by a second, longer settle: a large batch waits until the folder has
been quiet for ``settle`` ms before it is handed on.

The watcher runs on its own thread and never dies: an error in ``watchfiles``
restarts it, and the reload that follows a restart checks every plugin, so no
change is lost in between.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import watchfiles

log = logging.getLogger("nia.watch")

IGNORED_DIRS = frozenset(
    {
        "__pycache__",
        ".git",
        ".hg",
        ".svn",
        ".tox",
        ".nox",
        ".venv",
        "venv",
        ".idea",
        ".vscode",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".cache",
        "build",
        "dist",
    }
)
"""Folder names whose contents never change a plugin."""

IGNORED_NAMES = re.compile(
    r"""
    \.py[cod]$ | \.egg-info$           # bytecode, build metadata
    | \.sw[a-p]x?$ | ^4913$            # vim swap files and its write probe
    | ~$ | ^\.\# | ^\#.*\#$            # backups, emacs lock and autosave files
    | \.(bak|orig|tmp|temp|kate-swp|crswap)$ | \.tmp[.\w-]*$
    | ___jb_(tmp|old)___$              # JetBrains safe-write
    | ^\.goutputstream- | ^\.~lock\. | ^\.DS_Store$ | ^flycheck_
    | ^sed[A-Za-z0-9]{6}$              # GNU sed -i's scratch copy
    | ^tmp[a-z0-9_]{8}(\.\w+)?$          # Python tempfile in the same folder (atomic writers)
    | ^\.\#.* | ^\.[^/]*\.kate-swp$ | ^\.~[^/]*$   # more editors' locks and scratch copies
    """,
    re.VERBOSE,
)
"""File names of editor swap, backup and temporary files, caches and bytecode."""


def ignored(relative: Sequence[str]) -> bool:
    """Whether a change can be ignored, given the path's parts below the watched folder.

    Only the parts below the folder count, so a project that happens to live
    under ``~/.cache`` or ``build/`` is still watched.
    """
    return any(_ignored_entry(part) for part in relative)


def ignored_name(name: str) -> bool:
    """Whether a single file or folder name is ignored (for walking a plugin's folder)."""
    return _ignored_entry(name)


def _ignored_entry(name: str) -> bool:
    return name in IGNORED_DIRS or IGNORED_NAMES.search(name) is not None


@dataclass(frozen=True)
class WatchSettings:
    step_ms: int = 15
    """Quiet time that ends a batch: short, because it is most of the delay a developer sees."""
    debounce_ms: int = 1_000
    """Longest time one batch may keep growing while events keep arriving."""
    settle_ms: int = 250
    """A batch of at least ``burst`` paths waits this long for more before it is handed on."""
    burst: int = 4
    poll: bool | None = None
    """Force polling (network mounts, WSL); ``None`` follows ``WATCHFILES_FORCE_POLLING``."""
    poll_delay_ms: int = 100
    recheck_ms: int = 250
    """When polling, ask for a full check once things have been quiet this long: ``watchfiles``' poller compares
    modification times in whole seconds, so a second save within the same second
    would go unseen. The check compares file contents and costs a ``stat`` per file."""
    tick_ms: int = 50
    """How often an idle watcher wakes up to notice new folders to watch and a stop request."""


Batch = frozenset[Path] | None
"""Changed paths; ``None`` asks for a full check (after the watcher restarted)."""


class ChangeWatcher:
    """Watches the folders ``roots()`` returns and queues batches of changed paths ``relevant()`` accepts.

    ``roots`` is called again on every idle tick: when the set of existing
    folders changes (``.nia/plugins`` was created, say), the watcher restarts
    on the new set and queues a full check.
    """

    def __init__(
        self,
        roots: Callable[[], Sequence[Path]],
        relevant: Callable[[Path], bool],
        settings: WatchSettings | None = None,
    ) -> None:
        self.roots = roots
        self.relevant = relevant
        self.settings = settings or WatchSettings()
        self.ready = threading.Event()
        """Set once file events are being recorded (and again after each restart)."""
        self.watching: tuple[Path, ...] = ()
        self._stop = threading.Event()
        self._queue: queue.Queue[Batch] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="nia-watch", daemon=True)

    @property
    def polling(self) -> bool:
        poll = self.settings.poll
        if poll is not None:
            return poll
        value = os.environ.get("WATCHFILES_FORCE_POLLING", "")
        return bool(value) and value.lower() not in {"false", "disable", "disabled"}

    def start(self) -> ChangeWatcher:
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def __enter__(self) -> ChangeWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _filter(self, _change: watchfiles.Change, path: str) -> bool:
        return self.relevant(Path(path))

    def _run(self) -> None:
        previous: tuple[Path, ...] | None = None
        failed = False
        while not self._stop.is_set():
            roots = _existing(self.roots())
            if failed or (previous is not None and roots != previous):
                # A watched folder appeared, went away (deleted, renamed) or the watcher restarted:
                # what happened meanwhile was never seen, so check everything.
                self._queue.put(None)
            previous, failed = roots, False
            if not roots:
                self.watching = ()
                self.ready.set()
                self._stop.wait(self.settings.tick_ms / 1000)
                continue
            self.watching = roots
            try:
                self._watch(roots)
            except Exception as exc:  # noqa: BLE001 - the watcher must survive anything
                log.warning("file watcher failed (%s: %s); restarting", type(exc).__name__, exc)
                self._stop.wait(0.1)
                failed = True

    def _watch(self, roots: tuple[Path, ...]) -> None:
        settings = self.settings
        polling = self.polling
        last_check = time.monotonic()
        for changes in watchfiles.watch(
            *roots,
            watch_filter=self._filter,
            debounce=settings.debounce_ms,
            step=settings.step_ms,
            stop_event=self._stop,
            rust_timeout=settings.tick_ms,
            yield_on_timeout=True,
            raise_interrupt=False,
            force_polling=polling,
            poll_delay_ms=settings.poll_delay_ms,
            ignore_permission_denied=True,
        ):
            if changes:
                self._queue.put(frozenset(Path(path) for _, path in changes))
                last_check = time.monotonic()  # a burst in progress: check again once it is quiet
                continue
            self.ready.set()
            if _existing(self.roots()) != roots:
                # A watched folder came or went (a rename of .nia): what happens until the watch restarts is
                # never seen, and the folder may be back by then, so check everything now.
                self._queue.put(None)
                return
            if polling and settings.recheck_ms and time.monotonic() - last_check >= settings.recheck_ms / 1000:
                last_check = time.monotonic()
                self._queue.put(None)

    def next_batch(self, timeout: float | None = None) -> Batch:
        """The next batch of changed paths (merged with any already waiting); empty on timeout.

        A large batch (a checkout, a formatter run) waits until no more
        changes arrive for ``settle_ms`` so that it becomes one reload.
        """
        try:
            first = self._queue.get(timeout=timeout)
        except queue.Empty:
            return frozenset()
        merged: set[Path] | None = None if first is None else set(first)
        settle = self.settings.settle_ms / 1000
        deadline = time.monotonic() + max(settle * 10, 2.0)
        while True:
            large = merged is not None and len(merged) >= self.settings.burst
            wait = min(settle, deadline - time.monotonic()) if large and settle > 0 else 0
            try:
                more = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if more is None or merged is None:
                merged = None
            else:
                merged.update(more)
        return None if merged is None else frozenset(merged)


def _existing(paths: Sequence[Path]) -> tuple[Path, ...]:
    seen: list[Path] = []
    for path in paths:
        if path.exists() and path not in seen:
            seen.append(path)
    return tuple(seen)
