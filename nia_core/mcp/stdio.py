"""Keeping the protocol's stdout clean: only JSON-RPC frames ever reach it.

Before any plugin is imported, :func:`claim_stdio` moves the real stdin and
stdout to private descriptors and points descriptors 0 and 1 at the null
device and at stderr. Whatever a plugin prints afterwards, from Python, a C
extension or a subprocess it starts, lands on stderr; whatever it reads from
stdin is end-of-file. Only the server writes the private stdout.

:class:`Output` writes the private stdout without ever blocking the event
loop: a client that stops reading its answers holds back the task that
writes them, which a signal can still cancel. :class:`Lines` reads the
private stdin with bounds: a line longer than
:data:`~nia_core.mcp.limits.MAX_MESSAGE_BYTES` is skipped (only its ends are
kept, to answer it), and the reader stops reading while the lines it holds
are not taken, so a client that writes faster than the server answers is
held back by the pipe instead of growing the server.
"""

from __future__ import annotations

import asyncio
import io
import os
import sys
import threading
from collections import deque
from dataclasses import dataclass
from typing import BinaryIO

from nia_core.mcp.limits import MAX_MESSAGE_BYTES, QUEUED_BYTES, QUEUED_LINES
from nia_core.stdio import real_stdout_fd

KEPT_ENDS = 4096
"""Bytes kept from each end of an oversize line: enough to find its ``id``."""


@dataclass
class ClaimedStdio:
    stdin: BinaryIO
    stdout: BinaryIO

    def release(self) -> None:
        """Flush the protocol stream and give it back blocking. Stdin stays open: a reader thread may
        still be blocked on it, and closing a buffered file under a blocked read waits for that read."""
        try:
            self.stdout.flush()
        except (OSError, ValueError):
            pass
        try:
            os.set_blocking(self.stdout.fileno(), True)  # a terminal shared with the shell must not stay non-blocking
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


@dataclass(frozen=True)
class Oversize:
    """A line longer than the limit, read and dropped: its first and last bytes, and its length."""

    head: bytes
    tail: bytes
    size: int


class Lines:
    """Lines of the protocol's stdin, read on a daemon thread within a byte and a line budget.

    The thread blocks while the lines it read are not taken (:data:`QUEUED_BYTES`,
    :data:`QUEUED_LINES`); a blocked read never holds up shutdown.
    """

    def __init__(self, stream: BinaryIO, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._loop = asyncio.get_running_loop()
        self._ready = asyncio.Event()
        self._items: deque[bytes | Oversize | None] = deque()
        self._queued = 0
        self._room = threading.Condition()
        self._limit = limit
        threading.Thread(target=self._read, args=(stream,), name="nia-mcp-stdin", daemon=True).start()

    def _read(self, stream: BinaryIO) -> None:
        try:
            while True:
                line = stream.readline(self._limit + 1)
                if not line:
                    break
                if len(line) > self._limit and not line.endswith(b"\n"):
                    self._put(self._skip(stream, line), 0)
                else:
                    self._put(line, len(line))
        except (OSError, ValueError):
            pass
        finally:
            self._put(None, 0)

    def _skip(self, stream: BinaryIO, first: bytes) -> Oversize:
        """Read the rest of an oversize line without keeping it."""
        head, tail, size = first[:KEPT_ENDS], first[-KEPT_ENDS:], len(first)
        while not tail.endswith(b"\n"):
            chunk = stream.readline(1024 * 1024)
            if not chunk:
                break
            size += len(chunk)
            tail = (tail + chunk)[-KEPT_ENDS:]
        return Oversize(head, tail, size)

    def _put(self, item: bytes | Oversize | None, size: int) -> None:
        with self._room:
            while self._items and (self._queued + size > QUEUED_BYTES or len(self._items) >= QUEUED_LINES):
                self._room.wait()
            self._items.append(item)
            self._queued += size
        try:
            self._loop.call_soon_threadsafe(self._ready.set)
        except RuntimeError:  # the loop is gone: nobody is listening
            pass

    async def next(self) -> bytes | Oversize | None:
        """The next line (with its newline), an :class:`Oversize` record, or ``None`` at end of input."""
        while True:
            with self._room:
                if self._items:
                    item = self._items.popleft()
                    if isinstance(item, bytes):
                        self._queued -= len(item)
                    self._room.notify()
                    return item
                self._ready.clear()
            await self._ready.wait()


class _Flow(asyncio.Protocol):
    """Pauses the writer while the pipe's buffer is over its limit (the client is not reading)."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()
        self.lost = False

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.writable.set()


class Output:
    """The protocol's stdout: a pipe or terminal written through the event loop, else a file written directly.

    :meth:`write` returns once the text is handed over and the buffer is under
    :data:`BUFFERED` bytes; while the client does not read, it waits, and that
    wait is cancellable (SIGTERM stops the server). A client that closed its
    end is gone: what is written after is dropped.
    """

    BUFFERED = 64 * 1024

    def __init__(self, stream: BinaryIO, transport: asyncio.WriteTransport | None, flow: _Flow | None) -> None:
        self._stream = stream
        self._transport = transport
        self._flow = flow

    @classmethod
    async def open(cls, stream: BinaryIO) -> Output:
        loop = asyncio.get_running_loop()
        try:
            transport, flow = await loop.connect_write_pipe(_Flow, stream)
        except (ValueError, OSError):  # a regular file: writes never wait on a reader
            return cls(stream, None, None)
        transport.set_write_buffer_limits(high=cls.BUFFERED)
        return cls(stream, transport, flow)

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")
        if self._transport is None or self._flow is None:
            try:
                self._stream.write(data)
                self._stream.flush()
            except (OSError, ValueError):
                pass
            return
        if self._flow.lost or self._transport.is_closing():
            return
        self._transport.write(data)
        await self._flow.writable.wait()
