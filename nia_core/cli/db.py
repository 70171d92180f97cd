"""``nia db``: migrate and check the session database ``NIA_DB`` names, SQLite or PostgreSQL.

Every nia command migrates the database it opens, so ``migrate`` is for doing
it on purpose (before rolling a new nia out to many runners, say). ``check``
leaves a PostgreSQL schema as it is and reads every session through the
:class:`~nia_core.sessions.Store` interface, so a problem it reports is one any
command would hit.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from nia_core.errors import NiaError
from nia_core.sessions import SCHEMA_VERSION, Store, StoreError, db_url, open_store
from nia_core.sessions.errors import CorruptRecord
from nia_core.sessions.open import check_postgres_url, scheme_of
from nia_core.sessions.projection import misplaced_input, unsettled_tool_calls


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
    if url[:7].lower() == "sqlite:":
        rest = url[len("sqlite:") :]
        url = (rest[2:] if rest.startswith("//") else rest).partition("?")[0]
    return Path(url).expanduser()


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
def check() -> None:
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
    with store:
        click.echo(f"database: {describe(store, url)}")
        if version is None:
            raise CheckFailed(f"{store.url} has no nia tables yet; run: nia db migrate")
        if version < current:
            raise CheckFailed(
                f"{store.url} is at schema version {version}, this nia uses {current}; run: nia db migrate"
            )
        click.echo(f"schema version: {version} (current)")
        listing = store.list_sessions()
        for damaged in listing.damaged:  # a row that does not even read; the others are still checked
            click.echo(f"session {damaged.session_id}: {damaged.problem}")
        bad = len(listing.damaged)
        total = len(listing.sessions) + bad
        for record in listing.sessions:
            found = session_problems(store, record.id)
            bad += bool(found)
            for problem in found:
                click.echo(f"session {record.id}: {problem}")
    if bad:
        raise CheckFailed(f"{bad} of {total} sessions have problems (listed above)")
    click.echo(f"sessions: {total} checked, all consistent")


def session_problems(store: Store, session_id: str) -> list[str]:
    """How the session's stored state breaks the boundary's invariants (empty when it does not)."""
    try:
        return _problems(store, session_id)
    except CorruptRecord as exc:
        return [exc.problem]
    except StoreError as exc:  # the database failing (locked, unreachable), not this session's rows: stop
        raise exc.about(session_id) from None
    except Exception as exc:  # noqa: BLE001 - a check reports every session and goes on, whatever one of them holds
        return [f"cannot be read ({type(exc).__name__}: {exc})"]


def _problems(store: Store, session_id: str) -> list[str]:
    found: list[str] = []
    state = store.state(session_id)  # hash-checks the active baseline and snapshot, validates pending input
    history = store.history(session_id)  # validates every row
    epochs = store.epochs(session_id)
    seqs = [entry.message.seq for entry in history]
    if seqs != list(range(1, len(seqs) + 1)):
        missing = sorted(set(range(1, len(seqs) + 1)) - set(seqs))
        found.append(f"the history is not numbered 1..{len(seqs)} (missing {missing[:5]})")
    numbers = [epoch.number for epoch in epochs]
    if numbers != list(range(1, len(numbers) + 1)):
        found.append(f"its epochs are not numbered 1..{len(numbers)}: {numbers}")
    if state.session.epoch is not None and numbers and state.session.epoch != numbers[-1]:
        found.append(f"its active epoch {state.session.epoch} is not its latest ({numbers[-1]})")
    known = set(numbers)
    for entry in history:
        message = entry.message
        if message.epoch is not None and message.epoch not in known:
            found.append(f"message #{message.seq} belongs to an unknown epoch {message.epoch}")
        if message.kind == "system_update" and entry.snapshot_id is None:
            found.append(f"system message #{message.seq} has no snapshot")
    for epoch in epochs:
        store.snapshot(session_id, epoch.initial_snapshot_id)
        updates = [h for h in history if h.message.kind == "system_update" and h.message.epoch == epoch.number]
        previous = epoch.initial_snapshot_id
        for update in updates:
            if update.snapshot_id is None:
                continue
            store.snapshot(session_id, update.snapshot_id)
            if update.snapshot_id == previous:
                found.append(f"epoch {epoch.number}: system message #{update.message.seq} admitted nothing new")
            if (update.message.seq or 0) < epoch.start_seq:
                found.append(f"system message #{update.message.seq} precedes the start of epoch {epoch.number}")
            previous = update.snapshot_id
        if epoch.snapshot_id != previous:
            found.append(f"epoch {epoch.number}: its snapshot {epoch.snapshot_id[:12]} has no system message")
    found += misplaced_input([entry.message for entry in history])
    for message in state.pending:
        if message.kind == "user" and not message.text.strip():
            found.append("pending input with no text (it is never sent)")
    waiting = unsettled_tool_calls([entry.message for entry in history])
    if waiting and any(message.kind == "user" for message in state.pending):
        found.append(
            f"input is pending while tool results ({', '.join(waiting)}) are; requests move the results before it"
        )
    promoted = Counter(
        (h.message.kind, h.message.text, h.message.tool_call_id)
        for h in history
        if h.message.kind == "tool_result" and h.message.tool_call_id
    )
    for (_kind, _text, call_id), count in promoted.items():
        if count > 1:
            found.append(f"the result of tool call {call_id} was stored {count} times")
    return found
