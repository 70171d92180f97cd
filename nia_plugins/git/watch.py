"""Knowing that a working tree did not change without running git: the kernel's inotify, asked without waiting.

An edit touches nothing under ``.git/``, so without this the only way to see
it is ``git status`` again. A long-lived nia process (a resident answering an
agent's hooks, ``nia dev``, ``nia mcp``, a session runner) instead asks Linux
to queue an event for every change in each folder of the tree, and reads that
queue at each observation: an empty queue means no file of the tree was
written, created, removed, renamed or had its mode changed since git last
looked. Nothing polls: the queue fills in the kernel, and reading it is one
``read`` that returns at once.

The kernel queues an event before the call that caused it returns, so an edit
an agent made before its prompt is always in the queue the prompt's
observation reads. What inotify cannot see (a file changed through a hard link
from outside the tree, a network file system, a memory-mapped write, a global
ignore file) is covered by :data:`WATCHED_REFRESH`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import ctypes

WATCHED_FOLDERS = 4096
"""At most this many folders of one tree are watched (one kernel watch each); a larger tree is looked at by time.

The kernel's ``fs.inotify.max_user_watches`` is shared by every program of
the user (editors watch trees too); a few thousand is what a source tree
without its ignored folders has.
"""

LISTED_ENTRIES = 200_000
"""At most this many entries (files and folders) are listed to set one tree's watches; more, and it is looked at
by time: a folder of a million files would otherwise hold the observation for seconds."""

WATCHED_TREES = 4
"""At most this many trees are watched by one process (one kernel queue each, of the user's 128 by default).

A process observing more trees in turn (a resident answering for many
projects) stops watching the one read least recently to watch another.
"""

WATCHED_REFRESH = 60.0
"""Seconds after which a watched tree is looked at by git again although no event came (what inotify misses)."""

READ_BATCHES = 16
"""At most this many reads of the queue (64 KiB each) per observation: a tree written without pause is not read
forever."""

_EVENTS = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800
"""MODIFY, ATTRIB, CLOSE_WRITE, MOVED_FROM, MOVED_TO, CREATE, DELETE, DELETE_SELF, MOVE_SELF."""
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK = 0x01000000, 0x02000000, 0x04000000
_WATCH_MASK = _EVENTS | _ONLYDIR | _DONT_FOLLOW | _EXCL_UNLINK
_FOLDER_EVENTS = 0x400 | 0x800 | 0x2000 | 0x4000 | 0x8000
"""DELETE_SELF, MOVE_SELF, UNMOUNT, Q_OVERFLOW, IGNORED: a watched folder went away, or events were lost."""
_ISDIR = 0x40000000
_IGNORE_FILES = frozenset({".gitignore"})
_NONBLOCK, _CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
_HEADER = struct.Struct("iIII")
"""``struct inotify_event``: wd, mask, cookie, len; then ``len`` bytes of name."""


Seen = Literal["nothing", "files", "folders"]
"""What a watched tree's queue held since it was last read: ``files`` were written, created, removed or renamed
(git must look again); ``folders`` appeared or went, an ignore file changed, or events were lost (the watches
must be set again)."""


def _libc() -> ctypes.CDLL | None:
    """The C library's inotify calls; ``ctypes`` is imported only by a process that watches (never by a hook)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1, libc.inotify_add_watch  # noqa: B018 (present in every libc Linux has had since 2.6.27)
    except (OSError, AttributeError):
        return None
    return libc


_watching: dict[int, weakref.ref[TreeWatcher]] = {}
"""The trees this process watches, the one read least recently first."""
_watching_lock = threading.Lock()


def _forget_in_child() -> None:
    """A process forked here (a plugin's helper) holds none of this process's queues.

    Its copy of a descriptor would keep the kernel's queue and its watches
    (of the user's limited number) alive after this process closed it, and a
    read of it there would take events this process needed. Its locks are new:
    another thread may have held one when it was forked.
    """
    global _watching_lock
    _watching_lock = threading.Lock()
    for ref in list(_watching.values()):
        watcher = ref()
        if watcher is not None:
            watcher._reading = threading.Lock()
            with contextlib.suppress(OSError):
                watcher._closed()
    _watching.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()


class TreeWatcher:
    """The folders of one working tree, each with a kernel watch; :meth:`seen` reads what happened since."""

    refresh = WATCHED_REFRESH

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self.fd = fd
        self._closed = weakref.finalize(self, os.close, fd)
        """Closed when the observer holding it goes (a plugin reloaded, the process ending)."""
        self._quiet: dict[int, frozenset[str]] = {}
        """Names whose events mean nothing, per watch: what nia itself writes in a project's ``.nia/``."""
        self._only: dict[int, frozenset[str]] = {}
        """Names whose events alone count, per watch: the ignore files of the folders above a project."""
        self._reading = threading.Lock()
        """Held while the queue is read or closed: a closed descriptor's number is soon another file's."""
        evicted = []
        with _watching_lock:
            for key, ref in list(_watching.items()):
                if ref() is None:
                    del _watching[key]
            while len(_watching) >= WATCHED_TREES:
                evicted.append(_watching.pop(next(iter(_watching)))())
            _watching[id(self)] = weakref.ref(self)
        for oldest in evicted:
            if oldest is not None:
                oldest.close()

    @classmethod
    def start(
        cls,
        top: str,
        skipped: set[str],
        quiet: dict[str, frozenset[str]],
        deadline: float,
        above: tuple[str, ...] = (),
    ) -> TreeWatcher | str:
        """Watch every folder under ``top`` but ``skipped`` (paths relative to ``top``); or why it cannot.

        A folder named ``.git`` is never entered; a folder holding one (a
        submodule, a nested clone) gives up: a commit there moves its HEAD
        without touching a file of this tree. ``quiet`` maps a folder (relative
        to ``top``) to the names whose events are ignored there. Listing the
        tree past ``deadline`` (monotonic) gives up too. ``above`` are folders
        (absolute) whose ``.gitignore`` alone counts: those between the work
        tree's top and a project that is a folder of it, whose ignore rules
        apply to the project too.
        """
        libc = _libc()
        if libc is None:
            return "the kernel's file events (inotify) are not available here"
        fd = libc.inotify_init1(_NONBLOCK | _CLOEXEC)
        if fd < 0:
            return f"inotify could not be started ({os.strerror(_errno())})"
        watcher = cls(libc, fd)
        why = watcher._watch_above(above) or watcher._watch_tree(top, skipped, quiet, deadline)
        if why is not None:
            watcher.close()
            return why
        return watcher

    def _watch_above(self, folders: tuple[str, ...]) -> str | None:
        for folder in folders:
            wd = self._libc.inotify_add_watch(self.fd, os.fsencode(folder), _WATCH_MASK)
            if wd < 0:
                return f"a folder above the project could not be watched ({os.strerror(_errno())})"
            self._only[wd] = _IGNORE_FILES
        return None

    def _watch_tree(self, top: str, skipped: set[str], quiet: dict[str, frozenset[str]], deadline: float) -> str | None:
        pending = [""]
        watched = listed = 0
        while pending:
            relative = pending.pop()
            folder = os.path.join(top, relative) if relative else top
            watched += 1
            if watched > WATCHED_FOLDERS:
                return f"the working tree has more than {WATCHED_FOLDERS} folders git does not ignore"
            if time.monotonic() > deadline:
                return "listing the working tree's folders took longer than the observation's time budget"
            wd = self._libc.inotify_add_watch(self.fd, os.fsencode(folder), _WATCH_MASK)
            if wd < 0:
                code = _errno()
                if relative and code in (errno.ENOENT, errno.ENOTDIR):
                    continue  # gone since it was listed: its parent's event says so
                return f"a folder of the working tree could not be watched ({os.strerror(code)})"
            if relative in quiet:
                self._quiet[wd] = quiet[relative]
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        listed += 1
                        if listed > LISTED_ENTRIES:
                            return f"the working tree has more than {LISTED_ENTRIES:,} files and folders to list"
                        if entry.name == ".git":
                            if relative:
                                return "the working tree holds another repository (a submodule or a nested clone)"
                            continue
                        if not entry.is_dir(follow_symlinks=False):
                            continue
                        inner = f"{relative}/{entry.name}" if relative else entry.name
                        if inner not in skipped:
                            pending.append(inner)
            except OSError:
                continue  # unreadable, or gone: git cannot list it either
        return None

    @property
    def watching(self) -> bool:
        """False once closed: by its observer, or because another tree took its place."""
        return self._closed.alive

    def seen(self) -> Seen:
        """What happened in the tree since the last call: one non-blocking read per queued batch."""
        with _watching_lock:
            mine = _watching.pop(id(self), None)
            if mine is not None:
                _watching[id(self)] = mine
        with self._reading:
            if not self._closed.alive:
                return "folders"  # no longer watched (another tree took its place): set the watches again
            return self._read()

    def _read(self) -> Seen:
        seen: Seen = "nothing"
        for _batch in range(READ_BATCHES):
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return seen
            except OSError:
                return "folders"
            if not data:
                return "folders"
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
                name = data[offset + _HEADER.size : offset + _HEADER.size + size].split(b"\0", 1)[0]
                offset += _HEADER.size + size
                only = self._only.get(wd)
                if only is not None:  # a folder above the project: only its ignore file, or the folder itself
                    if mask & _FOLDER_EVENTS or os.fsdecode(name) in only:
                        return "folders"
                    continue
                if mask & _FOLDER_EVENTS or (mask & _ISDIR and not mask & 0x4) or name == b".gitignore":
                    if name and os.fsdecode(name) in self._quiet.get(wd, ()):
                        continue
                    return "folders"  # the watches are set again: what is left in the queue goes with it
                if seen == "nothing" and os.fsdecode(name) not in self._quiet.get(wd, ()):
                    seen = "files"
        return "files" if seen == "files" else "folders"  # a tree written faster than it is read: git looks

    def close(self) -> None:
        with _watching_lock:
            if _watching.get(id(self)) is not None and _watching[id(self)]() is self:
                del _watching[id(self)]
        with self._reading:
            self._closed()
