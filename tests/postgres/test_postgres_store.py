"""What only the PostgreSQL store does: URLs, pooling, migrations, sharing blobs, mapping server errors.

Everything every store does is in the conformance suite (tests/sessions), which
runs against PostgreSQL too.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
import urllib.parse
from pathlib import Path

import psycopg
import pytest

from nia_core.context import Snapshot, SnapshotEntry
from nia_core.sessions import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION
from nia_core.sessions import (
    CorruptRecord,
    DatabaseLocked,
    Message,
    NewerSchema,
    StoreError,
    UnsupportedDatabase,
    open_store,
)
from nia_core.sessions.postgres import NIA_TABLES, SCHEMA_VERSION, PostgresStore

from . import pg_server
from .pg_faults import SessionLock

pytestmark = pytest.mark.postgres

DOC = Snapshot({"acme/docs": SnapshotEntry('"' + "x" * 100_000 + '"')})


def sql(url: str, query: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(query, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def start(store: PostgresStore, session_id: str, snapshot: Snapshot = DOC) -> None:
    store.start_epoch(
        session_id,
        expected_revision=store.session(session_id).revision,
        location="/p",
        model="echo/echo",
        segments=["You are here."],
        snapshot=snapshot,
        reason="test",
    )


# -- URLs and connections -----------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_both_url_schemes_open_the_postgres_store_and_hide_the_password(pg_url: str, scheme: str) -> None:
    parts = urllib.parse.urlsplit(pg_url)
    url = urllib.parse.urlunsplit(
        parts._replace(scheme=scheme, netloc=f"{parts.username}:s3cret@{parts.netloc.split('@')[1]}")
    )
    with open_store(url) as store:
        assert isinstance(store, PostgresStore)
        assert "s3cret" not in store.url and "s3cret" not in repr(store)
        assert store.url == f"postgresql://{parts.username}@{parts.hostname}:{parts.port}{parts.path}"


def test_nia_url_options_are_read_and_not_passed_to_libpq(pg_url: str) -> None:
    with open_store(pg_url + "&timeout=3.5&pool_size=2") as store:
        assert isinstance(store, PostgresStore)
        assert store.timeout == 3.5
        assert store._pool.max_size == 2
    for bad in ("timeout=soon", "pool_size=0", "timeout=-1"):
        with pytest.raises(UnsupportedDatabase, match="timeout must be a positive number"):
            open_store(f"{pg_url}&{bad}")


def test_an_unreachable_server_is_one_clear_error_without_the_password() -> None:
    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql://nia:hunter2@127.0.0.1:{pg_server.free_port()}/nia")
    message = str(caught.value)
    assert message.startswith("cannot open the database: cannot reach the database postgresql://nia@127.0.0.1:")
    assert "refused" in message.lower() and "hunter2" not in message and "\n" not in message


def test_a_missing_psycopg_is_named_with_the_extra_to_install(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["psycopg"] = sys.modules["psycopg_pool"] = None  # as if not installed
        from nia_core.cli import main
        main()
        """
    )
    env = dict(os.environ, NIA_DB="postgresql://nia@127.0.0.1/nia")

    def nia(*args: str, **env_overrides: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, *args],  # argv[1:] are nia's arguments
            env={**env, **env_overrides},
            capture_output=True,
            text=True,
            timeout=60,
        )

    failed = nia("session", "list")
    assert failed.returncode == 2
    assert failed.stderr.strip() == (
        "Error: NIA_DB is a PostgreSQL URL but psycopg is not installed;"
        " install it with: pip install 'psycopg[binary,pool]>=3.2'"
    )
    # nia itself works without it: the SQLite store needs nothing else.
    ok = nia("db", "migrate", NIA_DB=str(tmp_path / "nia.db"))
    assert ok.returncode == 0, ok.stderr


# -- migrations ---------------------------------------------------------------------------


