"""Running hook tests with a resident process answering: switch it on, wait for it between hooks, check it answered.

Used by the hook suites (tests/agents, tests/real_agents, the attack corpus) so that each of their
tests runs once answered in-process and once by a resident process.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

RESIDENT = {"on": False}
"""Whether the running test is in the resident mode."""

START_TIMEOUT = 60.0
"""Seconds a resident may take to start on a loaded machine."""


@contextlib.contextmanager
def resident_mode(monkeypatch, on: bool) -> Iterator[bool]:
    monkeypatch.setenv("NIA_RESIDENT", "1" if on else "0")
    RESIDENT["on"] = on
    try:
        yield on
    finally:
        RESIDENT["on"] = False


LOCATING = ("NIA_HOOK_LOG", "XDG_STATE_HOME", "HOME", "XDG_RUNTIME_DIR", "TMPDIR")
"""What locates the hook log and the residents' socket folder."""


@contextlib.contextmanager
def located_as(env: dict[str, str] | None) -> Iterator[None]:
    """While the block runs, this process finds the hook log and the residents where ``env`` has them.

    The helpers read both in-process (what ``nia hook log --json`` and ``nia hook residents --json`` print,
    through the same functions) instead of starting a ``nia`` process for each look.
    """
    if env is None:
        yield
        return
    saved = {name: os.environ.get(name) for name in LOCATING}
    try:
        for name in LOCATING:
            if env.get(name) is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = env[name]
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def residents(env: dict[str, str] | None = None) -> dict:
    """What ``nia hook residents --json`` prints for ``env`` (default: this process's environment)."""
    from nia_core.resident.residents import running

    with located_as(env):
        found, problem = running()
    return {"residents": [r.as_json() for r in found], "problem": problem or None}


def hook_log(last: int, env: dict[str, str] | None = None) -> list[dict]:
    """What ``nia hook log --json --last LAST`` prints for ``env``."""
    from nia_core.agents.hook_log import read

    with located_as(env):
        return read(last)


def count(env: dict[str, str] | None = None) -> int:
    """How many resident processes answer hooks (started ones still loading do not count)."""
    return sum(1 for r in residents(env)["residents"] if r["ready"])


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
    return max(hook_log(1, env), key=lambda e: e.get("time", ""), default=None)


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


def log_entries(env: dict[str, str] | None = None) -> list[dict]:
    return sorted(hook_log(200, env), key=lambda e: e.get("time", ""))


STARTS = ("yet", "ended", "went away", "did not answer", "changed")
"""Words of the fallbacks after which a hook starts a resident process."""


@contextlib.contextmanager
def agent_turn(env: dict[str, str]) -> Iterator[None]:
    """Around one real agent turn in the resident mode: a resident that was ready must answer its hooks.

    Afterwards, when a hook of the turn started a resident, wait until it is ready for the next turn.
    """
    if not RESIDENT["on"]:
        yield
        return
    ready = count(env) > 0
    seen = len(log_entries(env))
    yield
    new = log_entries(env)[seen:]
    if ready and new:
        assert any(e.get("answered_by") == "resident" for e in new), [(e.get("event"), e.get("fallback")) for e in new]
    if any(e.get("answered_by") == "in-process" and any(w in e.get("fallback", "") for w in STARTS) for e in new):
        wait_for_resident(0, env)


_WARMING = threading.Lock()


def env_for_mode(env: dict[str, str]) -> dict[str, str]:
    """A test's own environment, with this test's resident mode and its private socket folder."""
    return {
        **env,
        "NIA_RESIDENT": "1" if RESIDENT["on"] else "0",
        "NIA_RESIDENT_IDLE": os.environ.get("NIA_RESIDENT_IDLE", "300"),
        "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],
    }


def is_hook(args: tuple[str, ...] | list[str]) -> bool:
    from nia_core.agents import ADAPTERS

    return len(args) >= 2 and args[-2] == "hook" and args[-1] in ADAPTERS


def warm(argv: list[str], env: dict[str, str], cwd: Path) -> None:
    """In the resident mode: make sure a resident process answers hooks run as ``argv`` in ``env`` and ``cwd``.

    A hook event nia ignores is sent first; when it was answered in-process, the resident it
    started is waited for.
    """
    if not RESIDENT["on"]:
        return
    with _WARMING:
        before = count(env)
        ignored = {"hook_event_name": "PreToolUse", "session_id": "warm-up", "cwd": str(cwd)}
        subprocess.run(argv, input=json.dumps(ignored), capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
        mine = [e for e in log_entries(env) if e.get("host_session") == "warm-up"]
        if not mine or mine[-1].get("answered_by") != "resident":
            wait_for_resident(before, env)


def check_answered(env: dict[str, str], stdin: bytes | str | None) -> None:
    """In the resident mode: the hook of session ``stdin`` names was answered by the resident (or it was busy)."""
    if not RESIDENT["on"] or not stdin:
        return
    try:
        session = json.loads(stdin).get("session_id")
    except (ValueError, AttributeError, RecursionError):  # hostile input: no session to look for
        return
    if not isinstance(session, str) or not session:
        return
    mine = [e for e in log_entries(env) if e.get("host_session") == session]
    if mine:
        last = mine[-1]
        assert last.get("answered_by") == "resident" or "busy" in last.get("fallback", ""), last
