"""The user cache folder and its files: where nia keeps what a later run may reuse (stdlib ``os`` only).

A cached start (``nia --help``) reads its file through this module alone, so
it imports no :mod:`pathlib`, :mod:`hashlib` or :mod:`tempfile`.
"""

from __future__ import annotations

import contextlib
import os
import time


def cache_folder() -> str:
    """``NIA_CACHE_DIR``, else ``$XDG_CACHE_HOME/nia``, else ``~/.cache/nia``."""
    explicit = os.environ.get("NIA_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "nia")


def cache_enabled() -> bool:
    """``NIA_NO_CACHE=1`` turns every cache off."""
    return os.environ.get("NIA_NO_CACHE", "") in ("", "0")


def digest(text: str) -> str:
    """A short stable name for ``text`` (64-bit FNV-1a): for file names only, each file holds its full key.

    Not :mod:`hashlib`: loading OpenSSL costs a cached start more than reading the cache.
    """
    value = 0xCBF29CE484222325
    for byte in text.encode("utf-8", "surrogateescape"):
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def write_atomically(path: str | os.PathLike[str], text: str) -> bool:
    """Replace ``path`` with ``text`` whole (a reader sees the old file or the new one); ``False`` if it failed.

    The temporary file is named after this process, not made by :mod:`tempfile`
    (whose import costs more than the write). A read-only home is no reason to
    fail a command: the next run computes again.
    """
    path = os.fspath(path)
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}-{os.getpid()}-{time.monotonic_ns()}.tmp")
    try:
        os.makedirs(folder or os.curdir, exist_ok=True)
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return False
    return True
