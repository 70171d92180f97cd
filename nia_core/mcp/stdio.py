"""Keeping the protocol's stdout clean: only JSON-RPC frames ever reach it.

Before any plugin is imported, :func:`claim_stdio` moves the real stdin and
stdout to private descriptors and points descriptors 0 and 1 at the null
device and at stderr. Whatever a plugin prints afterwards, from Python, a C
extension or a subprocess it starts, lands on stderr; whatever it reads from
stdin is end-of-file. Only the server writes the private stdout.
"""

from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass
from typing import BinaryIO

from nia_core.stdio import real_stdout_fd


@dataclass
class ClaimedStdio:
    stdin: BinaryIO
    stdout: BinaryIO

    def release(self) -> None:
        """Flush the protocol stream. Stdin stays open: a reader thread may still be blocked on it,
        and closing a buffered file under a blocked read waits for that read."""
        try:
            self.stdout.flush()
        except (OSError, ValueError):
            pass


def claim_stdio() -> ClaimedStdio:
    """Take the real stdin/stdout for the protocol; fds 0 and 1 become /dev/null and stderr."""
    for stream in (sys.stdout, sys.__stdout__):
        if stream is not None:
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    wire_in = os.dup(0)
    wire_out = os.dup(real_stdout_fd())  # nia's process start may already have moved stdout off descriptor 1
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    # sys.stdout keeps writing to descriptor 1, which is stderr now; make it line-buffered like stderr.
    try:
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8", line_buffering=True)
    except (OSError, ValueError):
        sys.stdout = sys.stderr
    return ClaimedStdio(os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb"))
