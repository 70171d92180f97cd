"""Damaged data and failing databases: a clear error naming the session, nothing stored changes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nia_core.cli import cli
from nia_core.providers.echo import EchoProvider
from nia_core.sessions import SCHEMA_VERSION, DatabaseFull, Message, Replied, SQLiteStore, run_turn

from .session_checks import problems
from .session_world import World


def nia(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return list(conn.iterdump())


def raw(path: Path, sql: str, *params: object) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(sql, params)
    conn.close()


@pytest.fixture
def session_id(tmp_path: Path, cli_env: dict[str, str]) -> str:
    """A session with one turn and one admitted system message, made through the CLI."""
    (tmp_path / "AGENTS.md").write_text("Rule one.\n")
    session_id = nia("session", "new", "--location", str(tmp_path)).output.strip()
    assert nia("session", "send", session_id, "hello").exit_code == 0
    (tmp_path / "AGENTS.md").write_text("Rule two.\n")
    assert nia("session", "send", session_id, "again").exit_code == 0
    return session_id


def attempts_change_nothing(path: Path, session_id: str, expected: str) -> None:
    before = dump(path)
    for args in (["send", session_id, "more"], ["send", session_id], ["compact", session_id]):
        result = nia("session", *args)
        assert result.exit_code == 1, result.output
        assert result.output.startswith(f"Error: session {session_id}: ")
        assert expected in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1
    assert dump(path) == before


def test_a_corrupt_snapshot_value(sqlite_path: Path, session_id: str) -> None:
    raw(sqlite_path, "UPDATE blobs SET data = '\"tampered\"' WHERE data LIKE '%Rule two%' AND data LIKE '[%'")
    attempts_change_nothing(
        sqlite_path, session_id, "stored snapshot is corrupt: the value of 'nia/instructions' in snapshot"
    )
    show = nia("session", "show", session_id, "--model-view")
    assert show.exit_code == 1 and "does not match its hash" in show.output


def test_a_corrupt_snapshot_manifest(sqlite_path: Path, session_id: str) -> None:
    raw(sqlite_path, "UPDATE snapshots SET manifest = 'not json'")
    attempts_change_nothing(sqlite_path, session_id, "does not match its hash")


def test_a_corrupt_baseline(sqlite_path: Path, session_id: str) -> None:
    raw(
        sqlite_path,
        "UPDATE blobs SET data = 'Rule zero.' || char(10) WHERE data LIKE '%Rule one%' AND data NOT LIKE '[%'",
    )
    attempts_change_nothing(sqlite_path, session_id, "the baseline of epoch 1 is corrupt")


def test_an_unknown_message_kind(sqlite_path: Path, session_id: str) -> None:
    raw(sqlite_path, "UPDATE messages SET kind = 'telepathy' WHERE seq = 2")
    attempts_change_nothing(sqlite_path, session_id, "message #2 has unknown kind 'telepathy'")
    show = nia("session", "show", session_id)
    assert show.output.startswith(f"Error: session {session_id}: message #2 has unknown kind 'telepathy' (known: ")


def test_a_database_from_a_newer_nia(sqlite_path: Path, session_id: str) -> None:
    raw(sqlite_path, "UPDATE schema_version SET version = 99")
    before = dump(sqlite_path)
    result = nia("session", "send", session_id, "hi")
    assert result.exit_code == 1
    assert result.output == (
        f"Error: session {session_id}: the database {sqlite_path} was written by a newer nia (schema version 99; "
        f"this nia knows up to {SCHEMA_VERSION}); upgrade nia, or set NIA_DB to use another database\n"
    )
    listed = nia("session", "list")
    assert listed.exit_code == 1 and listed.output.startswith(f"Error: the database {sqlite_path} was written by")
    assert dump(sqlite_path) == before


def test_a_file_that_is_not_a_nia_database(
    tmp_path: Path, cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other.db"
    raw(other, "CREATE TABLE people (name TEXT)")
    monkeypatch.setenv("NIA_DB", str(other))
    result = nia("session", "list")
    assert result.output == f"Error: {other} is not a nia database (it has tables people but no schema_version)\n"
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite at all" * 100)
    monkeypatch.setenv("NIA_DB", f"sqlite:///{garbage}")
    result = nia("session", "list")
    assert result.exit_code == 1 and "is damaged or not a database" in result.output


def test_an_unsupported_database_url(cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIA_DB", "mysql://localhost/nia")
    result = nia("session", "list")
    assert result.exit_code == 2 and "unsupported scheme 'mysql'" in result.output
    monkeypatch.setenv("NIA_DB", "sqlite:///x.db?color=red")
    assert "unknown option 'color'" in nia("session", "list").output


def test_a_locked_database(sqlite_path: Path, session_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIA_DB", f"sqlite:///{sqlite_path}?timeout=0.2")
    before = dump(sqlite_path)
    holder = sqlite3.connect(sqlite_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process is writing and does not let go
    try:
        result = nia("session", "send", session_id, "hi")
        assert result.exit_code == 1
        assert result.output == (
            f"Error: session {session_id}: cannot keep the input: the database {sqlite_path} is locked by "
            "another process (waited 0.2s); nothing was changed, try again\n"
        )
        assert nia("session", "show", session_id).exit_code == 0  # readers are not blocked
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert dump(sqlite_path) == before
    assert nia("session", "send", session_id, "hi").exit_code == 0


def test_a_full_disk(tmp_path: Path) -> None:
    path = tmp_path / "full.db"
    world = World()
    world.set("/p", "acme/docs", "short")
    echo = EchoProvider()
    with SQLiteStore(path) as store:
        session_id = store.create_session("/p", "echo/echo").id
        run_turn(store, session_id, world.context_for, lambda _m: echo, text="hi")
        pages = sqlite3.connect(path).execute("PRAGMA page_count").fetchone()[0]
        before = dump(path)
        with SQLiteStore(path, pragmas={"max_page_count": pages}) as full:
            with pytest.raises(DatabaseFull) as caught:
                run_turn(full, session_id, world.context_for, lambda _m: echo, text="y" * 200_000)
            assert str(caught.value) == (
                f"session {session_id}: cannot keep the input: the database {path} or its disk is full; "
                "nothing was changed"
            )
            assert dump(path) == before

            store.enqueue(session_id, Message("user", "more"))
            epoch_before = store.epochs(session_id)
            world.set("/p", "acme/docs", "x" * 200_000)  # the update needs room the database does not have
            with pytest.raises(DatabaseFull, match=f"session {session_id}: cannot store the mid-conversation"):
                run_turn(full, session_id, world.context_for, lambda _m: echo)
        # the input was promoted; the system message and its snapshot were not, neither one
        history = store.history(session_id)
        assert [h.message.kind for h in history] == ["user", "assistant", "user"]
        assert store.epochs(session_id) == epoch_before
        assert problems(store, session_id) == []
        result = run_turn(store, session_id, world.context_for, lambda _m: echo)  # room again: admitted now
        assert isinstance(result, Replied) and result.boundary.admission.outcome == "updated"
        assert [m.kind for m in result.boundary.request.messages][-2:] == ["user", "system_update"]
