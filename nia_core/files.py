"""Reading files only when a ``stat`` says they changed.

File-backed loaders run at every boundary; most of the time nothing changed,
so a ``stat`` (about 2 µs) replaces a read, and the loader hands back the very
same object as last time, which the engine compares by identity for free.
"""

from __future__ import annotations

import os
import threading

Signature = tuple[int, int, int, int]


def signature(stat: os.stat_result) -> Signature:
    """What must stay equal for a file's bytes to be taken as unchanged."""
    return (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)


class StatCache:
    """A cache of file contents keyed by path, re-read when the stat signature changes.

    An unchanged file costs one ``stat`` and hands back the very same object
    as last time; a changed one is opened, and its signature taken from the
    open file (``fstat``), so what is cached matches the bytes read.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Signature, bytes]] = {}
        self._texts: dict[str, tuple[Signature, str]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _unchanged(key: str, cached: tuple[Signature, object] | None) -> bool:
        if cached is None:
            return False
        stat = os.stat(key)  # raises OSError like open() would
        return (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino) == cached[0]

    def _read(self, key: str) -> tuple[Signature, bytes]:
        with open(key, "rb") as handle:
            sig = signature(os.fstat(handle.fileno()))
            return sig, handle.read()

    def read_bytes(self, path: str | os.PathLike[str]) -> bytes:
        """The file's bytes; raises ``OSError`` like :func:`open`."""
        key = os.fspath(path)
        cached = self._entries.get(key)
        if cached is not None and self._unchanged(key, cached):
            return cached[1]
        sig, data = self._read(key)
        with self._lock:
            self._entries[key] = (sig, data)
        return data

    def read_text(self, path: str | os.PathLike[str]) -> str:
        """Decoded text (UTF-8, undecodable bytes replaced); the same ``str`` while the file is unchanged."""
        key = os.fspath(path)
        cached = self._texts.get(key)
        if cached is not None and self._unchanged(key, cached):
            return cached[1]
        sig, data = self._read(key)
        text = data.decode("utf-8", errors="replace")
        with self._lock:
            self._texts[key] = (sig, text)
        return text

    def forget(self, path: str | os.PathLike[str] | None = None) -> None:
        with self._lock:
            if path is None:
                self._entries.clear()
                self._texts.clear()
            else:
                self._entries.pop(os.fspath(path), None)
                self._texts.pop(os.fspath(path), None)
