"""Faults against PostgreSQL: nothing admitted is lost or stored twice, and failures read clearly.

The connection is cut mid-transaction (its backend terminated while it waits
inside the transaction), around COMMIT (before the server sees it, and after
it committed but before the client heard), by a statement timeout, and by
server restarts between boundaries and under a runner process.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from nia_core.sessions import DatabaseLocked, Replied, Store, open_store, run_turn
from nia_core.sessions.check import session_problems

from . import pg_server
from .pg_faults import CuttingProxy, HookedStore, SessionLock, terminate, wait_for, waiting_backends
from .pg_runners import RunnerSpec, context_for, provider_for, read_log, run_runner, set_value

pytestmark = pytest.mark.postgres

WRITES = ("start_epoch", "enqueue", "promote", "admit_update", "append")


def two_turns(store: Any, session_id: str, place: Path) -> None:
    """First turn initializes the epoch; the second admits a changed value. Both must reply."""
    assert isinstance(run_turn(store, session_id, context_for, provider_for, text="hello"), Replied)
    set_value(place, "second")
    assert isinstance(run_turn(store, session_id, context_for, provider_for, text="again"), Replied)


def assert_each_once(store: Store, session_id: str) -> None:
    """The two turns' history, exactly: each input, the one system message and each reply once."""
    history = [(h.message.kind, h.message.text.split("\n")[0]) for h in store.history(session_id)]
    kinds = [kind for kind, _ in history]
    assert kinds == ["user", "assistant", "user", "system_update", "assistant"], history
    assert history[3][1] == "The value changed from first to second."
    assert [e.number for e in store.epochs(session_id)] == [1]
    assert session_problems(store, session_id) == []
    assert store.state(session_id).pending == ()


@pytest.fixture
def place(tmp_path: Path) -> Path:
    set_value(tmp_path, "first")
    return tmp_path


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("write", WRITES)
def test_a_connection_cut_around_commit_is_resolved_exactly_once(
    pg_url: str, place: Path, write: str, when: str
) -> None:
    proxy = CuttingProxy(pg_url)
    try:
        with open_store(proxy.url) as store:
            hooked = HookedStore(store)
            session_id = store.create_session(str(place), "echo/echo").id
            hooked.before[write] = lambda: proxy.arm(when)
            two_turns(hooked, session_id, place)
            assert proxy.cuts == 1, "the fault was not injected"
            assert_each_once(store, session_id)
    finally:
        proxy.close()


@pytest.mark.parametrize("write", WRITES)
def test_a_backend_terminated_mid_transaction_is_retried(pg_url: str, pg_admin: str, place: Path, write: str) -> None:
    killed: list[int] = []
    with open_store(pg_url) as store:
        hooked = HookedStore(store)
        session_id = store.create_session(str(place), "echo/echo").id

        def kill_inside_the_transaction() -> None:
            lock = SessionLock(pg_url, session_id)

            def killer() -> None:
                [pid] = wait_for(lambda: waiting_backends(pg_admin))
                terminate(pg_admin, pid)
                killed.append(pid)
                lock.release()

            threading.Thread(target=killer, daemon=True).start()

        hooked.before[write] = kill_inside_the_transaction
        two_turns(hooked, session_id, place)
        assert len(killed) == 1
        assert_each_once(store, session_id)


@pytest.mark.parametrize("write", WRITES)
def test_a_statement_timeout_is_a_clear_error_and_the_retry_admits_once(pg_url: str, place: Path, write: str) -> None:
    url = pg_server.with_setting(pg_url, "statement_timeout", 200)
    with open_store(url) as store:
        hooked = HookedStore(store)
        session_id = store.create_session(str(place), "echo/echo").id
        locks: list[SessionLock] = []
        hooked.before[write] = lambda: locks.append(SessionLock(pg_url, session_id))
        texts = iter(["hello", "again"])
        for text in texts:
            if text == "again":
                set_value(place, "second")
            try:
                result = run_turn(hooked, session_id, context_for, provider_for, text=text)
            except DatabaseLocked as exc:
                message = str(exc)
                assert message.startswith(f"session {session_id}: cannot ")
                assert "did not finish in time" in message and "statement timeout" in message
                assert "nothing was changed" in message
                locks.pop().release()
                # The user sends again: the text itself if it never got stored, else just a retry.
                pending = [m.text for m in store.state(session_id).pending]
                stored = [h.message.text for h in store.history(session_id)]
                again = None if text in pending or text in stored else text
                result = run_turn(hooked, session_id, context_for, provider_for, text=again)
            assert isinstance(result, Replied)
        assert not locks, "the timeout never fired"
        assert_each_once(store, session_id)


