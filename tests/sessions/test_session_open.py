"""Opening the store: URLs, the default file, migrations; and the offline echo provider."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from nia_core.providers.builtin import get_provider
from nia_core.providers.echo import EchoProvider
from nia_core.sessions import (
    SCHEMA_VERSION,
    Message,
    ModelRequest,
    SQLiteStore,
    UnsupportedDatabase,
    db_url,
    default_db_path,
    open_store,
)


@pytest.mark.parametrize("form", ["{p}", "sqlite:///{p}", "sqlite:////{p}", "sqlite:///{p}?timeout=0.5"])
def test_every_spelling_of_a_sqlite_url_opens_the_same_file(tmp_path: Path, form: str) -> None:
    path = tmp_path / "x" / "nia.db"
    with open_store(form.format(p=str(path).lstrip("/") if form.startswith("sqlite:////") else path)) as store:
        assert isinstance(store, SQLiteStore) and store.path == path
        store.create_session("/p", "echo/echo", session_id="s1")
    with open_store(str(path)) as again:
        assert again.session("s1").location == "/p"


def test_timeout_and_synchronous_options(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/a.db?timeout=0.25&synchronous=normal") as store:
        assert isinstance(store, SQLiteStore) and store.timeout == 0.25
    with pytest.raises(UnsupportedDatabase, match="timeout must be a number"):
        open_store(f"sqlite:///{tmp_path}/a.db?timeout=soon")
    with pytest.raises(UnsupportedDatabase, match="synchronous must be full or normal"):
        open_store(f"sqlite:///{tmp_path}/a.db?synchronous=off")
    with pytest.raises(UnsupportedDatabase, match="names no file"):
        open_store("sqlite:///")


def test_the_default_database_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_db_path() == tmp_path / "nia" / "nia.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_db_path() == tmp_path / ".local" / "share" / "nia" / "nia.db"
    assert db_url({"NIA_DB": "sqlite:///elsewhere.db"}) == "sqlite:///elsewhere.db"
    assert db_url({}) == str(default_db_path())


def test_a_new_database_is_created_at_the_latest_schema_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "nia.db"
    SQLiteStore(path).close()
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"sessions", "epochs", "messages", "pending", "snapshots", "blobs"} <= tables


def test_an_interrupted_first_migration_is_completed(tmp_path: Path) -> None:
    path = tmp_path / "nia.db"
    with sqlite3.connect(path) as conn:  # a database left at version 0 by a crash before the first migration
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (0)")
    with SQLiteStore(path) as store:
        assert store.create_session("/p", "echo/echo").epoch is None


def test_content_addressing_stores_a_shared_value_once(tmp_path: Path) -> None:
    from nia_core.context import Snapshot, SnapshotEntry

    docs = '"' + "x" * 100_000 + '"'
    path = tmp_path / "nia.db"
    with SQLiteStore(path) as store:
        for index in range(20):
            snapshot = Snapshot({"acme/docs": SnapshotEntry(docs), "acme/where": SnapshotEntry(f'"{index}"')})
            record = store.create_session(f"/p{index}", "echo/echo")
            store.start_epoch(
                record.id,
                expected_revision=0,
                location=f"/p{index}",
                model="echo/echo",
                segments=["x" * 100_000, "\n\n", f"at {index}"],
                snapshot=snapshot,
                reason="test",
            )
    with sqlite3.connect(path) as conn:
        big = conn.execute("SELECT COUNT(*) FROM blobs WHERE length(data) >= 100000").fetchone()[0]
        stored = conn.execute("SELECT SUM(length(data)) FROM blobs").fetchone()[0]
    assert big == 2  # the docs value and the docs part of the baseline, once each for 20 sessions
    assert stored < 2 * 100_002 + 20 * 50


def test_echo_answers_with_a_summary_of_the_request() -> None:
    request = ModelRequest(
        "s1",
        "echo/echo",
        "You are helpful.",
        (Message("user", "hi", seq=1), Message("system_update", "The date is now Monday.", seq=2)),
    )
    echo = get_provider("echo/echo")
    assert isinstance(echo, EchoProvider)
    reply = echo.send(request)
    assert reply.text.splitlines() == [
        f"[echo/echo] baseline 16 bytes, sha256 {hashlib.sha256(b'You are helpful.').hexdigest()[:16]}",
        "messages: 2 (1 system_update, 1 user)",
        "latest system update: The date is now Monday.",
        "you said: hi",
    ]
    assert echo.lower(request) == {
        "model": "echo",
        "system": "You are helpful.",
        "messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "The date is now Monday."}],
    }
    streamed: list[str] = []
    assert echo.send(request, stream=streamed.append).text == "".join(streamed)
