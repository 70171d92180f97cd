"""Driving a real ``nia dev`` process: start it, write files, read its ``--json`` events with a timeout."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nia_plugins import BUILTINS

NIA = [sys.executable, "-c", "from nia_core.cli import main; main()"]
QUIET = tuple(f"no:{name}" for name in BUILTINS if name != "nia-environment")
"""Every built-in but the (stable) environment is switched off, so events show only the plugins under test."""
TIMEOUT = 15.0
"""Generous: the machine is shared. A passing test waits tens of milliseconds per event."""

Event = dict[str, Any]


def plugin_source(sources: dict[str, str], *, extra: str = "", namespace: str | None = None) -> str:
    """A local plugin file contributing one constant source per ``key: value``, with removal text."""
    items = ",\n        ".join(
        f"ContextSource(key={key!r}, load=lambda: {value!r}, baseline=lambda v: {key!r} + ': ' + v, "
        f"update=lambda old, new: {key!r} + ' is now ' + new, removal=lambda v: {key!r} + ' is gone')"
        for key, value in sources.items()
    )
    header = f"NIA_NAMESPACE = {namespace!r}\n" if namespace else ""
    return (
        "from nia_core import ContextSource, hookimpl\n"
        + header
        + textwrap.dedent(extra)
        + f"\n\n@hookimpl\ndef nia_context_sources(location):\n    return [\n        {items}\n    ]\n"
    )


def write(path: Path, text: str) -> None:
    """Save like most editors do: write a temporary file, then rename it over the original.

    An in-place write (truncate, then write) can be seen half done when the
    writer is descheduled between the two; ``nia dev`` then rightly reports the
    empty file first. Tests that mean to write in place use :func:`write_in_place`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def write_in_place(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIA_", "WATCHFILES_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


class DevProcess:
    """``nia dev`` as a subprocess, its stdout lines queued by a reader thread."""

    def __init__(
        self,
        cwd: Path,
        home: Path,
        *args: str,
        python: Sequence[str] = NIA,
        json_output: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        switches = [arg for flag in QUIET for arg in ("-p", flag)]
        command = [*python, *switches, "dev", *(["--json"] if json_output else []), *args]
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env or isolated_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self.stderr = ""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def line(self, timeout: float = TIMEOUT) -> str:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output within {timeout}s; seen so far: {self.seen[-5:]}") from None
        if line is None:
            self.proc.wait(5)
            raise AssertionError(f"nia dev exited ({self.proc.returncode}); stderr:\n{self.stderr}")
        self.seen.append(line)
        return line

    def event(self, timeout: float = TIMEOUT) -> Event:
        return json.loads(self.line(timeout))  # type: ignore[no-any-return]

    def until(self, predicate: Callable[[Event], bool], timeout: float = TIMEOUT) -> Event:
        """The next event matching ``predicate``, skipping others."""
        deadline = time.monotonic() + timeout
        while True:
            event = self.event(max(0.01, deadline - time.monotonic()))
            if predicate(event):
                return event

    def text_until(self, needle: str, timeout: float = TIMEOUT) -> str:
        """Lines up to and including the first containing ``needle`` (text mode)."""
        deadline = time.monotonic() + timeout
        collected = []
        while True:
            collected.append(self.line(max(0.01, deadline - time.monotonic())))
            if needle in collected[-1]:
                return "".join(collected)

    def started(self) -> tuple[Event, Event]:
        baseline = self.event()
        assert baseline["event"] == "baseline", baseline
        return baseline, self.until(lambda e: e["event"] == "watching")

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(TIMEOUT)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def about(path: Path) -> Callable[[Event], bool]:
    """Matches the reload event whose changed paths include ``path`` (or a file below it)."""
    target = str(path)

    def match(event: Event) -> bool:
        return event["event"] == "reload" and any(p == target or p.startswith(target + os.sep) for p in event["paths"])

    return match


def changes(event: Event) -> list[tuple[str, str, str]]:
    result = event["result"]
    assert result is not None and result["kind"] == "updated", event
    return [(c["kind"], c["key"], c["text"]) for c in result["changes"]]
