"""``nia db migrate`` / ``nia db check`` on both stores, and ``NIA_DB=postgresql://…`` for every session command."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner, Result

from nia_core.cli import cli
from nia_core.sessions import SCHEMA_VERSION

from .pg_runners import set_value

pytestmark = pytest.mark.postgres


def nia(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def sql(url: str, query: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(query)  # type: ignore[arg-type]


@pytest.fixture
def on_postgres(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("NIA_DB", pg_url)
    return pg_url


@pytest.fixture
def project(tmp_path: Path) -> Path:
    place = tmp_path / "project"
    place.mkdir()
    (place / "AGENTS.md").write_text("Use tabs.\n")
    return place


def test_migrate_creates_then_finds_nothing_to_do(on_postgres: str) -> None:
    first = nia("db", "migrate")
    assert first.exit_code == 0, first.output
    assert first.output.startswith("postgresql://postgres@127.0.0.1:") or first.output.startswith("postgresql://")
    assert first.output.rstrip().endswith(f"(PostgreSQL): created at schema version {SCHEMA_VERSION}")
    again = nia("db", "migrate")
    assert again.output.rstrip().endswith(f"(PostgreSQL): already at schema version {SCHEMA_VERSION}")


def test_migrate_brings_an_older_schema_up(on_postgres: str) -> None:
    sql(on_postgres, "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (0)")
    check = nia("db", "check")
    assert check.exit_code == 1
    assert f"is at schema version 0, this nia uses {SCHEMA_VERSION}; run: nia db migrate" in check.output
    result = nia("db", "migrate")
    assert result.exit_code == 0 and result.output.rstrip().endswith(
        f"migrated from schema version 0 to {SCHEMA_VERSION}"
    )


def test_check_leaves_an_empty_database_alone(on_postgres: str) -> None:
    result = nia("db", "check")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].endswith("has no nia tables yet; run: nia db migrate")
    assert result.output.splitlines()[-1].startswith("Error: postgresql://")
    with psycopg.connect(on_postgres) as conn:
        assert conn.execute("SELECT to_regclass('schema_version')").fetchone() == (None,)


def test_check_refuses_a_newer_schema(on_postgres: str) -> None:
    assert nia("db", "migrate").exit_code == 0
    sql(on_postgres, "UPDATE schema_version SET version = 7")
    for command in ("check", "migrate"):
        result = nia("db", command)
        assert result.exit_code == 1
        assert f"was written by a newer nia (schema version 7; this nia knows up to {SCHEMA_VERSION})" in result.output


def test_every_session_command_runs_on_postgres_and_check_finds_them_consistent(
    on_postgres: str, project: Path, tmp_path: Path
) -> None:
    created = nia("session", "new", "--location", str(project))
    assert created.exit_code == 0, created.output
    session_id = created.output.strip()
    assert nia("session", "send", session_id, "hello").exit_code == 0
    (project / "AGENTS.md").write_text("Use spaces.\n")
    sent = nia("session", "send", session_id[:6], "and now?")
    assert sent.exit_code == 0, sent.output
    view = json.loads(nia("session", "show", session_id, "--model-view", "--json").output)
    assert "Use tabs." in json.dumps(view) and "Use spaces." in json.dumps(view)
    assert nia("session", "compact", session_id).exit_code == 0
    assert nia("session", "switch-model", session_id, "echo/other").exit_code == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert nia("session", "move", session_id, str(elsewhere)).exit_code == 0
    assert nia("session", "send", session_id, "where am I?").exit_code == 0
    listed = nia("session", "list")
    assert listed.exit_code == 0 and session_id in listed.output
    history = nia("session", "show", session_id)
    assert history.exit_code == 0 and "where am I?" in history.output

    check = nia("db", "check")
    assert check.exit_code == 0, check.output
    assert check.output.splitlines()[-2:] == [
        f"schema version: {SCHEMA_VERSION} (current)",
        "sessions: 1 checked, all consistent",
    ]


def test_check_names_each_damaged_session(on_postgres: str, project: Path) -> None:
    ids = [nia("session", "new", "--location", str(project)).output.strip() for _ in range(3)]
    for session_id in ids:
        assert nia("session", "send", session_id, "hello").exit_code == 0
    sql(on_postgres, f"UPDATE messages SET kind = 'telepathy' WHERE session_id = '{ids[1]}' AND seq = 2")
    sql(on_postgres, f"DELETE FROM messages WHERE session_id = '{ids[2]}' AND seq = 1")
    result = nia("db", "check")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert f"session {ids[1]}: message #2 has unknown kind 'telepathy' (known: " in result.output
    assert f"session {ids[2]}: the history is not numbered 1..1 (missing [1])" in lines
    assert not any(ids[0] in line for line in lines)
    assert lines[-1] == "Error: 2 of 3 sessions have problems (listed above)"


def test_db_commands_work_on_sqlite_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: Path) -> None:
    path = tmp_path / "data" / "nia.db"
    monkeypatch.setenv("NIA_DB", f"sqlite://{path}")  # sqlite:// + an absolute path
    missing = nia("db", "check")
    assert missing.exit_code == 1 and missing.output.strip() == (
        f"Error: no database at {path} (NIA_DB); `nia db migrate` creates one"
    )
    assert not path.exists()
    assert nia("db", "migrate").output.strip() == f"{path} (SQLite): created at schema version {SCHEMA_VERSION}"
    assert nia("db", "migrate").output.strip() == f"{path} (SQLite): already at schema version {SCHEMA_VERSION}"
    set_value(project, 1)
    session_id = nia("session", "new", "--location", str(project)).output.strip()
    assert nia("session", "send", session_id, "hi").exit_code == 0
    check = nia("db", "check")
    assert check.exit_code == 0, check.output
    assert check.output.splitlines() == [
        f"database: {path} (SQLite)",
        f"schema version: {SCHEMA_VERSION} (current)",
        "sessions: 1 checked, all consistent",
    ]


def test_a_resident_holds_no_postgresql_connection_between_hooks(pg_url: str, pg_admin: str, tmp_path: Path) -> None:
    """A store that cannot say it is still the one it opened is closed after each hook, as in a hook's own process."""
    from tests.resident.world import World

    name = f"nia-resident-{tmp_path.name}"[:60]
    world = World(tmp_path / "shop")
    world.env["NIA_DB"] = f"{pg_url}&application_name={name}"
    world.started()
    try:
        assert "ACME-RULE: one" in (world.text(world.run("s", "SessionStart", "startup")) or "")
        assert world.log()[-1]["answered_by"] == "resident"
        with psycopg.connect(pg_admin, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)).fetchone()
        assert row is not None and row[0] == 0
    finally:
        world.nia("hook", "stop")