def test_the_cli_reports_a_statement_timeout_in_one_line(
    pg_url: str, place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NIA_DB", pg_server.with_setting(pg_url, "statement_timeout", 200))
    runner = CliRunner()
    created = runner.invoke(cli, ["session", "new", "--location", str(place)])
    assert created.exit_code == 0, created.output
    session_id = created.output.strip()
    lock = SessionLock(pg_url, session_id)
    try:
        failed = runner.invoke(cli, ["session", "send", session_id, "hello"])
    finally:
        lock.release()
    assert failed.exit_code == 1
    [line] = failed.output.strip().splitlines()
    assert line.startswith(f"Error: session {session_id}: cannot keep the input: the database postgresql://")
    assert "statement timeout" in line and "nothing was changed, try again" in line
    sent = runner.invoke(cli, ["session", "send", session_id, "hello"])
    assert sent.exit_code == 0, sent.output
    with open_store(pg_url) as store:
        assert [h.message.kind for h in store.history(session_id)] == ["user", "assistant"]


# -- server restarts -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def private_cluster() -> Iterator[pg_server.Cluster]:
    """A server of our own, so restarting it disturbs no other test."""
    cluster = pg_server.start_cluster()
    try:
        yield cluster
    finally:
        cluster.destroy()


def test_a_server_restart_between_boundaries_is_invisible(private_cluster: pg_server.Cluster, place: Path) -> None:
    with pg_server.fresh_schema(private_cluster.url) as url, open_store(url) as store:
        session_id = store.create_session(str(place), "echo/echo").id
        assert isinstance(run_turn(store, session_id, context_for, provider_for, text="hello"), Replied)
        private_cluster.restart()
        set_value(place, "second")
        assert isinstance(run_turn(store, session_id, context_for, provider_for, text="again"), Replied)
        assert_each_once(store, session_id)
        # The pooled connections died with the server; the store kept working on new ones.
        private_cluster.restart(mode="immediate")
        assert store.state(session_id).epoch is not None


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("write", ["admit_update", "append", "enqueue"])
def test_a_server_crash_during_commit_is_resolved_from_the_rows_written(
    private_cluster: pg_server.Cluster, place: Path, write: str, when: str
) -> None:
    """After a crash a transaction id may be handed out again, so only the rows can say what was stored.

    A turn's writes record a token of the client's in their own transaction, so even input that
    never arrived is told apart from input another runner promoted since (the store once had to
    give up there: "could not learn whether the change was stored").
    """
    with pg_server.fresh_schema(private_cluster.url) as url:
        proxy = CuttingProxy(url)

        def crash_and_reuse_transaction_ids() -> None:
            private_cluster.restart(mode="immediate")
            for _ in range(30):  # new transactions take the ids the lost one may have had
                pg_server.admin_execute(private_cluster.url, "SELECT pg_current_xact_id()")

        proxy.on_cut = crash_and_reuse_transaction_ids
        try:
            with open_store(proxy.url) as store:
                hooked = HookedStore(store)
                session_id = store.create_session(str(place), "echo/echo").id
                hooked.before[write] = lambda: proxy.arm(when)
                two_turns(hooked, session_id, place)
                assert proxy.cuts == 1, "the fault was not injected"
                assert_each_once(store, session_id)
        finally:
            proxy.close()


def test_a_runner_keeps_going_through_server_crashes(private_cluster: pg_server.Cluster, tmp_path: Path) -> None:
    turns = 30
    with pg_server.fresh_schema(private_cluster.url) as url:
        with open_store(url) as store:
            session_id = store.create_session(str(tmp_path), "echo/echo").id
        set_value(tmp_path, "first")
        spec = RunnerSpec(0, session_id, turns, job="change", every=2)
        out = tmp_path / "runner.jsonl"
        process = multiprocessing.get_context("fork").Process(target=run_runner, args=(url, spec, str(out)))
        process.start()
        with open_store(url) as watcher:
            for progress in (10, 30):  # crash twice while the runner is mid-run
                wait_for(
                    lambda: not process.is_alive() or len(watcher.history(session_id)) >= progress,  # noqa: B023
                    timeout=120,
                )
                private_cluster.restart(mode="immediate")
        process.join(timeout=180)
        assert process.exitcode == 0, [e for e in read_log(out) if e["op"] == "error"]
        log = read_log(out)
        assert sum(e["op"] == "turn" for e in log) == turns
        with open_store(url) as store:
            history = store.history(session_id)
            assert session_problems(store, session_id) == []
            inputs = [h.message.text for h in history if h.message.kind == "user"]
            assert inputs == [f"runner 0 turn {t}" for t in range(turns)]
            admitted = [e["seq"] for e in log if e["op"] == "admit"]
            assert sorted(h.message.seq for h in history if h.message.kind == "system_update") == admitted


def test_runners_killed_at_random_points_leave_every_session_consistent(pg_url: str, tmp_path: Path) -> None:
    places = [tmp_path / "a", tmp_path / "b"]
    with open_store(pg_url) as store:
        ids = []
        for place in places:
            place.mkdir()
            set_value(place, "first")
            ids.append(store.create_session(str(place), "echo/echo").id)
    rng = random.Random(20251129)
    context = multiprocessing.get_context("fork")
    grown = []
    for round_number in range(6):
        session_id = ids[round_number % 2]
        spec = RunnerSpec(round_number, session_id, turns=10_000, job="change", every=2)
        process = context.Process(target=run_runner, args=(pg_url, spec, str(tmp_path / f"r{round_number}.jsonl")))
        process.start()
        with open_store(pg_url) as store:
            before = len(store.history(session_id))
            # The kill lands wherever the runner happens to be a few messages on: inside or between transactions.
            wait_for(lambda: len(store.history(session_id)) >= before + rng.randint(1, 6), timeout=120)  # noqa: B023
            os.kill(process.pid or 0, signal.SIGKILL)
            process.join(timeout=60)
            assert process.exitcode == -signal.SIGKILL
            grown.append(sum(len(store.history(s)) for s in ids))
            for each in ids:
                assert session_problems(store, each) == [], each
                inputs = Counter(h.message.text for h in store.history(each) if h.message.kind == "user")
                assert all(count == 1 for count in inputs.values())
    assert grown == sorted(grown) and grown[-1] > grown[0]
    with open_store(pg_url) as store:  # every session carries on after the kills
        for each, place in zip(ids, places, strict=True):
            set_value(place, "after the kills")
            result = run_turn(store, each, context_for, provider_for, text="still here?")
            assert isinstance(result, Replied)
            assert result.boundary.admission is not None and result.boundary.admission.outcome == "updated"
            assert store.state(each).pending == () and session_problems(store, each) == []
