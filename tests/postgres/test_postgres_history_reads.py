"""PostgreSQL reads only what a process has not validated (#28): a turn's reads do not grow with its history.

The rows a process validated are kept with the session's history mark
(nia_core/sessions/histories.py); ``nia_view`` sends the rows after them while
the mark is unchanged, and leaves out the baseline's segment list and the
snapshot's manifest the reader already holds. Bytes are counted on the wire by
the benchmark's relay (bench/round_trips.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from bench.round_trips import CountingRelay
from nia_core.model import Message
from nia_core.sessions import Replied, open_store, run_turn
from nia_core.sessions.check import session_problems
from nia_core.sessions.postgres import MIGRATIONS, SCHEMA_VERSION
from nia_core.sessions.serialize import message_body

from .pg_runners import context_for, provider_for, set_value

pytestmark = pytest.mark.postgres


def sql(url: str, query: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(query, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def grow(url: str, session_id: str, pairs: int) -> None:
    """Append question/answer pairs as turns store them, in one transaction (a long session, quickly)."""
    [(last,)] = sql(url, "SELECT max(seq) FROM messages WHERE session_id = %s", (session_id,))
    question, answer = message_body(Message("user", "and then?")), message_body(Message("assistant", "x" * 300))
    rows = [
        (session_id, seq, 1, kind, body)
        for i in range(pairs)
        for seq, kind, body in ((int(last) + 2 * i + 1, "user", question), (int(last) + 2 * i + 2, "assistant", answer))  # type: ignore[call-overload]
    ]
    with psycopg.connect(url) as conn, conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO messages (session_id, seq, epoch, kind, body, created) VALUES (%s, %s, %s, %s, %s, 'now')",
            rows,
        )


def bytes_per_turn(relay: CountingRelay, session_id: str, turns: int) -> float:
    with open_store(relay.url) as store:
        run_turn(store, session_id, context_for, provider_for, text="the first read takes every row")
        before = relay.received
        for turn in range(turns):
            assert isinstance(run_turn(store, session_id, context_for, provider_for, text=f"turn {turn}"), Replied)
        return (relay.received - before) / turns


def test_a_turn_reads_no_more_from_a_long_history_than_from_a_short_one(pg_url: str, tmp_path: Path) -> None:
    set_value(tmp_path, "v0")
    relay = CountingRelay(pg_url)
    try:
        with open_store(pg_url) as store:
            session_id = store.create_session(str(tmp_path), "echo/echo").id
            run_turn(store, session_id, context_for, provider_for, text="hello")
        short = bytes_per_turn(relay, session_id, 5)
        grow(pg_url, session_id, 500)
        long = bytes_per_turn(relay, session_id, 5)
        with open_store(pg_url) as store:
            assert len(store.history(session_id)) == 2 + 12 + 1000 + 12 and session_problems(store, session_id) == []
    finally:
        relay.close()
    assert long < 1.2 * short  # one message of the thousand added is 300 bytes: every row would be 300 KB


def test_a_database_of_schema_3_is_migrated_and_a_runner_of_that_nia_keeps_working(pg_url: str, tmp_path: Path) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version (version) VALUES (3)")
        for version, statements in MIGRATIONS:
            if version <= 3:
                for statement in statements:
                    conn.execute(statement)  # type: ignore[arg-type]
        conn.execute(
            "INSERT INTO sessions (id, location, model, created) VALUES ('old1', %s, 'echo/echo', 'then')",
            (str(tmp_path),),
        )
        for seq, kind, text in ((1, "user", "from before"), (2, "assistant", "an old answer")):
            conn.execute(
                "INSERT INTO messages (session_id, seq, epoch, kind, body, created)"
                " VALUES ('old1', %s, 1, %s, %s, 'x')",
                (seq, kind, json.dumps({"text": text})),
            )
    set_value(tmp_path, "first")
    with open_store(pg_url) as store:
        assert sql(pg_url, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
        [(mark,)] = sql(pg_url, "SELECT history_mark FROM sessions")
        assert isinstance(mark, str) and mark
        assert isinstance(run_turn(store, "old1", context_for, provider_for, text="again"), Replied)
        # The previous nia's functions stay (a runner started before the migration carries on until it restarts).
        [(answer,)] = sql(
            pg_url, "SELECT nia_enqueue('tok-1', 'old1', 'user', %s, 'now')", (json.dumps({"text": "late"}),)
        )
        assert answer["ok"] is None and len(answer["view"][4]) == 4  # type: ignore[index]
        sql(pg_url, """UPDATE messages SET body = '{"text": "edited"}' WHERE seq = 1""")
        history = [h.message.text.split("\n")[0] for h in store.history("old1")]
        assert history[:3] == ["edited", "an old answer", "again"]
        assert session_problems(store, "old1") == []


def test_a_database_of_schema_4_is_migrated_and_a_prefix_reads_the_ids_index(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version (version) VALUES (4)")
        for version, statements in MIGRATIONS:
            if version <= 4:
                for statement in statements:
                    conn.execute(statement)  # type: ignore[arg-type]
        conn.execute(
            "INSERT INTO sessions (id, location, model, created)"
            " SELECT md5(n::text), '/p', 'echo/echo', 'then' FROM generate_series(1, 5000) n"
        )
    with open_store(pg_url) as store:
        assert sql(pg_url, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
        [(named,)] = sql(pg_url, "SELECT md5('4321')")
        assert store.resolve(str(named)[:7]) == named
        sql(pg_url, "ANALYZE sessions")
        plan = sql(
            pg_url,
            'EXPLAIN SELECT id FROM sessions WHERE id COLLATE "C" >= %s AND id COLLATE "C" < %s'
            ' AND starts_with(id, %s) ORDER BY id COLLATE "C" LIMIT 6',
            ("abc", "abd", "abc"),
        )
        assert "sessions_by_id" in " ".join(str(row[0]) for row in plan)
