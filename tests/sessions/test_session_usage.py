"""Each reply's usage and stop reason are stored with it, in both stores; schema 1 databases migrate."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from nia_core.sessions import SCHEMA_VERSION, Message, Store, Usage, open_store
from nia_core.sessions.replies import ReplyRecord
from nia_core.sessions.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from nia_core.sessions.store_errors import CorruptRecord
from tests.sessions.test_session_store import started

USAGE = Usage(input_tokens=12_345, output_tokens=210, cached_input_tokens=11_900, cache_write_tokens=310)


def test_a_reply_is_stored_with_its_usage_and_read_back(store: Store, reopen: Callable[[], Store]) -> None:
    session_id = started(store)
    store.enqueue(session_id, Message("user", "hi"))
    store.promote(session_id, location="/p")
    record = ReplyRecord("anthropic-messages/claude-sonnet-4-5", USAGE, "end_turn")
    stored = store.append(session_id, Message("assistant", "hello"), reply=record)
    assert not stored.refused
    store.append(session_id, Message("assistant", "no usage"))
    user, reply, bare = reopen().history(session_id)
    assert user.reply is None and bare.reply is None
    assert reply.reply == record
    assert reply.message.text == "hello"


def test_a_refusal_that_resets_the_turn_marks_the_message(store: Store, reopen: Callable[[], Store]) -> None:
    session_id = started(store)
    record = ReplyRecord("anthropic-messages/claude-sonnet-4-5", USAGE, "refusal", refusal=True, resets_turn=True)
    assert store.append(session_id, Message("assistant", "I can't"), reply=record).refused
    [entry] = reopen().history(session_id)
    assert entry.message.refused and entry.reply == record


def test_an_openai_refusal_does_not_reset_the_turn(store: Store) -> None:
    session_id = started(store)
    record = ReplyRecord("openai-chat/gpt-4.1", USAGE, "stop", refusal=True)
    store.append(session_id, Message("assistant", "I can't help with that."), reply=record)
    [entry] = store.history(session_id)
    assert not entry.message.refused and entry.reply is not None and entry.reply.refusal


def _schema_1_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (1)")
    for statement in SQLITE_MIGRATIONS[0][1]:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO sessions (id, location, model, created, revision, epoch, history_from)"
        " VALUES ('old1', '/p', 'echo/echo', '2025-01-01T00:00:00.000+00:00', 0, NULL, 0)"
    )
    conn.execute(
        "INSERT INTO messages (session_id, seq, epoch, kind, body, created)"
        " VALUES ('old1', 1, 1, 'assistant', '{\"text\":\"from before\"}', '2025-01-01T00:00:00.000+00:00')"
    )
    conn.commit()
    conn.close()


def test_a_schema_1_sqlite_database_migrates_and_old_replies_have_no_usage(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _schema_1_sqlite(path)
    with open_store(f"sqlite:///{path}") as store:
        [entry] = store.history("old1")
        assert entry.message.text == "from before" and entry.reply is None
        store.append("old1", Message("assistant", "new"), reply=ReplyRecord("echo/echo", USAGE))
        assert store.history("old1")[1].reply == ReplyRecord("echo/echo", USAGE)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_a_schema_1_postgres_database_migrates_and_old_replies_have_no_usage(postgres_url: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    from nia_core.sessions.postgres import MIGRATIONS as PG_MIGRATIONS

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version (version) VALUES (1)")
        for statement in PG_MIGRATIONS[0][1]:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO sessions (id, location, model, created) VALUES ('old1', '/p', 'echo/echo', '2025-01-01')"
        )
        conn.execute(
            "INSERT INTO messages (session_id, seq, epoch, kind, body, created)"
            " VALUES ('old1', 1, 1, 'assistant', '{\"text\":\"from before\"}', '2025-01-01')"
        )
    with open_store(postgres_url) as store:
        [entry] = store.history("old1")
        assert entry.message.text == "from before" and entry.reply is None
        store.append("old1", Message("assistant", "new"), reply=ReplyRecord("echo/echo", USAGE))
        assert store.history("old1")[1].reply == ReplyRecord("echo/echo", USAGE)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


@pytest.mark.parametrize(
    "stored",
    ["not json", '{"usage": {}}', '{"model": "x", "usage": {"input_tokens": -1}}', '{"model": "x", "usage": 3}', "7"],
)
def test_a_damaged_reply_record_names_the_session_and_row(tmp_path: Path, stored: str) -> None:
    path = tmp_path / "nia.db"
    with open_store(f"sqlite:///{path}") as store:
        session_id = started(store)
        store.append(session_id, Message("assistant", "hi"), reply=ReplyRecord("echo/echo", USAGE))
    conn = sqlite3.connect(path)
    value: object = int(stored) if stored.isdigit() else stored
    conn.execute("UPDATE messages SET reply = ?", (value,))
    conn.commit()
    conn.close()
    with open_store(f"sqlite:///{path}") as store, pytest.raises(CorruptRecord) as caught:
        store.history(session_id)
    assert session_id in str(caught.value) and "message #1 has a damaged reply record" in str(caught.value)


def test_the_usage_line_reads_as_the_issue_shows_it() -> None:
    from nia_core.runtime.usage import usage_line

    assert usage_line(USAGE) == "12,345 in · 11,900 cached (96%) · 310 written · 210 out"
    assert usage_line(Usage()) == "0 in · 0 cached · 0 written · 0 out"
