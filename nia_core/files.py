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
    """A cache of file contents keyed by path, re-read when the stat signature changes."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Signature, bytes]] = {}
        self._texts: dict[str, tuple[bytes, str]] = {}
        self._lock = threading.Lock()

    def read_bytes(self, path: str | os.PathLike[str], limit: int | None = None) -> bytes:
        """The file's bytes (at most ``limit``); raises ``OSError`` like :func:`open`."""
        key = os.fspath(path)
        with open(key, "rb") as handle:
            sig = signature(os.fstat(handle.fileno()))
            cached = self._entries.get(key)
            if cached is not None and cached[0] == sig:
                return cached[1]
            data = handle.read() if limit is None else handle.read(limit)
        with self._lock:
            self._entries[key] = (sig, data)
        return data

    def stat_unchanged(self, path: str | os.PathLike[str]) -> bytes | None:
        """The cached bytes if a ``stat`` shows the file unchanged, else ``None``."""
        key = os.fspath(path)
        cached = self._entries.get(key)
        if cached is None:
            return None
        try:
            sig = signature(os.stat(key))
        except OSError:
            return None
        return cached[1] if cached[0] == sig else None

    def read_text(self, path: str | os.PathLike[str]) -> str:
        """Decoded text, cached alongside the bytes so an unchanged file returns the same ``str``."""
        key = os.fspath(path)
        data = self.stat_unchanged(key)
        if data is not None:
            text = self._texts.get(key)
            if text is not None and text[0] is data:
                return text[1]
        data = self.read_bytes(key)
        decoded = data.decode("utf-8", errors="replace")
        self._texts[key] = (data, decoded)
        return decoded

    def forget(self, path: str | os.PathLike[str] | None = None) -> None:
        with self._lock:
            if path is None:
                self._entries.clear()
                self._texts.clear()
            else:
                self._entries.pop(os.fspath(path), None)
                self._texts.pop(os.fspath(path), None)
