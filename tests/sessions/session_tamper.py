"""Hand edits of a session database, as a user with a SQL shell would make them (both backends)."""

from __future__ import annotations

import sqlite3

from nia_core.context import canonical_json
from nia_core.sessions.serialize import content_id


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql:", "postgres:"))


def tamper(url: str, *statements: str) -> None:
    """Run ``statements`` against the database ``url`` names, outside nia."""
    if is_postgres(url):
        from tests.postgres import pg_server

        pg_server.admin_execute(url, *statements)
        return
    conn = sqlite3.connect(url.removeprefix("sqlite:///").partition("?")[0])
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def count_rows(url: str) -> dict[str, int]:
    """Rows per table: what "nothing was stored" compares."""
    tables = ("sessions", "epochs", "messages", "pending", "snapshots", "blobs")
    if is_postgres(url):
        import psycopg

        with psycopg.connect(url) as conn:
            return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}  # type: ignore[index]
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    finally:
        conn.close()


def blob_insert(url: str, text: str) -> str:
    """A statement storing ``text`` content-addressed (as nia would)."""
    text_id = content_id(text)
    quoted = text.replace("'", "''")
    if is_postgres(url):
        return (
            f"INSERT INTO blobs (id, data) VALUES ('{text_id}', convert_to('{quoted}', 'UTF8')) ON CONFLICT DO NOTHING"
        )
    return f"INSERT OR IGNORE INTO blobs (id, data) VALUES ('{text_id}', '{quoted}')"


def forged_snapshot(url: str, session_id: str, manifest: dict[str, list[str | None]], *texts: str) -> list[str]:
    """Statements pointing the session's active epoch at a hash-correct snapshot ``manifest``."""
    raw = canonical_json(manifest)
    snapshot_id = content_id(raw)
    conflict = " ON CONFLICT DO NOTHING" if is_postgres(url) else ""
    insert = "INSERT INTO" if is_postgres(url) else "INSERT OR IGNORE INTO"
    return [
        *(blob_insert(url, text) for text in texts),
        f"{insert} snapshots (id, manifest) VALUES ('{snapshot_id}', '{raw}'){conflict}",
        f"UPDATE epochs SET snapshot_id = '{snapshot_id}' WHERE session_id = '{session_id}'",
    ]
