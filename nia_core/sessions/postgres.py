"""The PostgreSQL store: runners on many machines sharing one session database.

The same tables and versioned migrations as the SQLite store (``schema_version``),
reached through a ``psycopg_pool.ConnectionPool``. Every write is one server-side
transaction:

- the writes of every turn (``enqueue``, ``promote``, ``admit_update``,
  ``append``) are functions the schema installs (migration 3): ``BEGIN``, the
  call and ``COMMIT`` go in one pipelined round trip, and the function answers
  with its result and the session as it leaves it (``nia_view``), read under
  its lock, so the boundary need not read it again (:meth:`PostgresStore.view`
  with ``after_write``); a turn is four round trips, five when it admits a change;
- the other writes are statements sent in pipeline mode (``BEGIN`` travels
  with the first query, the trailing writes with ``COMMIT``: two round trips);
- writes that extend a session's history lock its row first
  (``FOR NO KEY UPDATE``), so ``seq`` numbers stay gap-free and pending input
  is promoted exactly once;
- epoch writes are a compare-and-swap on the revision
  (``UPDATE sessions SET revision = revision + 1 WHERE revision = %s …``), which
  PostgreSQL re-checks against the newest row version after any wait;
- a read is one statement (one snapshot of the database), so a session, its
  epoch, its snapshot manifest, its pending input and its history are seen at
  one instant; the content-addressed texts they name never change, so fetching
  them afterwards (or from a process-local cache) cannot mix two states.

A lost connection (a terminated backend, a restarted server) is retried until
``timeout``. When it is lost while committing, the outcome is looked up before
anything is redone: a function's write by the token it recorded with its result
(``nia_writes``; inserting the token ourselves waits for a write still running
and fences one that never committed; a token is never reused, so this holds
across a crash-restart), another write by its transaction id
(``pg_xact_status``) while the server is the one that ran it, and after a
crash-restart (which may hand the same id out again) by the rows the
transaction wrote. Committed work is returned, aborted work is redone, and when
the rows cannot tell (a session others moved on meanwhile) the error says to
check before resending; so nothing is lost or stored twice. psycopg is
imported only when this store is opened, so nia works without it.

Four modules: the schema, its migrations and functions (``postgres_schema``),
the transactions and their recovery (``postgres_tx``), the content-addressed
texts, baselines and snapshots a process holds (``postgres_content``), and the
``Store`` methods (here).
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from nia_core.context import Snapshot
from nia_core.message import MESSAGE_KINDS, Message
from nia_core.sessions.postgres_held import Asked, Held, NeedTexts, Stale
from nia_core.sessions.postgres_schema import (
    MIGRATIONS,
    MIN_SERVER_VERSION,
    NIA_TABLES,
    SCHEMA_VERSION,
    read_version,
)
from nia_core.sessions.postgres_schema import migrate as migrate_schema
from nia_core.sessions.postgres_tx import (
    Transactions,
    _Call,
    _one_line,
    _psycopg,
    _Tx,
    display_url,
)
from nia_core.sessions.replies import ReplyRecord, encode_reply, with_record
from nia_core.sessions.serialize import (
    after_prefix,
    compaction_json,
    content_id,
    epoch_columns,
    epoch_from_row,
    message_body,
    now,
    pending_message,
    pick_session,
    refuse_unsendable,
    session_from_row,
    snapshot_manifest,
)
from nia_core.sessions.store import (
    EpochRecord,
    HistoryEntry,
    PendingCompaction,
    SessionRecord,
    SessionState,
    SessionView,
    Store,
    joined,
)
from nia_core.sessions.store_errors import (
    CorruptRecord,
    RevisionConflict,
    StoreError,
    UnknownSession,
    UnsupportedDatabase,
)

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

    from nia_core.sessions.listing import SessionActivity, SessionListing

T = TypeVar("T")

__all__ = [
    "MIGRATIONS",
    "NIA_TABLES",
    "RETRY_BUDGET",
    "SCHEMA_VERSION",
    "PostgresStore",
    "display_url",
    "open_postgres",
]

RETRY_BUDGET = 15.0
"""Seconds to keep retrying a lost connection (a server restart) and to wait for a session's lock."""
DEFAULT_POOL_SIZE = 4
_SESSION_COLUMNS = "id, location, model, created, revision, epoch, history_from, summary_seq, compaction"


