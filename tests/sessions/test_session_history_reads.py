"""A history is read once per process; later reads take only the new rows, and what changed otherwise is seen.

Both stores keep the rows a process validated with the session's *history
mark*, which the database replaces whenever a stored message is changed,
deleted or inserted anywhere but at the end (nia_core/sessions/histories.py).
These tests change a session from outside the reading store (another
connection, a SQL shell) after it has read and kept the history, and check
that its next read returns exactly what is stored, validated.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from nia_core.context import Snapshot, SnapshotEntry
from nia_core.sessions import CorruptRecord, Message, Store, ToolCall

from .session_tamper import tamper

SNAP = Snapshot({"acme/a": SnapshotEntry('"one"', "a is gone")})


def started(store: Store, session_id: str | None = None) -> str:
    record = store.create_session("/p", "echo/echo", session_id=session_id)
    store.start_epoch(
        record.id,
        expected_revision=record.revision,
        location="/p",
        model="echo/echo",
        segments=("a is one.",),
        snapshot=SNAP,
        reason="test",
    )
    return record.id


def talk(store: Store, session_id: str, *pairs: tuple[str, str]) -> None:
    for question, answer in pairs:
        store.enqueue(session_id, Message("user", question))
        store.promote(session_id, location="/p")
        store.append(session_id, Message("assistant", answer))


def texts(store: Store, session_id: str) -> list[str]:
    return [entry.message.text for entry in store.history(session_id)]


def test_rows_appended_by_another_connection_follow_those_read_before(
    store: Store, reopen: Callable[[], Store]
) -> None:
    session_id = started(store)
    talk(store, session_id, ("q1", "a1"))
    assert texts(store, session_id) == ["q1", "a1"]
    talk(reopen(), session_id, ("q2", "a2"))
    assert texts(store, session_id) == ["q1", "a1", "q2", "a2"]
    view = store.view(session_id)
    assert [m.text for m in view.messages] == ["q1", "a1", "q2", "a2"] and view.messages[2].seq == 3


def test_an_old_row_edited_by_hand_after_it_was_read_is_read_again_and_validated(store: Store, store_url: str) -> None:
    session_id = started(store)
    talk(store, session_id, ("q1", "a1"), ("q2", "a2"))
    assert texts(store, session_id) == ["q1", "a1", "q2", "a2"]
    tamper(store_url, f"UPDATE messages SET body = '{json.dumps({'text': 'q1 edited'})}' WHERE seq = 1")
    assert texts(store, session_id) == ["q1 edited", "a1", "q2", "a2"]
    tamper(store_url, f"UPDATE messages SET body = 'not json' WHERE session_id = '{session_id}' AND seq = 2")
    with pytest.raises(CorruptRecord, match=rf"^session {session_id}: message #2 has a damaged body"):
        store.history(session_id)
    with pytest.raises(CorruptRecord, match="message #2 has a damaged body"):
        store.view(session_id)


def test_a_new_row_damaged_by_hand_is_refused_by_the_read_that_finds_it(store: Store, store_url: str) -> None:
    session_id = started(store)
    talk(store, session_id, ("q1", "a1"))
    assert texts(store, session_id) == ["q1", "a1"]
    tamper(
        store_url,
        "INSERT INTO messages (session_id, seq, epoch, kind, body, created)"
        f" VALUES ('{session_id}', 3, 1, 'telepathy', '{{}}', 'now')",
    )
    with pytest.raises(CorruptRecord, match="message #3 has unknown kind 'telepathy'"):
        store.view(session_id)


def test_deleted_rows_and_a_row_slipped_in_before_the_last_are_seen(store: Store, store_url: str) -> None:
    session_id = started(store)
    talk(store, session_id, ("q1", "a1"), ("q2", "a2"))
    assert len(texts(store, session_id)) == 4
    tamper(store_url, f"DELETE FROM messages WHERE session_id = '{session_id}' AND seq IN (2, 3)")
    assert texts(store, session_id) == ["q1", "a2"]
    body = json.dumps({"text": "slipped in"})
    tamper(
        store_url,
        "INSERT INTO messages (session_id, seq, epoch, kind, body, created)"
        f" VALUES ('{session_id}', 2, 1, 'assistant', '{body}', 'now')",
    )
    assert texts(store, session_id) == ["q1", "slipped in", "a2"]


def test_a_session_deleted_and_created_again_under_its_id_is_read_anew(
    store: Store, reopen: Callable[[], Store]
) -> None:
    """What an attached session goes through when ``nia session prune`` removes it and its host comes back."""
    session_id = started(store, "attached-1")
    talk(store, session_id, ("old question", "old answer"), ("q", "a"))
    assert len(texts(store, session_id)) == 4
    other = reopen()
    other.delete_session(session_id)
    started(other, "attached-1")
    talk(other, session_id, ("new question", "new answer"))
    assert texts(store, session_id) == ["new question", "new answer"]
    assert [m.seq for m in store.view(session_id).messages] == [1, 2]


def test_the_tail_is_the_last_reply_and_what_followed_it(store: Store, reopen: Callable[[], Store]) -> None:
    session_id = started(store)
    assert store.view(session_id, tail=True).history == ()
    store.admit_update(
        session_id, expected_revision=store.session(session_id).revision, epoch=1, text="a is two", snapshot=SNAP
    )
    fresh = reopen()
    for reader in (store, fresh):  # read before in full, and never read
        view = reader.view(session_id, tail=True)
        assert view.tail and view.history == ()  # no reply yet: nothing decides a tool call
    call = ToolCall("c1", "read", {"path": "x"})
    talk(store, session_id, ("q1", "a1"))
    store.enqueue(session_id, Message("user", "q2"))
    store.promote(session_id, location="/p")
    store.append(session_id, Message("assistant", "", (call,)))
    store.enqueue(session_id, Message("tool_result", "x holds 1", tool_call_id="c1"))
    store.promote(session_id, location="/p")
    for reader in (store, reopen()):
        view = reader.view(session_id, tail=True)
        assert [(m.kind, m.text) for m in view.messages] == [("assistant", ""), ("tool_result", "x holds 1")]
        assert [m.seq for m in view.messages] == [5, 6] and view.state == reader.state(session_id)
    assert len(store.view(session_id).history) == 6  # the whole history is still there for a turn


def test_a_database_of_the_previous_schema_is_migrated_and_its_history_marked(
    tmp_path: pytest.TempPathFactory,
) -> None:
    """SQLite; PostgreSQL's migration is tested in tests/postgres/test_postgres_round_trips.py."""
    import sqlite3

    from nia_core.sessions import SCHEMA_VERSION, open_store
    from nia_core.sessions.sqlite import MIGRATIONS

    path = f"{tmp_path}/old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (3)")
    for version, statements in MIGRATIONS:
        if version <= 3:
            for statement in statements:
                conn.execute(statement)
    conn.execute("INSERT INTO sessions (id, location, model, created) VALUES ('old1', '/p', 'echo/echo', 'then')")
    for seq, kind, text in ((1, "user", "from before"), (2, "assistant", "an old answer")):
        conn.execute(
            "INSERT INTO messages (session_id, seq, epoch, kind, body, created) VALUES ('old1', ?, 1, ?, ?, 'then')",
            (seq, kind, json.dumps({"text": text})),
        )
    conn.commit()
    conn.close()
    with open_store(f"sqlite:///{path}") as store:
        assert texts(store, "old1") == ["from before", "an old answer"]
        tamper(f"sqlite:///{path}", """UPDATE messages SET body = '{"text": "edited"}' WHERE seq = 2""")
        assert texts(store, "old1") == ["from before", "edited"]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    [(mark,)] = conn.execute("SELECT history_mark FROM sessions").fetchall()
    conn.close()
    assert isinstance(mark, str) and len(mark) == 32
