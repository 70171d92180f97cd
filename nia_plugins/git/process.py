"""A process in a session of its own, collected by a deadline or killed with everything it started.

POSIX: ``os.posix_spawn`` with pipes read through ``select.poll``, because
importing :mod:`subprocess` (with ``selectors``, ``signal``, ``locale``) costs
~3.5 ms, more than a git call, in every fresh hook process.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Budget:
    """The time one observation's git calls share: together they never take longer than ``seconds``."""

    seconds: float
    deadline: float

    @classmethod
    def of(cls, seconds: float) -> Budget:
        return cls(seconds, time.monotonic() + seconds)


class Started:
    """A git process started in a session (so a process group) of its own, collected or killed exactly once."""

    def __init__(self, pid: int, out: int, err: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pipes = {out: bytearray(), err: bytearray()}
        self._out, self._err = out, err
        self._closed = False

    def collect(self, deadline: float) -> tuple[bytes, bytes] | None:
        """Its stdout and stderr once it exited; ``None`` when ``deadline`` (monotonic) came first."""
        import select

        open_fds = [fd for fd in self._pipes if fd >= 0]
        poller = select.poll()
        for fd in open_fds:
            poller.register(fd, select.POLLIN)
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            for fd, _event in poller.poll(int(left * 1000) + 1):
                data = os.read(fd, 65536)
                if data:
                    self._pipes[fd] += data
                else:
                    poller.unregister(fd)
                    open_fds.remove(fd)
        while self.returncode is None:  # the pipes closed; the process ends a moment later
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
            elif time.monotonic() >= deadline:
                return None
            else:
                time.sleep(0.0005)
        self._close()
        return bytes(self._pipes[self._out]), bytes(self._pipes[self._err])

    def kill(self) -> None:
        """Kill its whole process group and reap it; never waits on a pipe a stray process may hold."""
        if self.returncode is None:
            import signal  # the error path only

            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        self._close()

    def _close(self) -> None:
        """Once: a second close could hit a descriptor another thread has opened since."""
        if not self._closed:
            self._closed = True
            for fd in self._pipes:
                os.close(fd)


class _Popened(Started):
    """Where ``posix_spawn`` cannot start a session (Windows, old libcs): :mod:`subprocess`."""

    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.returncode = None

    def collect(self, deadline: float) -> tuple[bytes, bytes] | None:
        import subprocess

        try:
            out, err = self.proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None
        self.returncode = self.proc.returncode
        return out, err

    def kill(self) -> None:
        if self.returncode is None:
            import signal

            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (OSError, AttributeError):  # AttributeError: no process groups (Windows)
                self.proc.kill()
            self.proc.communicate()
            self.returncode = self.proc.returncode


def _inheritable_fds() -> list[int] | None:
    """Descriptors past stderr a child would inherit (Linux; ``None``: cannot tell here).

    ``posix_spawn`` cannot close every descriptor as ``subprocess``'s
    ``close_fds`` does, so these are closed one by one in the child. nia opens
    none; the process that started nia may have left some.
    """
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        return None
    inheritable = []
    for fd in fds:
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    inheritable.append(fd)
            except OSError:
                pass  # the listing's own descriptor, closed by now
    return inheritable


def spawn(command: list[str], env: dict[str, str]) -> Started:
    """``command`` in a new session, stdin ``/dev/null``, no descriptor but its stdio inherited."""
    inherited = _inheritable_fds() if hasattr(os, "posix_spawn") else None
    if inherited is not None:
        out_r, out_w = os.pipe()  # both ends close on exec: git gets them only as its fd 1 and 2
        err_r, err_w = os.pipe()
        actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_CLOSE, fd) for fd in inherited]
        actions += [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
        ]
        try:
            pid = os.posix_spawn(command[0], command, env, file_actions=actions, setsid=True)
        except BaseException as exc:
            os.close(out_r)
            os.close(err_r)
            # No POSIX_SPAWN_SETSID in this libc, or one that fails closing a descriptor closed meanwhile.
            if not isinstance(exc, NotImplementedError) and not (isinstance(exc, OSError) and inherited):
                raise
        else:
            return Started(pid, out_r, err_r)
        finally:
            os.close(out_w)
            os.close(err_w)
    import subprocess

    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    return _Popened(proc)
