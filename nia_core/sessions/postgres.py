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

Three modules: the schema, its migrations and functions (``postgres_schema``),
the transactions and their recovery (``postgres_tx``), and the ``Store``
methods (here).
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from nia_core.context import Snapshot
from nia_core.model import MESSAGE_KINDS, Message
from nia_core.sessions.histories import Histories
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
    ACTIVITY_QUERY,
    activity,
    after_prefix,
    baseline_from_texts,
    compaction_json,
    content_id,
    epoch_columns,
    epoch_from_row,
    history_entry,
    listing,
    manifest_ids,
    message_body,
    now,
    parse_segments,
    pending_message,
    pick_session,
    refuse_unsendable,
    session_from_row,
    snapshot_from_texts,
    snapshot_manifest,
)
from nia_core.sessions.store import (
    ActiveEpoch,
    EpochRecord,
    HistoryEntry,
    PendingCompaction,
    SessionActivity,
    SessionListing,
    SessionRecord,
    SessionState,
    SessionView,
    Store,
    joined,
    tail_start,
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
_CACHE_CHARS = 64 * 1024 * 1024
"""Hash-checked texts kept in memory per process (content-addressed, so never stale)."""
_KNOWN_LIMIT = 100_000
_DECODED = 32
"""Baselines and snapshots this process keeps decoded (by content id, so never stale)."""


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
        self._texts: dict[str, str] = {}
        self._texts_size = 0
        self._known: set[str] = set()
        self._cache_lock = threading.Lock()
        self._local = threading.local()
        self._logs = Histories()
        """Histories read and validated, each under its history mark (see histories.py)."""
        self._baselines: OrderedDict[str, tuple[str, str | tuple[str, ...]]] = OrderedDict()
        """``(baseline id, text)`` by the sha256 of a stored segment list it was validated for (one this process
        stored: its segments, joined at the first read)."""
        self._snapshots: OrderedDict[str, Snapshot] = OrderedDict()
        """Snapshots by id, every text hash-checked."""
        self._seen: OrderedDict[str, tuple[str, str]] = OrderedDict()
        """Per session, its active epoch's segment list id and snapshot id as last read (not resent)."""
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

    def _cache(self, tx: _Tx) -> None:
        with self._cache_lock:
            if len(self._known) + len(tx.stored) > _KNOWN_LIMIT:
                self._known.clear()
            self._known.update(tx.stored)
            for text_id, text in tx.read.items():
                if text_id not in self._texts and len(text) <= _CACHE_CHARS:
                    if self._texts_size + len(text) > _CACHE_CHARS:
                        self._texts.clear()
                        self._texts_size = 0
                    self._texts[text_id] = text
                    self._texts_size += len(text)

    # -- content-addressed texts ----------------------------------------------------------

    def _is_known(self, text_id: str) -> bool:
        with self._cache_lock:
            return text_id in self._known

    def _put_texts(self, tx: _Tx, texts: Mapping[str, str]) -> None:
        """Store each text once; ids this process already stored or saw skip the round trip."""
        unknown = sorted(i for i in texts if not self._is_known(i))
        if not unknown:
            return
        present = {row[0] for row in tx.all("SELECT id FROM blobs WHERE id = ANY(%s)", (unknown,))}
        missing = [i for i in unknown if i not in present]  # sorted: concurrent writers lock ids in one order
        if missing:
            tx.send(
                "INSERT INTO blobs (id, data) SELECT * FROM unnest(%s::text[], %s::bytea[])"
                " ON CONFLICT (id) DO NOTHING",
                (missing, [texts[i].encode("utf-8") for i in missing]),
            )
        tx.stored.update(unknown)

    def _get_texts(self, tx: _Tx | None, ids: Iterable[str]) -> dict[str, str]:
        """The texts ``ids`` from the cache, else from ``tx`` (with no ``tx``: raises :class:`_NeedTexts`)."""
        wanted = set(ids)
        with self._cache_lock:
            found = {i: self._texts[i] for i in wanted if i in self._texts}
        missing = sorted(wanted - found.keys())
        if missing:
            if tx is None:
                raise _NeedTexts
            for text_id, data in tx.all("SELECT id, data FROM blobs WHERE id = ANY(%s)", (missing,)):
                found[text_id] = bytes(data).decode("utf-8", errors="replace")
        return found

    def _remember(self, tx: _Tx | None, texts: Mapping[str, str]) -> None:
        """Cache texts already hash-checked (content-addressed rows never change)."""
        if tx is None:
            return  # they all came from the cache
        for text_id, text in texts.items():
            if content_id(text) == text_id:
                tx.read[text_id] = text

    def _put_snapshot(self, tx: _Tx, snapshot: Snapshot, also: Mapping[str, str] | None = None) -> str:
        """Store ``snapshot`` (and the texts ``also``, in the same round trip) content-addressed."""
        manifest, texts = snapshot_manifest(snapshot)
        snapshot_id = content_id(manifest)
        if self._is_known(snapshot_id):
            if also:
                self._put_texts(tx, also)
            return snapshot_id
        self._put_texts(tx, {**texts, **(also or {})})
        tx.send(
            "INSERT INTO snapshots (id, manifest) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING", (snapshot_id, manifest)
        )
        tx.stored.add(snapshot_id)
        return snapshot_id

    def _load_snapshot(self, tx: _Tx, session_id: str, snapshot_id: str) -> Snapshot:
        held = self._held_snapshot(snapshot_id)
        if held is not None:
            return held
        row = tx.one("SELECT manifest FROM snapshots WHERE id = %s", (snapshot_id,))
        if row is None:
            raise CorruptRecord(f"stored snapshot {snapshot_id[:12]} is missing", session_id)
        ids = manifest_ids(session_id, snapshot_id, row[0])
        texts = self._get_texts(tx, [i for pair in ids.values() for i in pair if i is not None])
        snapshot = snapshot_from_texts(session_id, snapshot_id, ids, texts)
        self._remember(tx, texts)
        self._hold(self._snapshots, snapshot_id, snapshot)
        return snapshot

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
        def work(tx: _Tx) -> SessionListing:
            return listing(tx.all(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY created, id"))

        return self._run(None, "list the sessions", work, write=False)

    def activity(self) -> dict[str, SessionActivity]:
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
        self._logs.forget(session_id)

    def state(self, session_id: str) -> SessionState:
        def work(tx: _Tx) -> SessionState:
            # One statement (nia_view without history), so record, epoch, snapshot manifest and pending input
            # are one instant; the texts they name are immutable (content-addressed) and may be fetched after it.
            known, segments_id = self._held_ids(session_id)
            row = tx.one("SELECT nia_view(%s, NULL, NULL, %s::text[])", (session_id, known))
            asked = _Asked(None, None, known, segments_id)
            return self._view_from(tx, session_id, row[0] if row else None, asked).state

        return self._read_fresh(session_id, work)

    def _held_ids(self, session_id: str) -> tuple[list[str], str | None]:
        """The active epoch's segment list id and snapshot id this process holds decoded (no need to send them),
        and the first alone."""
        with self._cache_lock:
            segments_id, snapshot_id = self._seen.get(session_id, ("", ""))
            segments = segments_id if segments_id in self._baselines else None
            return [i for i in (segments, snapshot_id if snapshot_id in self._snapshots else None) if i], segments

    def _read_fresh(self, session_id: str, work: Callable[[_Tx], T]) -> T:
        """Run a read; when what it left out is no longer held here (another thread's eviction), read it all."""
        try:
            return self._run(session_id, "read the session", work, write=False)
        except _Stale:
            with self._cache_lock:
                self._seen.pop(session_id, None)
            self._logs.forget(session_id)
            return self._run(session_id, "read the session", work, write=False)

    def _active_epoch(
        self,
        tx: _Tx | None,
        session_id: str,
        number: int,
        row: Sequence[Any],
        manifest: str | None,
        known: Sequence[str],
        segments_id: str | None,
    ) -> ActiveEpoch:
        """The active epoch from its row; the baseline and snapshot from this process's cache when the read left
        them out: the snapshot's id is in the row (content-addressed: what is held for an id is what it stores),
        the segments' (``segments_id``, the sha256 of the stored list) the server checked. :class:`_Stale` when
        what was left out is no longer held."""
        if row[0] is None:
            raise CorruptRecord(f"its active epoch {number} is missing", session_id)
        record, segments = epoch_from_row(session_id, row)
        if segments is None and segments_id is not None:  # left out: held here for the segments sent before
            held = self._held_baseline(segments_id)
            if held is None or held[0] != record.baseline_id:
                raise _Stale(session_id)
            baseline = held[1]
        else:
            segments_id = content_id(segments) if isinstance(segments, str) else None
            held = self._held_baseline(segments_id) if segments_id is not None else None
            if held is not None and held[0] == record.baseline_id:
                baseline = held[1]
            else:
                segment_ids = parse_segments(session_id, segments, number)
                texts = self._get_texts(tx, segment_ids)
                baseline = baseline_from_texts(session_id, record.baseline_id, segment_ids, texts, number)
                self._remember(tx, texts)
                assert segments_id is not None  # parse_segments refused anything but text
                self._hold(self._baselines, segments_id, (record.baseline_id, baseline))
        snapshot = self._held_snapshot(record.snapshot_id)
        if snapshot is None:
            if manifest is None:
                if record.snapshot_id in known:
                    raise _Stale(session_id)
                raise CorruptRecord(f"stored snapshot {record.snapshot_id[:12]} is missing", session_id)
            ids = manifest_ids(session_id, record.snapshot_id, manifest)
            texts = self._get_texts(tx, [i for pair in ids.values() for i in pair if i is not None])
            snapshot = snapshot_from_texts(session_id, record.snapshot_id, ids, texts)
            self._remember(tx, texts)
            self._hold(self._snapshots, record.snapshot_id, snapshot)
        with self._cache_lock:
            self._seen[session_id] = (segments_id or "", record.snapshot_id)
            self._seen.move_to_end(session_id)
            while len(self._seen) > _KNOWN_LIMIT:
                self._seen.popitem(last=False)
        return ActiveEpoch(record, baseline, snapshot)

    def _held_baseline(self, segments_id: str) -> tuple[str, str] | None:
        """``(baseline id, text)`` validated for the stored segment list whose sha256 is ``segments_id``."""
        with self._cache_lock:
            held = self._baselines.get(segments_id)
            if held is not None and isinstance(held[1], tuple):  # stored by this process: its segments, joined once
                held = self._baselines[segments_id] = (held[0], "".join(held[1]))
            if held is not None:
                self._baselines.move_to_end(segments_id)
            return held  # type: ignore[return-value]

    def _held_snapshot(self, snapshot_id: str) -> Snapshot | None:
        with self._cache_lock:
            held = self._snapshots.get(snapshot_id)
            if held is not None:
                self._snapshots.move_to_end(snapshot_id)
            return held

    def _hold(self, cache: OrderedDict[str, Any], key: str, value: Any) -> None:
        with self._cache_lock:
            cache[key] = value
            cache.move_to_end(key)
            while len(cache) > _DECODED:
                cache.popitem(last=False)

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
            asked = self._asking(session_id, tail=tail)
            row = tx.one("SELECT nia_view(%s, %s, %s, %s::text[])", (session_id, asked.after, asked.mark, asked.known))
            return self._view_from(tx, session_id, row[0] if row else None, asked, tail=tail)

        return self._read_fresh(session_id, work)

    def _asking(self, session_id: str, *, tail: bool) -> _Asked:
        """What to ask ``nia_view`` for: the rows after those held (under their mark), else all or the tail."""
        after, mark = self._logs.known(session_id)
        if mark is None:
            after = -1 if tail else 0
        return _Asked(after, mark, *self._held_ids(session_id))

    def _decode_view(self, session_id: str, raw: Any, asked: _Asked, *, tail: bool) -> SessionView | None:
        """``raw`` from a write's answer (``None``: it does not serve, read anew); texts not in the cache are
        fetched afterwards (they never change)."""
        if asked.after is not None and asked.after < 0 and not tail:
            return None  # the write answered with the tail: the whole history is wanted
        try:
            try:
                return self._view_from(None, session_id, raw, asked, tail=tail)
            except _NeedTexts:
                return self._run(
                    session_id,
                    "read the session",
                    lambda tx: self._view_from(tx, session_id, raw, asked, tail=tail),
                    write=False,
                )
        except _Stale:
            return None

    def _view_from(
        self,
        tx: _Tx | None,
        session_id: str,
        raw: Any,
        asked: _Asked,
        *,
        tail: bool = False,
        history_only: bool = False,
    ) -> SessionView:
        """Decode and validate ``nia_view``'s answer (with ``history_only``, its history alone: the state is
        then :data:`_NO_STATE`)."""
        if raw is None:
            raise UnknownSession(f"no session {session_id!r} in {self.url}")
        try:
            session_row, epoch_row, manifest, pending_rows, mark, after, rows = raw
        except (TypeError, ValueError):
            raise CorruptRecord("its stored view does not read", session_id) from None
        state = _NO_STATE
        if not history_only:
            session = session_from_row(session_row)
            epoch = None
            if session.epoch is not None:
                epoch = self._active_epoch(
                    tx, session_id, session.epoch, epoch_row, manifest, asked.known, asked.segments_id
                )
            pending = tuple(pending_message(session_id, *row) for row in pending_rows)
            state = SessionState(session, epoch, pending)
        if after is None:
            return SessionView(state, ())
        entries = [history_entry(session_id, *row) for row in rows]
        if asked.after is not None and asked.after < 0:  # the tail, as asked: nothing held, nothing kept
            return SessionView(state, tuple(entries), tuple(entry.message for entry in entries), tail=True)
        if not isinstance(mark, str) or not isinstance(after, int):
            mark, after = None, 0
        try:
            history, messages = self._logs.extend(session_id, mark, after, entries)
        except LookupError:
            raise _Stale(session_id) from None
        if tail:
            start = tail_start(messages)
            return SessionView(state, history[start:], messages[start:], tail=True)
        return SessionView(state, history, messages)

    def _settled(self, session_id: str, answer: Mapping[str, Any], asked: _Asked | None = None) -> Any:
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
            asked = self._asking(session_id, tail=False)
            row = tx.one("SELECT nia_view(%s, %s, %s, %s::text[])", (session_id, asked.after, asked.mark, asked.known))
            return self._view_from(tx, session_id, row[0] if row else None, asked, history_only=True)

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
        return self._run(
            session_id, "read a snapshot", lambda tx: self._load_snapshot(tx, session_id, snapshot_id), write=False
        )

    # -- input and replies ----------------------------------------------------------------

    def enqueue(self, session_id: str, message: Message) -> None:
        if message.kind not in ("user", "tool_result"):
            raise ValueError(f"only user input and tool results wait for promotion, not {message.kind!r}")
        refuse_unsendable(session_id, message)

        asked: list[_Asked] = []

        def build() -> _Call:
            token = self._token()
            asked[:] = [self._asking(session_id, tail=True)]
            return _Call(
                "SELECT nia_enqueue(%s, %s, %s, %s, %s, %s, %s, %s::text[])",
                (token, session_id, message.kind, message_body(message), now(), *asked[0].params()),
                token,
            )

        self._settled(session_id, self._call(session_id, "keep the input", build), asked[0])

    def promote(self, session_id: str, *, location: str) -> list[Message]:
        asked: list[_Asked] = []

        def build() -> _Call:
            token = self._token()
            asked[:] = [self._asking(session_id, tail=True)]
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
            snapshot_id = self._put_snapshot(tx, snapshot, also=segment_texts)
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
        self._hold(self._baselines, content_id(canonical_list(segment_ids)), (baseline_id, baseline))
        self._hold(self._snapshots, content_id(snapshot_manifest(snapshot)[0]), snapshot)
        return record

    def admit_update(
        self, session_id: str, *, expected_revision: int, epoch: int, text: str, snapshot: Snapshot
    ) -> Message:
        manifest, texts = snapshot_manifest(snapshot)
        snapshot_id = content_id(manifest)
        body = message_body(Message("system_update", text))

        asked: list[_Asked] = []

        def build() -> _Call:
            token = self._token()
            known = self._asking(session_id, tail=True)
            # The snapshot is this one once the write commits (held then): the answer need not carry it.
            asked[:] = [known._replace(known=[*known.known, snapshot_id])]
            call = _Call(
                "SELECT nia_admit(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::text[])",
                (token, session_id, expected_revision, epoch, body, snapshot_id, now(), *asked[0].params()),
                token,
            )
            self._snapshot_ahead(call, snapshot_id, manifest, texts)
            return call

        answer = self._call(session_id, "store the mid-conversation system message", build)
        if "ok" in answer:
            self._hold(self._snapshots, snapshot_id, snapshot)
        (seq,) = self._settled(session_id, answer, asked[0])
        return Message("system_update", text, seq=seq, epoch=epoch)

    def _snapshot_ahead(self, call: _Call, snapshot_id: str, manifest: str, texts: Mapping[str, str]) -> None:
        """Store a snapshot ahead of ``call``, in its transaction, with no answer awaited.

        Texts this process already stored or saw are not sent again; the rest
        go with ``ON CONFLICT DO NOTHING`` (sorted: concurrent writers lock ids
        in one order). What is sent is cached once the write commits.
        """
        call.read.update(texts)  # the view the write answers with names them
        if self._is_known(snapshot_id):
            return
        unknown = sorted(i for i in texts if not self._is_known(i))
        if unknown:
            call.before.append(
                (
                    "INSERT INTO blobs (id, data) SELECT * FROM unnest(%s::text[], %s::bytea[])"
                    " ON CONFLICT (id) DO NOTHING",
                    (unknown, [texts[i].encode("utf-8") for i in unknown]),
                )
            )
        call.before.append(
            (
                "INSERT INTO snapshots (id, manifest) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING",
                (snapshot_id, manifest),
            )
        )
        call.stored.update(unknown)
        call.stored.add(snapshot_id)

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


class _NeedTexts(Exception):
    """Texts a view names are not in the process's cache: read them (they never change)."""


class _Stale(Exception):
    """A read left out what this process held when it asked (evicted since): read again, asking for all of it."""


_NO_STATE = SessionState(SessionRecord("", "", "", "", 0, None), None)
"""Stands for the state in a history read, which decodes none."""


class _Asked(NamedTuple):
    """What a read asked ``nia_view`` for: see its definition in postgres_schema.py."""

    after: int | None
    mark: str | None
    known: list[str]
    segments_id: str | None = None
    """The segment list id among ``known``."""

    def params(self) -> tuple[int | None, str | None, list[str]]:
        """The three parameters of ``nia_view`` after the session id."""
        return self.after, self.mark, self.known


def _first(cursor: psycopg.Cursor[Any]) -> int:
    row = cursor.fetchone()
    assert row is not None
    return int(row[0])


def _qualified(alias: str, columns: str) -> str:
    return ", ".join(f"{alias}.{column.strip()}" for column in columns.split(","))


def canonical_list(ids: Sequence[str]) -> str:
    """A baseline's segment ids as stored (the same JSON as the SQLite store writes)."""
    return json.dumps(list(ids))