class PostgresStore(Transactions, Store):
    """Sessions in PostgreSQL (13 or newer). ``url`` is a libpq URL (``postgresql://user@host/db``).

    ``timeout`` bounds how long an operation retries a lost connection and waits
    for a session's lock; ``pool_size`` is the most connections this process opens.
    With ``migrate=False`` the schema is left as found (``nia db check``).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = RETRY_BUDGET,
        pool_size: int = DEFAULT_POOL_SIZE,
        migrate: bool = True,
    ) -> None:
        psycopg = _psycopg()
        from psycopg.conninfo import conninfo_to_dict
        from psycopg_pool import ConnectionPool

        self.url = display_url(url)
        self.timeout = timeout
        self._conninfo = url
        self._local = threading.local()
        self._held = Held(self.url)
        """What this process read and validated, so a read asks only for what is new (postgres_held.py)."""
        try:
            info = conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise UnsupportedDatabase(f"NIA_DB is not a valid PostgreSQL URL ({_one_line(exc)})") from None
        # Never prepared: a turn's statements are function calls with trivial plans (the functions' own plans
        # are cached by the server), and preparing costs a round trip of its own outside a pipeline and a
        # PgBouncer that keeps prepared statements.
        self._kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": None}
        if "application_name" not in info:
            self._kwargs["application_name"] = "nia"
        if "connect_timeout" not in info:
            self._kwargs["connect_timeout"] = max(2, int(timeout))
        self._version: int | None = None
        self._open_schema(migrate)
        self._pool: psycopg_pool.ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs=self._kwargs,
            configure=self._configure,
            timeout=timeout,
            name="nia",
            open=True,
        )

    SCHEMA_VERSION = SCHEMA_VERSION
    """The schema version this nia writes."""

    def _open_schema(self, migrate: bool) -> None:
        """Check the server and the schema (migrating it when asked), waiting out a server that is starting."""
        import psycopg

        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with psycopg.connect(self._conninfo, **self._kwargs) as conn:
                    if conn.info.server_version < MIN_SERVER_VERSION:
                        raise StoreError(
                            f"the database {self.url} runs PostgreSQL {conn.info.server_version // 10000}; "
                            "nia needs PostgreSQL 13 or newer"
                        )
                    if migrate:
                        self._migrate(conn)
                    else:
                        self._version = self._read_version(conn)
                    return
            except psycopg.Error as exc:
                starting = getattr(exc, "sqlstate", None) == "57P03" or "starting up" in str(exc)
                if not starting or time.monotonic() >= deadline:
                    raise self._translate(exc, None, "open the database", retried=starting) from None
            time.sleep(0.1)

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

    def close(self) -> None:
        self._pool.close()

    def _cache(self, tx: _Tx) -> None:
        self._held.committed(tx)

    # -- schema (the migrations: nia_core/sessions/postgres_schema.py) ----------------------------

    @property
    def schema_version(self) -> int | None:
        """The database's schema version as of opening (after migrating, unless ``migrate=False``)."""
        return self._version

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        migrate_schema(conn, self.url)
        self._version = SCHEMA_VERSION

    def _read_version(self, conn: psycopg.Connection[Any]) -> int | None:
        return read_version(conn, self.url)

    def migrate(self) -> tuple[int | None, int]:
        """Apply any missing migrations; ``(version before, version after)``."""
        psycopg = _psycopg()
        try:
            with psycopg.connect(self._conninfo, **self._kwargs) as conn:
                before = self._read_version(conn)
                self._migrate(conn)
        except psycopg.Error as exc:
            raise self._translate(exc, None, "migrate the database", retried=False) from None
        return before, SCHEMA_VERSION

    # -- rows -----------------------------------------------------------------------------

    def _session_row(self, tx: _Tx, session_id: str) -> SessionRecord:
        row = tx.one(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = %s", (session_id,))
        if row is None:
            raise UnknownSession(f"no session {session_id!r} in {self.url}")
        return session_from_row(row)

    @staticmethod
    def _insert_messages(
        tx: _Tx, session_id: str, seq: int, epoch: int | None, messages: Sequence[Message], snapshot_id: str | None
    ) -> list[Message]:
        """Append ``messages`` at ``seq``, ``seq + 1``, …; the session's row must be locked."""
        created = now()
        tx.conn.cursor().executemany(
            "INSERT INTO messages (session_id, seq, epoch, kind, body, snapshot_id, created)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                (session_id, seq + i, epoch, m.kind, message_body(m), snapshot_id, created)
                for i, m in enumerate(messages)
            ],
        )
        for i, m in enumerate(messages):
            tx.prove(
                "message",
                "SELECT EXISTS (SELECT 1 FROM messages WHERE session_id = %s AND seq = %s AND kind = %s"
                " AND body = %s AND created = %s)",
                (session_id, seq + i, m.kind, message_body(m), created),
            )
        return [dataclasses.replace(m, seq=seq + i, epoch=epoch) for i, m in enumerate(messages)]

    def _swap(
        self,
        tx: _Tx,
        session_id: str,
        expected_revision: int,
        condition: str,
        value: Any,
        *queries: tuple[str, Sequence[Any]],
    ) -> tuple[SessionRecord, list[psycopg.Cursor[Any]]]:
        """The compare-and-swap: bump the revision only if it is still ``expected_revision`` and ``condition`` holds.

        PostgreSQL re-evaluates the condition on the newest row version after
        waiting for a concurrent writer, so exactly one of two racing swaps wins.
        The winner holds the row's lock; ``queries`` run right after the swap.
        """
        swap = tx.send(
            f"UPDATE sessions SET revision = revision + 1 WHERE id = %s AND revision = %s AND {condition}"
            f" RETURNING {_SESSION_COLUMNS}",
            (session_id, expected_revision, value),
        )
        cursors = [tx.send(query, params) for query, params in queries]
        row = swap.fetchone()
        if row is not None:
            return session_from_row(row), cursors
        session = self._session_row(tx, session_id)
        if condition.startswith("location") and session.location != value:
            raise RevisionConflict(session_id, f"moved to {session.location}")
        raise RevisionConflict(session_id)

    # -- sessions -------------------------------------------------------------------------

    def create_session(self, location: str, model: str, *, session_id: str | None = None) -> SessionRecord:
        new_id = session_id or secrets.token_hex(6)

        def work(tx: _Tx) -> SessionRecord:
            created = now()
            row = tx.one(
                "INSERT INTO sessions (id, location, model, created) VALUES (%s, %s, %s, %s)"
                f" ON CONFLICT (id) DO NOTHING RETURNING {_SESSION_COLUMNS}",
                (new_id, location, model, created),
            )
            tx.prove(
                "session", "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = %s AND created = %s)", (new_id, created)
            )
            if row is None:
                raise StoreError(f"a session with this id already exists in {self.url}", new_id)
            return session_from_row(row)

        return self._run(new_id, "create the session", work, write=True)

    def session(self, session_id: str) -> SessionRecord:
        return self._run(session_id, "read the session", lambda tx: self._session_row(tx, session_id), write=False)

    def resolve(self, prefix: str) -> str:
        # A range of the ids' index in byte order (sessions_by_id, schema 5): a few rows however many there are.
        upper = after_prefix(prefix)
        below = "" if upper is None else ' AND id COLLATE "C" < %s'

        def work(tx: _Tx) -> list[str]:
            rows = tx.all(
                f'SELECT id FROM sessions WHERE id COLLATE "C" >= %s{below} AND starts_with(id, %s)'
                ' ORDER BY id COLLATE "C" LIMIT 6',
                (prefix, *([upper] if upper is not None else []), prefix),
            )
            return [str(row[0]) for row in rows]

        return pick_session(prefix, self._run(None, "look up the session", work, write=False), self.url)

    def list_sessions(self) -> SessionListing:
        from nia_core.sessions.listing import listing

        def work(tx: _Tx) -> SessionListing:
            return listing(tx.all(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY created, id"))

        return self._run(None, "list the sessions", work, write=False)

    def activity(self) -> dict[str, SessionActivity]:
        from nia_core.sessions.listing import ACTIVITY_QUERY, activity

        return self._run(None, "read the sessions' activity", lambda tx: activity(tx.all(ACTIVITY_QUERY)), write=False)

    def delete_session(self, session_id: str) -> None:
        def work(tx: _Tx) -> None:
            if tx.one("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,)) is None:
                raise UnknownSession(f"no session {session_id!r} in {self.url}")
            tables = tx.all(
                "SELECT table_name::text FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND column_name = 'session_id' AND table_name <> 'sessions'"
                " ORDER BY table_name"
            )
            for (table,) in tables:  # every table naming a session, whoever added it; then the session itself
                tx.send(f'DELETE FROM "{table}" WHERE session_id = %s', (session_id,))
            tx.send("DELETE FROM sessions WHERE id = %s", (session_id,))
            tx.prove("deletion", "SELECT NOT EXISTS (SELECT 1 FROM sessions WHERE id = %s)", (session_id,))

        self._run(session_id, "delete the session", work, write=True)
        self._held.forget(session_id)

    def state(self, session_id: str) -> SessionState:
        def work(tx: _Tx) -> SessionState:
            # One statement (nia_view without history), so record, epoch, snapshot manifest and pending input
            # are one instant; the texts they name are immutable (content-addressed) and may be fetched after it.
            known, segments_id = self._held.held_ids(session_id)
            row = tx.one("SELECT nia_view(%s, NULL, NULL, %s::text[])", (session_id, known))
            asked = Asked(None, None, known, segments_id)
            return self._held.decode(tx, session_id, row[0] if row else None, asked).state

        return self._read_fresh(session_id, work)

    def _read_fresh(self, session_id: str, work: Callable[[_Tx], T]) -> T:
        """Run a read; when what it left out is no longer held here (another thread's eviction), read it all."""
        try:
            return self._run(session_id, "read the session", work, write=False)
        except Stale:
            self._held.forget(session_id)
            return self._run(session_id, "read the session", work, write=False)

    def view(self, session_id: str, *, after_write: bool = False, tail: bool = False) -> SessionView:
        """State and history in one statement (``nia_view``), only what this process has not validated before;
        after a write, as the write left them, if it said."""
        if after_write:
            left = self._left(session_id)
            if left is not None:
                view = self._decode_view(session_id, *left, tail=tail)
                if view is not None:
                    return view

        def work(tx: _Tx) -> SessionView:
            asked = self._held.asking(session_id, tail=tail)
            row = tx.one("SELECT nia_view(%s, %s, %s, %s::text[])", (session_id, asked.after, asked.mark, asked.known))
            return self._held.decode(tx, session_id, row[0] if row else None, asked, tail=tail)

        return self._read_fresh(session_id, work)

    def _decode_view(self, session_id: str, raw: Any, asked: Asked, *, tail: bool) -> SessionView | None:
        """``raw`` from a write's answer (``None``: it does not serve, read anew); texts not in the cache are
        fetched afterwards (they never change)."""
        if asked.after is not None and asked.after < 0 and not tail:
            return None  # the write answered with the tail: the whole history is wanted
        try:
            try:
                return self._held.decode(None, session_id, raw, asked, tail=tail)
            except NeedTexts:
                return self._run(
                    session_id,
                    "read the session",
                    lambda tx: self._held.decode(tx, session_id, raw, asked, tail=tail),
                    write=False,
                )
        except Stale:
            return None

    def _settled(self, session_id: str, answer: Mapping[str, Any], asked: Asked | None = None) -> Any:
        """A write function's result, or the error its answer names; its view is left for :meth:`view`."""
        if "error" in answer:
            raise UnknownSession(f"no session {session_id!r} in {self.url}")
        if "conflict" in answer:
            raise RevisionConflict(session_id, str(answer["conflict"]))
        if "damaged" in answer:
            pending_message(session_id, *answer["damaged"])  # raises CorruptRecord naming the row
            raise CorruptRecord(f"pending input #{answer['damaged'][0]!r:.20} is damaged", session_id)
        if "view" in answer and answer["view"] is not None and asked is not None:
            self._leave(session_id, (answer["view"], asked))
        return answer["ok"]

    @staticmethod
    def _token() -> str:
        return secrets.token_hex(16)

    def history(self, session_id: str) -> list[HistoryEntry]:
        def work(tx: _Tx) -> SessionView:
            asked = self._held.asking(session_id, tail=False)
            row = tx.one("SELECT nia_view(%s, %s, %s, %s::text[])", (session_id, asked.after, asked.mark, asked.known))
            return self._held.decode(tx, session_id, row[0] if row else None, asked, history_only=True)

        return list(self._read_fresh(session_id, work).history)

    def epochs(self, session_id: str) -> list[EpochRecord]:
        def work(tx: _Tx) -> list[EpochRecord]:
            rows = tx.all(
                f"SELECT s.id, {epoch_columns('e')} FROM sessions s"
                " LEFT JOIN epochs e ON e.session_id = s.id WHERE s.id = %s ORDER BY e.number",
                (session_id,),
            )
            if not rows:
                raise UnknownSession(f"no session {session_id!r} in {self.url}")
            return [epoch_from_row(session_id, row[1:])[0] for row in rows if row[1] is not None]

        return self._run(session_id, "read the epochs", work, write=False)

    def snapshot(self, session_id: str, snapshot_id: str) -> Snapshot:
        def work(tx: _Tx) -> Snapshot:
            return self._held.load_snapshot(tx, session_id, snapshot_id)

        return self._run(session_id, "read a snapshot", work, write=False)

    # -- input and replies ----------------------------------------------------------------

    def enqueue(self, session_id: str, message: Message) -> None:
        if message.kind not in ("user", "tool_result"):
            raise ValueError(f"only user input and tool results wait for promotion, not {message.kind!r}")
        refuse_unsendable(session_id, message)

        asked: list[Asked] = []

        def build() -> _Call:
            token = self._token()
            asked[:] = [self._held.asking(session_id, tail=True)]
            return _Call(
                "SELECT nia_enqueue(%s, %s, %s, %s, %s, %s, %s, %s::text[])",
                (token, session_id, message.kind, message_body(message), now(), *asked[0].params()),
                token,
            )

        self._settled(session_id, self._call(session_id, "keep the input", build), asked[0])

    def promote(self, session_id: str, *, location: str) -> list[Message]:
        asked: list[Asked] = []

        def build() -> _Call:
            token = self._token()
            asked[:] = [self._held.asking(session_id, tail=True)]
            return _Call(
                "SELECT nia_promote(%s, %s, %s, %s, %s, %s, %s, %s::text[])",
                (token, session_id, location, list(MESSAGE_KINDS), now(), *asked[0].params()),
                token,
            )

        epoch, rows = self._settled(session_id, self._call(session_id, "promote the input", build), asked[0])
        return [
            dataclasses.replace(pending_message(session_id, pending_id, kind, body), seq=seq, epoch=epoch)
            for pending_id, kind, body, seq in rows
        ]

    def append(self, session_id: str, message: Message, *, reply: ReplyRecord | None = None) -> Message:
        body = message_body(message)
        record = None if reply is None else encode_reply(reply)

        def build() -> _Call:
            token = self._token()
            return _Call(
                "SELECT nia_append(%s, %s, %s, %s, %s, %s)",
                (token, session_id, message.kind, body, record, now()),
                token,
            )

        answer = self._call(session_id, f"store the {message.kind} message", build)
        seq, epoch = self._settled(session_id, answer)
        return with_record(dataclasses.replace(message, seq=seq, epoch=epoch), reply)

    # -- epoch writes ---------------------------------------------------------------------

    def start_epoch(
        self,
        session_id: str,
        *,
        expected_revision: int,
        location: str,
        model: str,
        segments: Sequence[str],
        snapshot: Snapshot,
        reason: str,
        compaction: PendingCompaction | None = None,
    ) -> SessionRecord:
        segment_texts = {content_id(text): text for text in segments}
        segment_ids = [content_id(text) for text in segments]
        baseline = joined(segments)
        baseline_id = content_id(baseline)

        def work(tx: _Tx) -> SessionRecord:
            session, (next_number, next_seq) = self._swap(
                tx,
                session_id,
                expected_revision,
                "location = %s",
                location,
                ("SELECT COALESCE(MAX(number), 0) + 1 FROM epochs WHERE session_id = %s", (session_id,)),
                (_NEXT_SEQ, (session_id,)),
            )
            number, seq = _first(next_number), _first(next_seq)
            snapshot_id = self._held.put_snapshot(tx, snapshot, also=segment_texts)
            history_from, summary_seq = session.history_from, session.summary_seq
            if compaction is not None:
                self._insert_messages(tx, session_id, seq, number, [Message("summary", compaction.summary)], None)
                summary_seq = seq
                history_from = max(history_from, compaction.covers_upto + 1)
            created = now()
            tx.send(
                "INSERT INTO epochs (session_id, number, baseline_id, segments, initial_snapshot_id, snapshot_id,"
                " start_seq, model, location, reason, created) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    session_id,
                    number,
                    baseline_id,
                    canonical_list(segment_ids),
                    snapshot_id,
                    snapshot_id,
                    seq,
                    model,
                    location,
                    reason,
                    created,
                ),
            )
            tx.prove(
                "epoch",
                "SELECT EXISTS (SELECT 1 FROM epochs WHERE session_id = %s AND number = %s AND baseline_id = %s"
                " AND created = %s)",
                (session_id, number, baseline_id, created),
            )
            tx.send(
                "UPDATE sessions SET epoch = %s, history_from = %s, summary_seq = %s,"
                " compaction = CASE WHEN %s THEN NULL ELSE compaction END WHERE id = %s",
                (number, history_from, summary_seq, compaction is not None, session_id),
            )
            return dataclasses.replace(
                session,
                epoch=number,
                history_from=history_from,
                summary_seq=summary_seq,
                compaction=None if compaction is not None else session.compaction,
            )

        record = self._run(session_id, "store the new context epoch", work, write=True)
        # Committed: the reads that follow (the same boundary) take the baseline and snapshot from memory rather
        # than reading them back; the segments, not a joined copy (the caller still holds the whole text).
        self._held.hold_baseline(content_id(canonical_list(segment_ids)), (baseline_id, baseline))
        self._held.hold_snapshot(content_id(snapshot_manifest(snapshot)[0]), snapshot)
        return record

    def admit_update(
        self, session_id: str, *, expected_revision: int, epoch: int, text: str, snapshot: Snapshot
    ) -> Message:
        manifest, texts = snapshot_manifest(snapshot)
        snapshot_id = content_id(manifest)
        body = message_body(Message("system_update", text))

        asked: list[Asked] = []

        def build() -> _Call:
            token = self._token()
            known = self._held.asking(session_id, tail=True)
            # The snapshot is this one once the write commits (held then): the answer need not carry it.
            asked[:] = [known._replace(known=[*known.known, snapshot_id])]
            call = _Call(
                "SELECT nia_admit(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::text[])",
                (token, session_id, expected_revision, epoch, body, snapshot_id, now(), *asked[0].params()),
                token,
            )
            self._held.snapshot_ahead(call, snapshot_id, manifest, texts)
            return call

        answer = self._call(session_id, "store the mid-conversation system message", build)
        if "ok" in answer:
            self._held.hold_snapshot(snapshot_id, snapshot)
        (seq,) = self._settled(session_id, answer, asked[0])
        return Message("system_update", text, seq=seq, epoch=epoch)

    # -- user commands --------------------------------------------------------------------

    def _bump(self, session_id: str, action: str, assignments: str, values: Sequence[Any]) -> SessionRecord:
        def work(tx: _Tx) -> SessionRecord:
            row = tx.one(
                f"UPDATE sessions SET {assignments}, revision = revision + 1 WHERE id = %s"
                f" RETURNING {_SESSION_COLUMNS}",
                (*values, session_id),
            )
            if row is None:
                raise UnknownSession(f"no session {session_id!r} in {self.url}")
            record = session_from_row(row)
            # Landed: the row is at our revision, as we left it. Lost: still below it, or someone else's there.
            # Moved further on by others: cannot tell (NULL).
            tx.prove(
                "session",
                "SELECT CASE WHEN revision < %s THEN false WHEN revision > %s THEN NULL"
                " ELSE location = %s AND model = %s AND epoch IS NOT DISTINCT FROM %s"
                " AND compaction IS NOT DISTINCT FROM %s END FROM sessions WHERE id = %s",
                (record.revision, record.revision, record.location, record.model, record.epoch, row[8], session_id),
            )
            return record

        return self._run(session_id, action, work, write=True)

    def move(self, session_id: str, location: str) -> SessionRecord:
        return self._bump(session_id, "move the session", "location = %s, epoch = NULL", (location,))

    def set_model(self, session_id: str, model: str) -> SessionRecord:
        return self._bump(session_id, "switch the model", "model = %s", (model,))

    def request_compaction(self, session_id: str, compaction: PendingCompaction) -> SessionRecord:
        return self._bump(session_id, "record the compaction", "compaction = %s", (compaction_json(compaction),))


NIA_OPTIONS = ("timeout", "pool_size")
"""Query options nia reads from a PostgreSQL URL (and removes before libpq sees it); the rest go to libpq."""


def open_postgres(url: str, *, migrate: bool = True) -> PostgresStore:
    """``postgresql://user@host:port/db?timeout=SECONDS&pool_size=N&sslmode=…`` (libpq options pass through)."""
    from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {key: value for key, value in query if key in NIA_OPTIONS}
    rest = [(key, value) for key, value in query if key not in NIA_OPTIONS]
    try:
        timeout = float(ours.get("timeout", RETRY_BUDGET))
        pool_size = int(ours.get("pool_size", DEFAULT_POOL_SIZE))
        if timeout <= 0 or pool_size < 1:
            raise ValueError
    except ValueError:
        raise UnsupportedDatabase(
            f"database URL {display_url(url)!r}: timeout must be a positive number of seconds "
            "and pool_size a positive whole number"
        ) from None
    libpq_url = urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote)))
    return PostgresStore(libpq_url, timeout=timeout, pool_size=pool_size, migrate=migrate)


_NEXT_SEQ = "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = %s"
"""The next history number; read only while holding the session's row lock, so it is never taken twice."""


def _first(cursor: psycopg.Cursor[Any]) -> int:
    row = cursor.fetchone()
    assert row is not None
    return int(row[0])


def _qualified(alias: str, columns: str) -> str:
    return ", ".join(f"{alias}.{column.strip()}" for column in columns.split(","))


def canonical_list(ids: Sequence[str]) -> str:
    """A baseline's segment ids as stored (the same JSON as the SQLite store writes)."""
    return json.dumps(list(ids))
