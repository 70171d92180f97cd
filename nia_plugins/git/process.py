"""A git process in a session of its own, collected by a deadline or killed with everything it started."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass


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

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.returncode: int | None = None

    def collect(self, deadline: float) -> tuple[bytes, bytes] | None:
        """Its stdout and stderr once it exited; ``None`` when ``deadline`` (monotonic) came first."""
        try:
            out, err = self.proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None
        self.returncode = self.proc.returncode
        return out, err

    def kill(self) -> None:
        """Kill its whole process group and reap it; never waits on a pipe a stray process may hold."""
        if self.returncode is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (OSError, AttributeError):  # AttributeError: no process groups (Windows)
                self.proc.kill()
            self.proc.wait()
            self.returncode = self.proc.returncode
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def spawn(command: list[str], env: dict[str, str]) -> Started:
    """``command`` in a new session, stdin ``/dev/null``, no descriptor but its stdio inherited."""
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    return Started(proc)