def test_a_fresh_schema_is_migrated_to_the_same_version_as_sqlite(pg_url: str) -> None:
    assert SCHEMA_VERSION == SQLITE_SCHEMA_VERSION
    with open_store(pg_url) as store:
        assert isinstance(store, PostgresStore) and store.schema_version == SCHEMA_VERSION
    assert sql(pg_url, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
    tables = {row[0] for row in sql(pg_url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
    assert tables == {*NIA_TABLES, "schema_version"}


def _open_and_close(url: str) -> None:
    PostgresStore(url).close()
    os._exit(0)


def test_runners_starting_together_migrate_once(pg_url: str) -> None:
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_open_and_close, args=(pg_url,)) for _ in range(6)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
    assert [p.exitcode for p in processes] == [0] * 6
    assert sql(pg_url, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]


def test_unmigrated_then_migrated_on_request(pg_url: str) -> None:
    store = PostgresStore(pg_url, migrate=False)
    try:
        assert store.schema_version is None
        assert store.migrate() == (None, SCHEMA_VERSION)
        assert store.migrate() == (SCHEMA_VERSION, SCHEMA_VERSION)
        assert store.create_session("/p", "echo/echo").epoch is None
    finally:
        store.close()


def test_a_database_from_a_newer_nia_is_refused_untouched(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    sql(pg_url, "UPDATE schema_version SET version = 99")
    with pytest.raises(
        NewerSchema, match=rf"written by a newer nia \(schema version 99; this nia knows up to {SCHEMA_VERSION}\)"
    ):
        open_store(pg_url)
    assert sql(pg_url, "SELECT version FROM schema_version") == [(99,)]


def test_foreign_tables_without_a_version_are_not_taken_for_nia(pg_url: str) -> None:
    sql(pg_url, "CREATE TABLE sessions (id int)")
    with pytest.raises(StoreError, match=r"is not a nia database \(it has tables sessions but no schema_version\)"):
        open_store(pg_url)


# -- content addressing -------------------------------------------------------------------


def _sessions_sharing_docs(url: str, count: int) -> None:
    with PostgresStore(url) as store:
        for _ in range(count):
            start(store, store.create_session("/p", "echo/echo").id)  # type: ignore[arg-type]
    os._exit(0)


def test_sessions_in_many_processes_store_a_shared_document_once(pg_url: str) -> None:
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_sessions_sharing_docs, args=(pg_url, 10)) for _ in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
    assert [p.exitcode for p in processes] == [0] * 4
    assert sql(pg_url, "SELECT count(*) FROM sessions") == [(40,)]
    assert sql(pg_url, "SELECT count(*) FROM snapshots") == [(1,)]
    # the document and the one baseline segment, each once
    assert sql(pg_url, "SELECT count(*), sum(length(data)) FROM blobs") == [(2, len(DOC["acme/docs"].value) + 13)]
    with open_store(pg_url) as store:
        some = store.sessions()[17].id
        state = store.state(some)
        assert state.epoch is not None and state.epoch.snapshot == DOC and state.epoch.baseline == "You are here."


def test_a_damaged_row_is_named_and_nothing_is_changed(pg_url: str) -> None:
    with open_store(pg_url) as store:
        session_id = store.create_session("/p", "echo/echo").id
        start(store, session_id)  # type: ignore[arg-type]
        store.append(session_id, Message("assistant", "hi"))
    sql(pg_url, "UPDATE blobs SET data = convert_to('\"tampered\"', 'UTF8') WHERE length(data) > 1000")
    sql(pg_url, "UPDATE messages SET kind = 'telepathy' WHERE seq = 1")
    with open_store(pg_url) as store:
        with pytest.raises(CorruptRecord, match=rf"^session {session_id}: stored snapshot is corrupt: the value of"):
            store.state(session_id)
        with pytest.raises(CorruptRecord, match=rf"^session {session_id}: message #1 has unknown kind 'telepathy'"):
            store.history(session_id)
    assert sql(pg_url, "SELECT kind FROM messages") == [("telepathy",)]


def test_a_session_id_already_taken_is_refused(pg_url: str) -> None:
    with open_store(pg_url) as store:
        store.create_session("/p", "echo/echo", session_id="same")
        with pytest.raises(StoreError, match=r"^session same: a session with this id already exists"):
            store.create_session("/q", "echo/echo", session_id="same")
        assert store.session("same").location == "/p"


# -- server errors --------------------------------------------------------------------------


def test_waiting_longer_than_lock_timeout_for_a_session_is_database_locked(pg_url: str) -> None:
    with open_store(pg_server.with_setting(pg_url, "lock_timeout", 100)) as store:
        session_id = store.create_session("/p", "echo/echo").id
        lock = SessionLock(pg_url, session_id)
        try:
            with pytest.raises(DatabaseLocked) as caught:
                store.enqueue(session_id, Message("user", "hi"))
        finally:
            lock.release()
        assert str(caught.value).startswith(f"session {session_id}: cannot keep the input: another process held")
        assert str(caught.value).endswith("nothing was changed, try again")
        assert store.state(session_id).pending == ()


def test_a_read_only_server_is_named(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    read_only = pg_server.with_setting(pg_url, "default_transaction_read_only", "on")
    with open_store(read_only) as store, pytest.raises(StoreError, match=r"create the session: .* is read-only"):
        store.create_session("/p", "echo/echo")


def test_a_runner_role_with_only_table_rights_works_and_no_rights_is_permission_denied(
    pg_url: str, pg_admin: str
) -> None:
    PostgresStore(pg_url).close()  # migrated by the owner
    schema = urllib.parse.parse_qs(urllib.parse.urlsplit(pg_url).query)["options"][0].split("=")[1]
    role = f"runner_{schema}"
    sql(pg_admin, f"CREATE ROLE {role} LOGIN")
    try:
        sql(pg_admin, f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        sql(pg_admin, f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}")
        runner_url = pg_url.replace("://postgres@", f"://{role}@")
        with open_store(runner_url) as store:
            session_id = store.create_session("/p", "echo/echo").id
            start(store, session_id)  # type: ignore[arg-type]
            store.enqueue(session_id, Message("user", "hi"))
            assert [m.text for m in store.promote(session_id, location="/p")] == ["hi"]
        sql(pg_admin, f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {role}")
        with pytest.raises(StoreError, match=r"permission denied on the database .*schema_version"):
            open_store(runner_url)
    finally:
        sql(pg_admin, f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {role}")
        sql(pg_admin, f"REVOKE ALL ON SCHEMA {schema} FROM {role}")
        sql(pg_admin, f"DROP ROLE {role}")
