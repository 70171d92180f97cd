"""Real processes: restarts between turns, concurrent runners on one SQLite file, SIGKILL at random points."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nia_core.sessions import open_store

from .session_checks import problems

DRIVER = str(Path(__file__).with_name("session_driver.py"))

pytestmark = pytest.mark.slow


def nia(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["nia", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_restarting_the_process_between_turns_keeps_the_baseline_byte_for_byte(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("Use tabs.\n")
    session_id = nia(cli_env, "session", "new", "--location", str(project)).strip()
    replies = []
    for turn, rule in enumerate(["Use spaces.\n", "Use both, somehow.\n", None]):
        replies.append(nia(cli_env, "session", "send", session_id, f"turn {turn}"))  # a new process each turn
        if rule:
            (project / "AGENTS.md").write_text(rule)  # a change between processes
    view = json.loads(nia(cli_env, "session", "show", session_id, "--model-view", "--json"))
    baseline = view["system"].encode("utf-8")
    assert b"Use tabs." in baseline
    # echo reports the size and sha256 of the baseline bytes it was sent, at every turn
    sent = f"baseline {len(baseline)} bytes, sha256 {hashlib.sha256(baseline).hexdigest()[:16]}"
    assert [reply.splitlines()[0] for reply in replies] == [f"[echo/echo] {sent}"] * 3
    updates = [m["content"] for m in view["messages"] if m["role"] == "system"]
    assert len(updates) == 2 and "Use spaces." in updates[0] and "Use both, somehow." in updates[1]


def prepare(tmp_path: Path, sessions: int) -> tuple[str, str, str, list[str]]:
    dir_a, dir_b = tmp_path / "a", tmp_path / "b"
    dir_a.mkdir()
    dir_b.mkdir()
    url = f"sqlite:///{tmp_path / 'nia.db'}?timeout=60"
    with open_store(url) as store:
        ids = [store.create_session(str(dir_a), "echo/echo").id for _ in range(sessions)]
    return url, str(dir_a), str(dir_b), ids


def check_all(url: str, ids: list[str]) -> int:
    with open_store(url) as store:
        for session_id in ids:
            assert problems(store, session_id) == [], session_id
        return sum(len(store.history(session_id)) for session_id in ids)


def test_several_processes_replace_epochs_concurrently_on_one_file(tmp_path: Path) -> None:
    url, dir_a, dir_b, ids = prepare(tmp_path, 2)
    runners = [
        subprocess.Popen(
            [sys.executable, DRIVER, "race", url, dir_a, dir_b, "25", str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in range(3)
    ]
    outputs = [runner.communicate(timeout=120) for runner in runners]
    for runner, (_out, err) in zip(runners, outputs, strict=True):
        assert runner.returncode == 0, err  # no valid run ends with an error
        assert err == ""
    check_all(url, ids)
    with open_store(url) as store:
        epochs = sum(len(store.epochs(session_id)) for session_id in ids)
        reasons = {e.reason.split(" ")[0] for session_id in ids for e in store.epochs(session_id)}
    assert epochs > 4 and {"compaction", "model"} & reasons


def test_sigkill_at_random_points_leaves_every_session_consistent(tmp_path: Path) -> None:
    url, dir_a, dir_b, ids = prepare(tmp_path, 3)
    rng = random.Random(20251129)
    grown = []
    for _ in range(6):
        runner = subprocess.Popen(
            [sys.executable, DRIVER, "crash", url, dir_a, dir_b],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert runner.stdout is not None
        assert runner.stdout.readline() == b"ready\n"
        # The kill comes at a random moment after a random number of replies stored, counted by the runner
        # itself, so a busy machine slows the runner down without moving where in a boundary it dies.
        for _ in range(rng.randint(1, 3)):
            while runner.stdout.readline() not in (b"Replied\n", b""):
                pass
        try:
            runner.wait(timeout=rng.uniform(0.0, 0.3))
        except subprocess.TimeoutExpired:
            runner.send_signal(signal.SIGKILL)
        runner.wait()
        assert runner.returncode == -signal.SIGKILL, runner.stderr.read() if runner.stderr else ""
        grown.append(check_all(url, ids))
    assert grown[-1] > grown[0] > 0  # boundaries completed between kills
    finish = subprocess.run(
        [sys.executable, DRIVER, "race", url, dir_a, dir_b, "6", "1"], capture_output=True, text=True, timeout=120
    )
    assert finish.returncode == 0, finish.stderr  # every session carries on after the kills
    check_all(url, ids)


def wait_for_child(pid: int, seconds: float = 60.0) -> int:
    """The child's wait status; a child stuck past ``seconds`` is killed and the test fails."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"forked runner {pid} did not finish within {seconds:g}s")


def test_sigkill_before_any_statement_of_many_boundaries_leaves_every_session_consistent(tmp_path: Path) -> None:
    """Forked runners kill themselves just before a random SQL statement: inside transactions, between them."""
    from . import session_driver

    url, dir_a, dir_b, ids = prepare(tmp_path, 2)
    statuses = []
    rng = random.Random(7)
    # A sweep over the first 75 statements of a run (a turn is ~66): every point of a boundary gets hit;
    # then random points a few boundaries in.
    for round_number in range(100):
        kill_at = round_number + 1 if round_number < 75 else rng.randint(76, 300)
        pid = os.fork()
        if pid == 0:  # the child: run until the kill (or finish its operations)
            code = 1
            try:
                session_driver.operate(url, [dir_a, dir_b], 8, round_number, kill_at=kill_at)
                code = 0
            finally:
                os._exit(code)
        status = wait_for_child(pid)
        assert not (os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0), "the runner failed"
        statuses.append(os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL)
        check_all(url, ids)
    assert sum(statuses) > 90  # nearly every round really was killed mid-run
    assert check_all(url, ids) > 60
