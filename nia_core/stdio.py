"""nia's stdout belongs to nia: whatever a plugin prints goes to stderr.

Machine-readable output (``--json``, protocol streams such as ``nia mcp``'s
stdio) must stay parseable whatever a plugin prints at import, in a hook, in a
loader or from a thread of its own. While :func:`protect` is in force,
``sys.stdout`` is a router: a write reaches the real stdout only from the
command's thread (the one that entered :func:`protect`, normally the main
thread); every other write goes to ``sys.stderr``. Plugin code never runs on
the command's thread: imports, hooks, producers, loaders, renderers and
codecs run on worker threads under their deadlines (:mod:`nia_core.deadline`),
so whatever they print is routed without any marking.

A real process also gets :func:`redirect_fd`: file descriptor 1 itself is
pointed at stderr and the real stdout is kept on a private descriptor, so
output from C extensions or subprocesses a plugin starts cannot reach it either.
Code that writes a protocol stream takes :func:`real_stdout` explicitly.

An agent hook goes one step further with :func:`captured`: while its boundary
runs, fds 1 and 2 point at a file of nia's own, and what was written there is
passed on once the block ends. An agent reads a hook's output until every copy
of its pipes is closed, so a process a plugin starts (and leaves running) must
never hold one.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

_owner: threading.Thread | None = None
"""The thread that runs nia's command (the one that entered :func:`protect`); the main thread by default."""
_private: IO[str] | None = None
"""The real stdout after :func:`redirect_fd`."""


def _to_real() -> bool:
    return threading.current_thread() is (_owner or threading.main_thread())


class Router:
    """Stands in for ``sys.stdout``: nia's own writes to ``real``, plugins' to stderr."""

    def __init__(self, real: IO[str]) -> None:
        self.real = real

    @property
    def target(self) -> IO[str]:
        return self.real if _to_real() else sys.stderr

    def write(self, text: str) -> int:
        return self.target.write(text)

    def writelines(self, lines: Any) -> None:
        self.target.writelines(lines)

    def flush(self) -> None:
        if _to_real():
            self.real.flush()  # a closed pipe must surface here, as it would without the router
        else:
            with contextlib.suppress(Exception):
                sys.stderr.flush()

    @property
    def buffer(self) -> Any:
        return self.target.buffer  # type: ignore[attr-defined]

    def isatty(self) -> bool:
        return self.real.isatty()

    def fileno(self) -> int:
        return self.target.fileno()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:  # encoding, errors, line_buffering, closed...
        return getattr(self.real, name)


def real_stdout_fd() -> int:
    """The descriptor of the real stdout: the private one after :func:`redirect_fd`, else 1."""
    if _private is not None:
        try:
            return _private.fileno()
        except (OSError, ValueError):
            pass
    return 1


def real_stdout() -> IO[str]:
    """The stream nia's own output goes to, whether or not :func:`protect` is in force."""
    stdout = sys.stdout
    return stdout.real if isinstance(stdout, Router) else stdout


@contextlib.contextmanager
def protect() -> Iterator[Router]:
    """Route ``sys.stdout`` (see the module docstring) until the block ends."""
    global _owner
    previous = sys.stdout
    if isinstance(previous, Router):
        yield previous
        return
    router = Router(previous)
    sys.stdout = router  # type: ignore[assignment]
    owner, _owner = _owner, threading.current_thread()
    try:
        yield router
    finally:
        _owner = owner
        if sys.stdout is router:
            sys.stdout = previous


def redirect_fd() -> None:
    """Point fd 1 at stderr and keep the real stdout on a private descriptor (real processes only).

    ``sys.stdout`` becomes a stream on the private descriptor, so nia writes
    where it always did; :func:`protect` then routes it.
    """
    stdout = sys.stdout
    if stdout is None or isinstance(stdout, Router) or sys.stderr is None:
        return
    try:
        if stdout.fileno() != 1 or sys.stderr.fileno() != 2:
            return
        stdout.flush()
        private = os.dup(1)
        os.set_inheritable(private, False)
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):
        return
    global _private
    sys.stdout = _private = open(  # noqa: SIM115 - lives as long as the process
        private,
        "w",
        encoding=stdout.encoding,
        errors=stdout.errors,
        buffering=1 if stdout.line_buffering else -1,
        closefd=True,
    )


def finish() -> None:
    """Flush the real stdout before the process ends; a reader that went away (``| head``) is no error."""
    for stream in (_private, sys.stdout):
        if stream is None:
            continue
        try:
            stream.flush()
        except BrokenPipeError:
            with contextlib.suppress(OSError, ValueError):  # Python's recipe: no second error at exit
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass


class Captured:
    """What :func:`captured` collected: the bytes written to fds 1 and 2 while its block ran."""

    def __init__(self) -> None:
        self.data = b""
        self._saved: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def getvalue(self) -> bytes:
        return self.data

    def release(self) -> None:
        """Point fds 1 and 2 back where they were (idempotent): a watchdog ending the process calls it to speak."""
        with self._lock:
            saved, self._saved = self._saved, None
        if saved is None:
            return
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


_current: Captured | None = None

KEPT_OUTPUT = 1 << 20
"""Bytes of a :func:`captured` block's output passed on: its start and its end, with a line saying what was cut
(a plugin printing in a loop must not make a hook's answer, or the agent's stderr, megabytes long)."""


def _read_at(fd: int, offset: int, size: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = os.pread(fd, min(size, 1 << 16), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _kept_output(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    if size <= KEPT_OUTPUT:
        return _read_at(fd, 0, size)
    half = KEPT_OUTPUT // 2
    cut = f"\n[nia: {size - 2 * half:,} bytes of output left out here]\n".encode()
    return _read_at(fd, 0, half) + cut + _read_at(fd, size - half, half)


def release_captured() -> None:
    """Undo the :func:`captured` block in force, if any (see :meth:`Captured.release`)."""
    if _current is not None:
        _current.release()


def drop_captured() -> None:
    """In a process forked inside a :func:`captured` block: close its copies of the descriptors the block keeps
    (the agent's pipes), leaving fds 1 and 2 as they are."""
    saved = _current._saved if _current is not None else None
    for fd in saved or ():
        with contextlib.suppress(OSError):
            os.close(fd)


@contextlib.contextmanager
def captured() -> Iterator[Captured]:
    """Everything written to fd 1 and fd 2 (and ``sys.stdout``/``sys.stderr``) while the block runs.

    The descriptors point at an unnamed file of nia's own (``memfd_create``,
    else a temporary file) meanwhile; a process started in the block inherits
    that file, never the descriptors the block found, and once the block ends
    that file takes no more bytes.
    """
    global _current
    result = Captured()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        fd = memfd("nia-hook-output", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    else:  # elsewhere: an unnamed temporary file
        import tempfile

        with tempfile.TemporaryFile() as spare:
            fd = os.dup(spare.fileno())
    result._saved = (os.dup(1), os.dup(2))
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    previous, _current = _current, result
    try:
        yield result
    finally:
        _current = previous
        result.release()
        try:
            result.data = _kept_output(fd)
        finally:
            _emptied_for_good(fd)
            os.close(fd)


def _emptied_for_good(fd: int) -> None:
    """Empty the block's file and seal it at that size: a process a plugin started in the block and left running
    holds it as its stdout and stderr, and what it went on writing would fill memory that nobody ever reads
    (2 GB in 4 s, measured); its writes fail instead, as on a pipe whose reader is gone."""
    import fcntl

    seals = getattr(fcntl, "F_ADD_SEALS", None)
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        if seals is not None:
            fcntl.fcntl(fd, seals, fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
