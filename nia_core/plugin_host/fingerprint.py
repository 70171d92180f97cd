"""Whether a plugin's files changed, decided by their bytes, cheaply.

Timestamps alone cannot tell two saves of the same size within one clock tick
apart (one second on many network mounts, and in ``watchfiles``' polling), so
a plugin's fingerprint is a hash of its files' contents. Rehashing everything
on every check would be wasteful, so each file's digest is cached under its
``stat`` signature, and trusted only once the file is older than the coarsest
timestamp tick (git's "racy clean" rule): a file modified within that window
of being hashed is hashed again, because a later save could keep its
signature unchanged.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

from nia_core.files import Signature, read_checked, signature
from nia_core.plugin_host.watch import ignored_name

MISSING = "missing"


WATCHED_ENTRIES = 2_000
"""Files and folders compared at every check in one place: a resident's project (all its plugin folders and
editable plugin sources, at every hook), and each plugin folder and plugin ``nia dev`` and ``nia mcp`` follow.

A fresh process imports the plugins it finds and never walks the rest; a follower must compare every file
that could change what they import, and walking costs about 15 ms per 1,000 entries. Past this, what a
repository holds costs no more than this many entries: the resident answers that project in-process, and
``nia dev`` follows that folder through file events alone."""


class TooMany(Exception):
    """A folder held more files and folders than the caller's budget: its fingerprint would cost too much."""


DIGEST_LIMIT = 16 * 1024 * 1024
"""The bytes of one file hashed; a larger file in a plugin folder is data, told apart by its stat signature."""
RACY_NS = 2_000_000_000
"""The coarsest timestamp tick we guard against (FAT and some network file systems: 2 s)."""


class DigestCache:
    """File digests keyed by path, reused while the ``stat`` signature holds and the file is not racy."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Signature, int, bytes]] = {}
        self._lock = threading.Lock()

    def digest(self, path: str) -> bytes | None:
        """The file's content digest, or ``None`` if it cannot be read."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        sig = signature(stat)
        cached = self._entries.get(path)
        if cached is not None and cached[0] == sig and stat.st_mtime_ns + RACY_NS < cached[1]:
            return cached[2]
        hashed_at = time.time_ns()
        try:  # the checked reader: a FIFO, socket or device in a plugin folder is never opened for reading
            content = read_checked(path, None, DIGEST_LIMIT)
        except OSError:
            return None
        digest = hashlib.blake2b(content.data, digest_size=32).digest()
        if content.oversize:  # past the limit, the size and stat signature stand for the rest
            digest = hashlib.blake2b(digest + repr(content.sig).encode(), digest_size=32).digest()
        with self._lock:
            self._entries[path] = (sig, hashed_at, digest)
        return digest

    def fingerprint(self, root: Path, budget: list[int] | None = None) -> str:
        """One hash over every file under ``root`` (or ``root`` itself) that may change a plugin.

        ``budget``: ``[entries]`` the walk may still visit (files and folders), shared by the calls that
        pass the same list; past it :class:`TooMany` is raised, so what a repository holds bounds no walk.
        """
        total = hashlib.blake2b(digest_size=16)
        if root.is_file():
            digest = self.digest(str(root))
            if digest is None:
                return MISSING
            total.update(digest)
            return total.hexdigest()
        if not root.is_dir():
            return MISSING
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not ignored_name(d))
            if budget is not None:
                budget[0] -= len(dirs) + len(files)
                if budget[0] < 0:
                    raise TooMany(root)
            for name in sorted(files):
                if ignored_name(name):
                    continue
                path = os.path.join(folder, name)
                digest = self.digest(path)
                if digest is not None:
                    total.update(os.path.relpath(path, root).encode() + b"\0" + digest)
        return total.hexdigest()
