"""A PostgreSQL turn in few round trips (#17 item 3), and what makes that safe.

Round trips are counted on the wire by the benchmark's relay
(bench/round_trips.py): each time the server answers after the client sent.
The writes of a turn are server-side functions (schema 3) that record a
client-chosen token with their result; a lost answer is resolved by that token,
and a tombstone keeps a write that never committed from committing later.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import psycopg
import pytest

from bench.round_trips import CountingRelay, StepCounter
from nia_core.sessions import Message, Replied, open_store, run_turn
from nia_core.sessions.check import session_problems
from nia_core.sessions.postgres import MIGRATIONS, SCHEMA_VERSION

from .pg_runners import context_for, provider_for, set_value

pytestmark = pytest.mark.postgres


def sql(url: str, query: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(query, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def test_a_turn_takes_four_round_trips_and_five_with_a_system_message(pg_url: str, tmp_path: Path) -> None:
    """Counted as the client's requests that end in a wait (``Sync``, ``Query``): exact whatever the load.

    The benchmark also counts the server's answers on the wire (the same figures on a quiet machine).
    """
    set_value(tmp_path, "v0")
    relay = CountingRelay(pg_url)
    try:
        with open_store(relay.url) as store:
            session_id = store.create_session(str(tmp_path), "echo/echo").id
            for turn in range(2):  # the first initializes the epoch
                run_turn(store, session_id, context_for, provider_for, text=f"warm-up {turn}")
            counter = StepCounter(store, relay)
            connections = relay.connections
            syncs = []
            for turn in range(8):
                if turn % 4 == 3:
                    set_value(tmp_path, f"v{turn}")
                before = relay.syncs
                result = run_turn(store, session_id, context_for, provider_for, text=f"turn {turn}")
                assert isinstance(result, Replied)
                syncs.append(relay.syncs - before)
            calls = dict(counter.calls)
            connected = relay.connections - connections
            updates = [h for h in store.history(session_id) if h.message.kind == "system_update"]
    finally:
        relay.close()
    assert len(updates) == 2 and connected == 0
    assert syncs == [4, 4, 4, 5, 4, 4, 4, 5]  # one read, one per write (a system message is one more)
    # The boundary's other reads come with the writes: no state() or history() at all.
    assert calls == {"view": 26, "enqueue": 8, "promote": 8, "append": 8, "admit_update": 2}


def test_a_database_of_the_previous_schema_is_migrated_and_its_sessions_carry_on(pg_url: str, tmp_path: Path) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version (version) VALUES (2)")
        for _, statements in MIGRATIONS[:2]:
            for statement in statements:
                conn.execute(statement)  # type: ignore[arg-type]
        conn.execute(
            "INSERT INTO sessions (id, location, model, created) VALUES ('old1', %s, 'echo/echo', '2025-01-01')",
            (str(tmp_path),),
        )
        conn.execute(
            "INSERT INTO pending (session_id, kind, body, created) VALUES ('old1', 'user', %s, '2025-01-01')",
            (json.dumps({"text": "from before"}),),
        )
    set_value(tmp_path, "first")
    with open_store(pg_url) as store:
        assert sql(pg_url, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
        assert isinstance(run_turn(store, "old1", context_for, provider_for), Replied)
        set_value(tmp_path, "second")
        assert isinstance(run_turn(store, "old1", context_for, provider_for, text="again"), Replied)
        kinds = [(h.message.kind, h.message.text.split("\n")[0]) for h in store.history("old1")]
        assert [k for k, _ in kinds] == ["user", "assistant", "user", "system_update", "assistant"]
        assert kinds[0][1] == "from before" and session_problems(store, "old1") == []


def test_a_write_whose_token_was_taken_by_a_recovery_never_commits(pg_url: str) -> None:
    """The tombstone: once a recovery declared a write aborted, that write fails should it still run."""
    with open_store(pg_url) as store:
        session_id = store.create_session("/p", "echo/echo").id
        store.append(session_id, Message("assistant", "first"))
    [(recorded,)] = sql(pg_url, "SELECT result FROM nia_writes")
    assert json.loads(str(recorded))[0] == 1  # the write's result, kept with its token
    token = secrets.token_hex(16)
    sql(pg_url, "INSERT INTO nia_writes (token) VALUES (%s)", (token,))  # what a recovery does
    late = "SELECT nia_append(%s, %s, 'assistant', '{\"text\": \"late\"}', NULL, 'now')"
    with pytest.raises(psycopg.errors.UniqueViolation):
        sql(pg_url, late, (token, session_id))
    with open_store(pg_url) as store:
        assert [h.message.text for h in store.history(session_id)] == ["first"]
