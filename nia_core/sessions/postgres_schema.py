"""The PostgreSQL store's schema: its versioned migrations, and reading and migrating a database's version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nia_core.sessions.errors import CorruptRecord, NewerSchema, StoreError

if TYPE_CHECKING:
    import psycopg

MIN_SERVER_VERSION = 130000
"""PostgreSQL 13: ``pg_current_xact_id`` / ``pg_xact_status`` tell a lost commit's outcome."""

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            # Content-addressed texts: snapshot values, removal texts, baseline segments.
            # BYTEA (UTF-8) because a TEXT column cannot hold a NUL character.
            "CREATE TABLE blobs (id TEXT PRIMARY KEY, data BYTEA NOT NULL)",
            # A snapshot is a manifest {key: [value id, removal id | null]}, itself content-addressed.
            "CREATE TABLE snapshots (id TEXT PRIMARY KEY, manifest TEXT NOT NULL)",
            """CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                location TEXT NOT NULL,
                model TEXT NOT NULL,
                created TEXT NOT NULL,
                revision BIGINT NOT NULL DEFAULT 0,
                epoch INTEGER,
                history_from BIGINT NOT NULL DEFAULT 0,
                summary_seq BIGINT,
                compaction TEXT
            )""",
            """CREATE TABLE epochs (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                number INTEGER NOT NULL,
                baseline_id TEXT NOT NULL,
                segments TEXT NOT NULL,
                initial_snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
                snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
                start_seq BIGINT NOT NULL,
                model TEXT NOT NULL,
                location TEXT NOT NULL,
                reason TEXT NOT NULL,
                created TEXT NOT NULL,
                PRIMARY KEY (session_id, number)
            )""",
            """CREATE TABLE messages (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                seq BIGINT NOT NULL,
                epoch INTEGER,
                kind TEXT NOT NULL,
                body TEXT NOT NULL,
                snapshot_id TEXT REFERENCES snapshots(id),
                created TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
            """CREATE TABLE pending (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id),
                kind TEXT NOT NULL,
                body TEXT NOT NULL,
                created TEXT NOT NULL
            )""",
            "CREATE INDEX pending_by_session ON pending (session_id, id)",
        ),
    ),
    (
        2,
        (
            # Each reply's model, token usage and stop reason (nia_core/sessions/replies.py); NULL before.
            "ALTER TABLE messages ADD COLUMN reply TEXT",
        ),
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The newest schema this nia knows; a database at a higher version is refused."""

NIA_TABLES = ("blobs", "snapshots", "sessions", "epochs", "messages", "pending")
MIGRATION_LOCK = 0x6E6961  # "nia": one advisory lock key per schema, so runners never migrate at once


def migrate(conn: psycopg.Connection[Any], url: str) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION`; runners that start together take turns (an advisory lock)."""
    version = read_version(conn, url)
    if version == SCHEMA_VERSION:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))", (MIGRATION_LOCK,))
        version = read_version(conn, url)
        if version is None:
            conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            conn.execute("INSERT INTO schema_version (version) VALUES (0)")
            version = 0
        for target, statements in MIGRATIONS:
            if target > version:
                for statement in statements:
                    conn.execute(statement)  # type: ignore[arg-type]
                conn.execute("UPDATE schema_version SET version = %s", (target,))


def read_version(conn: psycopg.Connection[Any], url: str) -> int | None:
    """The schema version of the database ``url`` names (``None``: no nia tables yet); refuses foreign or newer ones."""
    # One statement, one snapshot: another runner's migration may commit at any moment.
    row = conn.execute(
        "SELECT current_schema(), to_regclass('schema_version') IS NOT NULL,"
        " array(SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()"
        " AND table_name = ANY(%s) ORDER BY table_name)",
        (list(NIA_TABLES),),
    ).fetchone()
    assert row is not None
    schema, has_version, found = row
    if schema is None:
        raise StoreError(
            f"the database {url} has no schema to create nia's tables in (does the schema in search_path exist?)"
        )
    if not has_version:
        if found:
            raise StoreError(
                f"schema {schema} of the database {url} is not a nia database "
                f"(it has tables {', '.join(found)} but no schema_version)"
            )
        return None
    rows = conn.execute("SELECT version FROM schema_version").fetchall()
    if len(rows) != 1 or not isinstance(rows[0][0], int):
        raise CorruptRecord(f"the database {url} has a damaged schema_version table")
    version = int(rows[0][0])
    if version > SCHEMA_VERSION:
        raise NewerSchema(
            f"the database {url} was written by a newer nia (schema version {version}; "
            f"this nia knows up to {SCHEMA_VERSION}); upgrade nia, or set NIA_DB to use another database"
        )
    return version
