"""``nia db``: migrate and check the session database ``NIA_DB`` names, SQLite or PostgreSQL.

Every nia command migrates the database it opens, so ``migrate`` is for doing
it on purpose (before rolling a new nia out to many runners, say). ``check``
leaves a PostgreSQL schema as it is and reads every session through the
:class:`~nia_core.sessions.Store` interface, so a problem it reports is one any
command would hit.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from nia_core.errors import NiaError
from nia_core.sessions import SCHEMA_VERSION, Store, db_url, open_store
from nia_core.sessions.check import session_problems
from nia_core.sessions.open import check_postgres_url, scheme_of, sqlite_parts


class CheckFailed(NiaError):
    """The database is behind this nia, or some sessions are inconsistent."""


def is_postgres(url: str) -> bool:
    """Whether ``url`` names PostgreSQL; a malformed ``NIA_DB`` is reported here, before anything opens."""
    if scheme_of(url) in ("postgresql", "postgres"):
        check_postgres_url(url)
        return True
    return False


def sqlite_file(url: str) -> Path:
    """The file a SQLite ``NIA_DB`` (a path or ``sqlite:///path?…``) names."""
    return Path(sqlite_parts(url)[0]).expanduser()


def describe(store: Store, url: str) -> str:
    return f"{store.url} ({'PostgreSQL' if is_postgres(url) else 'SQLite'})"


@click.group()
def db() -> None:
    """The session database: NIA_DB (a path, sqlite:///path or postgresql://user@host/db).

    Without NIA_DB it is nia.db in the user data folder ($XDG_DATA_HOME/nia).
    """


@db.command()
def migrate() -> None:
    """Create the database's tables, or bring them up to this nia's schema version."""
    url = db_url()
    if is_postgres(url):
        from nia_core.sessions.postgres import open_postgres

        postgres = open_postgres(url, migrate=False)
        try:
            before, after = postgres.migrate()
            where = describe(postgres, url)
        finally:
            postgres.close()
    else:
        existed = sqlite_file(url).exists()
        with open_store(url) as store:  # SQLite migrates on open
            where = describe(store, url)
        before, after = (SCHEMA_VERSION if existed else None), SCHEMA_VERSION
    if before == after:
        click.echo(f"{where}: already at schema version {after}")
    elif before is None:
        click.echo(f"{where}: created at schema version {after}")
    else:
        click.echo(f"{where}: migrated from schema version {before} to {after}")


@db.command()
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object (exit status unchanged).")
def check(as_json: bool) -> None:
    """Check the schema version and every session: readable, hash-checked, gap-free, each change admitted once.

    Exits 1 when the database needs `nia db migrate` or a session has a problem.
    """
    url = db_url()
    if is_postgres(url):
        from nia_core.sessions.postgres import open_postgres

        postgres = open_postgres(url, migrate=False)
        store: Store = postgres
        version, current = postgres.schema_version, postgres.SCHEMA_VERSION
    else:
        store = open_store(url, create=False)  # a malformed NIA_DB is reported first
        path = sqlite_file(url)
        if not path.exists():
            store.close()
            raise CheckFailed(f"no database at {path} (NIA_DB); `nia db migrate` creates one")
        version = current = SCHEMA_VERSION
    problems: dict[str, list[str]] = {}
    with store:
        where = describe(store, url)
        if version is None or version < current:
            needed = (
                f"{store.url} has no nia tables yet; run: nia db migrate"
                if version is None
                else f"{store.url} is at schema version {version}, this nia uses {current}; run: nia db migrate"
            )
            if as_json:
                behind = {"database": where, "schema_version": version, "current_schema_version": current}
                click.echo(json.dumps(behind | {"ok": False, "error": needed}, indent=2))
            else:
                click.echo(f"database: {where}")
            raise CheckFailed(needed)
        listing = store.list_sessions()
        for damaged in listing.damaged:  # a row that does not even read; the others are still checked
            problems.setdefault(damaged.session_id or "?", []).append(damaged.problem)
        total = len(listing.sessions) + len(listing.damaged)
        for record in listing.sessions:
            found = session_problems(store, record.id)
            if found:
                problems.setdefault(record.id, []).extend(found)
    if as_json:
        report: dict[str, object] = {"database": where, "schema_version": version}
        report |= {"current_schema_version": current, "sessions": total, "ok": not problems, "problems": problems}
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        click.echo(f"database: {where}")
        click.echo(f"schema version: {version} (current)")
        for session_id, found in problems.items():
            for problem in found:
                click.echo(f"session {session_id}: {problem}")
    if problems:
        where_listed = "in the report" if as_json else "listed above"
        raise CheckFailed(f"{len(problems)} of {total} sessions have problems ({where_listed})")
    if not as_json:
        click.echo(f"sessions: {total} checked, all consistent")
