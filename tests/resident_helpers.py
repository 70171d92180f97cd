"""Running hook tests with a resident process answering: switch it on, wait for it between hooks, check it answered.

Used by the hook suites (tests/agents, tests/real_agents, the attack corpus) so that each of their
tests runs once answered in-process and once by a resident process.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

RESIDENT = {"on": False}
"""Whether the running test is in the resident mode."""

START_TIMEOUT = 60.0
"""Seconds a resident may take to start on a loaded machine."""


def nia_program() -> list[str]:
    script = Path(sys.executable).parent / "nia"
    return [str(script)] if script.exists() else [sys.executable, "-c", "from nia_core.cli import main; main()"]


@contextlib.contextmanager
def resident_mode(monkeypatch, on: bool) -> Iterator[bool]:
    monkeypatch.setenv("NIA_RESIDENT", "1" if on else "0")
    RESIDENT["on"] = on
    try:
        yield on
    finally:
        RESIDENT["on"] = False


def run_nia(args: list[str], env: dict[str, str] | None) -> str:
    """A read-only ``nia`` command's stdout: in this process for this environment, else in one of ``env``."""
    if env is None:
        from click.testing import CliRunner

        from nia_core.cli import cli

        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        return result.stdout
    done = subprocess.run([*nia_program(), *args], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def residents(env: dict[str, str] | None = None) -> dict:
    """``nia hook residents --json`` for ``env`` (default: this process's environment)."""
    return json.loads(run_nia(["hook", "residents", "--json"], env))


def count(env: dict[str, str] | None = None) -> int:
    return len(residents(env)["residents"])


def wait_for_resident(before: int, env: dict[str, str] | None = None) -> None:
    """Wait until more resident processes run than ``before`` (one was started)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if count(env) > before:
            return
        time.sleep(0.1)
    raise AssertionError(f"no resident process started within {START_TIMEOUT:g}s")


def last_entry(env: dict[str, str] | None = None) -> dict | None:
    """The newest hook log entry of every session."""
    out = run_nia(["hook", "log", "--json", "--last", "1"], env)
    entries = [json.loads(line) for line in out.splitlines() if line.strip()]
    return max(entries, key=lambda e: e.get("time", ""), default=None)


@contextlib.contextmanager
def one_hook(env: dict[str, str] | None = None) -> Iterator[None]:
    """Around one hook in the resident mode: after it, wait for the resident it started, if it started one."""
    if not RESIDENT["on"]:
        yield
        return
    before = count(env)
    yield
    entry = last_entry(env)
    if entry is not None and entry.get("answered_by") == "in-process" and "yet" in entry.get("fallback", ""):
        wait_for_resident(before, env)


def assert_resident_answered(env: dict[str, str] | None = None, log_dir: Path | None = None) -> None:
    """In the resident mode, a test that ran more than one hook must have had some answered by a resident."""
    folder = log_dir or Path(
        os.environ.get("NIA_HOOK_LOG")
        or Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "nia" / "hooks"
    )
    entries = []
    for path in folder.glob("*.jsonl") if folder.is_dir() else []:
        entries += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if len(entries) < 2:
        return
    paths = [e.get("answered_by") for e in entries]
    assert "resident" in paths, f"no hook of this test was answered by a resident process: {paths}"
