"""Following a project as it changes: the one loop behind ``nia dev`` and ``nia mcp``.

It takes batches of changed paths from a :class:`ChangeWatcher`, hands each to
:meth:`DevSession.reload` (one reload at a time) and the result to a callback.
Both ask for a reconcile at every batch (an edited AGENTS.md changes no plugin,
yet changes a source), re-observe the sources that are not files every so
often, and check the files the sources read through a
:class:`~nia_core.files.StatCache` wherever they are (:class:`FilesRead`): a
plugin's ``NOTES.md`` updates under ``nia dev`` as soon as it is saved.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from nia_core.files import Signature, files_read, signature
from nia_core.plugin_host.reload import DevSession, ReloadResult
from nia_core.plugin_host.watch import Batch, ChangeWatcher, ignored
from nia_core.project.paths import user_config_folder

POLL_SECONDS = 0.5
"""Longest wait for a batch before checking the stop request and the re-observation clock."""


def follow(
    session: DevSession,
    watcher: ChangeWatcher,
    on_result: Callable[[ReloadResult], None],
    on_crash: Callable[[Exception], None],
    *,
    on_watching: Callable[[ChangeWatcher], None] | None = None,
    on_notice: Callable[[str], None] | None = None,
    reobserve: bool = False,
    interval: float | None = None,
    stop: threading.Event | None = None,
    debug: bool = False,
) -> None:
    """Reload after each batch of changes until ``stop`` is set (or the caller is interrupted).

    ``reobserve`` reconciles at every batch even when no plugin changed;
    ``interval`` (seconds) also reconciles when nothing was saved for that long.
    ``on_notice`` hears when the folder followed goes away (deleted, renamed)
    and comes back (its plugins are unloaded and loaded again by the reloads),
    and what the session says once (:meth:`DevSession.take_notices`).
    Closes the watcher and the session on the way out.
    """
    stop = stop or threading.Event()

    def check(batch: Batch) -> None:
        try:
            result = session.reload(batch, reobserve=reobserve)
        except Exception as exc:  # the watcher never dies on a plugin's error
            if debug:
                raise
            on_crash(exc)
            return
        if result is not None:
            on_result(result)
        for notice in session.take_notices():
            if on_notice is not None:
                on_notice(notice)

    try:
        watcher.start()
        watcher.ready.wait(10)
        # Anything saved between loading and the watcher starting is caught by this full check.
        check(None)
        if on_watching is not None:
            on_watching(watcher)
        due = time.monotonic() + interval if interval else None
        folder = FolderPresence(session.location.path)
        read = FilesRead()
        while not stop.is_set():
            wait = POLL_SECONDS if due is None else min(POLL_SECONDS, max(0.0, due - time.monotonic()))
            batch = watcher.next_batch(timeout=wait)
            edited = read.changed()
            if edited and batch is not None:
                batch = batch | edited
            news = folder.check()
            if news is not None and on_notice is not None:
                on_notice(news)
            if batch is None or batch:
                check(batch)
            elif due is not None and time.monotonic() >= due:
                check(frozenset())
            else:
                continue
            if interval:
                due = time.monotonic() + interval
    finally:
        watcher.stop()
        session.close()


class FilesRead:
    """The files the sources read through a ``StatCache``, checked with one ``stat`` each per tick.

    Where the watcher already sees a file, this only repeats what it says (the
    reload then finds nothing new); where it does not (a plain folder, a file
    outside the project), this is how an edit is seen at all. A file is
    reported once per new state, even when no source reads it again.
    """

    def __init__(self) -> None:
        self._said: dict[str, Signature | None] = {}

    def changed(self) -> frozenset[Path]:
        edited = []
        for path, held in files_read().items():
            try:
                now: Signature | None = signature(os.stat(path))
            except OSError:
                now = None  # gone: the source's loader says what that means
            if now != held and self._said.get(path, held) != now:
                edited.append(Path(path))
            self._said[path] = now
        return frozenset(edited)


def live_roots(session: DevSession) -> list[Path]:
    """Besides the plugins' own folders, what a live follower watches: the project, and the user's nia folder.

    The project root only when it is a project (``.nia`` or ``.git``), never a
    home folder or ``/``: started in a plain folder, the interval and
    :class:`FilesRead` find what changed instead of watching a tree of unknown size.
    """
    root = session.location.root
    extra = [user_config_folder()]
    if root != Path(root.anchor) and root != Path.home() and ((root / ".nia").is_dir() or (root / ".git").exists()):
        extra.insert(0, root)
    return extra


class FolderPresence:
    """Notices the folder being followed going away (deleted, renamed) and coming back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.present = True

    def check(self) -> str | None:
        """A one-line notice when presence changed since the last check, else ``None``."""
        present = self.path.is_dir()
        if present == self.present:
            return None
        self.present = present
        if present:
            return f"{self.path} exists again; reloading"
        return f"{self.path} no longer exists; its plugins are unloaded, watching for it to come back"


def project_files(session: DevSession, also: Sequence[Path] = ()) -> Callable[[Path], bool]:
    """Whether a path can change a source: plugin code and config, or a file under the project root
    (or under one of the folders ``also`` names, such as the user's nia config folder).

    The project's own files (AGENTS.md, READMEs, the task files a plugin
    reads) are watched too; editor scratch files, caches and VCS folders are not.
    """
    roots = (session.location.root, *also)

    def relevant(path: Path) -> bool:
        if session.relevant(path):
            return True
        for root in roots:
            try:
                parts = path.relative_to(root).parts
            except ValueError:
                continue
            return not ignored(parts)
        return False

    return relevant
