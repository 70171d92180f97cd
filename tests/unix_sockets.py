"""A Unix socket bound at any path, however long.

``AF_UNIX`` names are limited to 108 bytes, and pytest's temporary paths
(a CI ``TMPDIR``, xdist's ``popen-gwN`` folder, a long test name) pass that.
Binding through ``/proc/self/fd/N/NAME``, where ``N`` is a descriptor on the
folder, keeps the name short without ``chdir``, which would move every thread
of the test process.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def bind_unix_socket(path: Path) -> socket.socket:
    """A socket bound at ``path`` (listening, so a client could connect); the caller closes it."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(f"/proc/self/fd/{folder}/{path.name}")
            server.listen(1)
        except BaseException:
            server.close()
            raise
    finally:
        os.close(folder)
    return server
