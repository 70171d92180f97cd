"""The embedded SQLite store: one file, WAL mode, versioned migrations. All of nia's SQL lives here.

Writes take the write lock up front (``BEGIN IMMEDIATE``) so two processes
never interleave inside a transaction; reads run in a read transaction so a
session, its epoch and its snapshot are seen at one instant. Any SQLite
failure rolls the transaction back and surfaces as a :class:`StoreError`
naming the session.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nia_core.context import Snapshot
from nia_core.message import Message
from nia_core.sessions.histories import Histories
from nia_core.sessions.replies import ReplyRecord, encode_reply, with_record
from nia_core.sessions.serialize import (
    after_prefix,
    baseline_from_texts,
    compaction_json,
    content_id,
    epoch_columns,
    epoch_from_row,
    history_entry,
    joined_id,
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
    Segments,
    SessionRecord,
    SessionState,
    SessionView,
    Store,
    tail_start,
)
from nia_core.sessions.store_errors import (
    CorruptRecord,
    DatabaseFull,
    DatabaseLocked,
    NewerSchema,
    RevisionConflict,
    StoreError,
    UnknownSession,
    not_utf8,
)

if TYPE_CHECKING:  # a listing is `nia session ls`'s: imported when asked for
    from nia_core.sessions.listing import SessionActivity, SessionListing

log = logging.getLogger("nia.store")

LOCK_WAIT = 5.0
"""Seconds to wait for another process's write lock before giving up."""
PAGE_CACHE_KIB = 512
"""SQLite's page cache per connection (its default is 2 MiB). The store keeps what it decoded (texts by
content id, baselines, snapshots, histories), so pages of those rows need not stay cached twice; 128 pages
hold the indexes a turn walks."""
LOW_SPACE = 1024 * 1024
"""Free bytes under which an I/O error is reported as the disk being full (it is what SQLite meets then)."""

NEW_MARK = "lower(hex(randomblob(16)))"
"""A fresh history mark, in SQL."""

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            # Content-addressed texts: snapshot values, removal texts, baseline segments.
            "CREATE TABLE blobs (id TEXT PRIMARY KEY, data TEXT NOT NULL)",
            # A snapshot is a manifest {key: [value id, removal id | null]}, itself content-addressed.
            "CREATE TABLE snapshots (id TEXT PRIMARY KEY, manifest TEXT NOT NULL)",
            """CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                location TEXT NOT NULL,
                model TEXT NOT NULL,
                created TEXT NOT NULL,
                revision INTEGER NOT NULL DEFAULT 0,
                epoch INTEGER,
                history_from INTEGER NOT NULL DEFAULT 0,
                summary_seq INTEGER,
                compaction TEXT
            )""",
            """CREATE TABLE epochs (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                number INTEGER NOT NULL,
                baseline_id TEXT NOT NULL,
                segments TEXT NOT NULL,
                initial_snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
                snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
                start_seq INTEGER NOT NULL,
                model TEXT NOT NULL,
                location TEXT NOT NULL,
                reason TEXT NOT NULL,
                created TEXT NOT NULL,
                PRIMARY KEY (session_id, number)
            )""",
            """CREATE TABLE messages (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                seq INTEGER NOT NULL,
                epoch INTEGER,
                kind TEXT NOT NULL,
                body TEXT NOT NULL,
                snapshot_id TEXT REFERENCES snapshots(id),
                created TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
            """CREATE TABLE pending (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
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
    # 3: PostgreSQL's server-side write functions (postgres_schema.py); nothing changes here, and the
    # two stores keep one version number.
    (3, ()),
    (
        4,
        (
            # The history mark (nia_core/sessions/histories.py): a random token that any change to a
            # session's stored messages other than an append replaces, so a reader that validated the rows
            # before reads only the new ones. NULL: never kept (a session row nia did not write).
            "ALTER TABLE sessions ADD COLUMN history_mark TEXT",
            "UPDATE sessions SET history_mark = lower(hex(randomblob(16)))",
            f"""CREATE TRIGGER messages_updated AFTER UPDATE ON messages BEGIN
                UPDATE sessions SET history_mark = {NEW_MARK}
                WHERE id IN (OLD.session_id, NEW.session_id) AND history_mark IS NOT NULL;
            END""",
            f"""CREATE TRIGGER messages_deleted AFTER DELETE ON messages BEGIN
                UPDATE sessions SET history_mark = {NEW_MARK} WHERE id = OLD.session_id AND history_mark IS NOT NULL;
            END""",
            # nia appends after the last message; a row inserted before it rewrites the history.
            f"""CREATE TRIGGER messages_inserted_before AFTER INSERT ON messages
            WHEN EXISTS (SELECT 1 FROM messages WHERE session_id = NEW.session_id AND seq > NEW.seq) BEGIN
                UPDATE sessions SET history_mark = {NEW_MARK} WHERE id = NEW.session_id AND history_mark IS NOT NULL;
            END""",
            # The tail of a history (its last reply on) without reading the rest.
            "CREATE INDEX messages_replies ON messages (session_id, seq) WHERE kind = 'assistant'",
        ),
    ),
    # 5: PostgreSQL's index of session ids in byte order (for naming a session by a prefix of its id);
    # SQLite's primary key already is one.
    (5, ()),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The newest schema this nia knows; a database at a higher version is refused."""

_SESSION_COLUMNS = "id, location, model, created, revision, epoch, history_from, summary_seq, compaction"
_MESSAGE_COLUMNS = "seq, epoch, kind, body, snapshot_id, created, reply"
_CACHE_BYTES = 64 * 1024 * 1024


def _about(session_id: str | None) -> str:
    return f" (session {session_id})" if session_id else ""


def _ms(since: float) -> float:
    return (time.monotonic() - since) * 1000


_left_open: list[sqlite3.Connection] = []
"""Connections whose ``-wal`` or ``-shm`` was replaced: never closed (see :meth:`SQLiteStore.shared_files_replaced`)."""


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


class SQLiteStore(Store):
    """The default store.

    ``synchronous="full"`` (the default) syncs every commit to disk, so nothing
    the model was sent can be lost even on power failure; ``"normal"`` is
    faster and still safe against a crashed or killed process. ``pragmas`` are
    applied to the connection after nia's own (tuning, tests).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        timeout: float = LOCK_WAIT,
        synchronous: str = "full",
        pragmas: Mapping[str, str | int] | None = None,
        create: bool = True,
    ) -> None:
        self.path = Path(path).expanduser()
        self.url = str(self.path)
        self.timeout = timeout
        self._lock = threading.RLock()
        # Content-addressed rows and history rows never change once written, so what this
        # connection has read and checked once is kept (within a byte budget) and not re-read.
        self._texts: dict[str, str] = {}
        """Texts by id, hash-checked (so known to be stored intact)."""
        self._snapshots: dict[str, Snapshot] = {}
        self._baselines: dict[tuple[str, str], str | tuple[str, ...]] = {}
        """Baselines by (id, segment list); a new epoch's as its segments, joined at the first read."""
        self._logs = Histories()
        """Histories read and validated, each under its history mark (see histories.py)."""
        self._ids: dict[str, str] = {}
        self._cached_bytes = 0
        # A reader (create=False) never creates a file or folder: a missing database reads as an empty one.
        target: str | Path = self.path
        if not create and not self.path.exists():
            target = ":memory:"
        elif create:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the folder for the database {self.path}: {exc.strerror or exc}"
                ) from None
        if target is self.path:
            self._repair_companions()
        with self._guard(None, "open the database"):
            self._conn = sqlite3.connect(target, timeout=timeout, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute(f"PRAGMA cache_size = -{PAGE_CACHE_KIB}")
            if synchronous.lower() not in ("full", "normal"):
                raise StoreError(f"synchronous must be 'full' or 'normal', not {synchronous!r}")
            self._conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            for name, value in (pragmas or {}).items():
                if not name.replace("_", "").isalnum():
                    raise StoreError(f"invalid pragma name {name!r}")
                self._conn.execute(f"PRAGMA {name} = {int(value) if isinstance(value, int) else repr(str(value))}")
            self._migrate()
            self._conn.execute("PRAGMA journal_mode = WAL")
        self._identity = _identity(self.path) if target is self.path else None
        """The database file's (device, inode) once open: :meth:`still_current` compares it."""
        self._companion_identities: list[tuple[int, int] | None] | None = None
        """The ``-wal`` and ``-shm`` files this connection uses, once :meth:`rest` saw them."""

    def __repr__(self) -> str:
        return f"SQLiteStore({self.url!r})"

    # -- plumbing -----------------------------------------------------------------------

    @contextlib.contextmanager
    def _guard(self, session_id: str | None, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._translate(exc, session_id, action) from exc
        except UnicodeEncodeError as exc:  # a lone surrogate (an undecodable argument byte) in a value
            raise not_utf8(action, exc, session_id) from None

    def _translate(self, exc: sqlite3.Error, session_id: str | None, action: str) -> StoreError:
        name = getattr(exc, "sqlite_errorname", "") or ""
        text = str(exc)
        where = f"the database {self.path}"
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
            return DatabaseLocked(
                f"cannot {action}: {where} is locked by another process (waited {self.timeout:g}s); "
                "nothing was changed, try again",
                session_id,
            )
        full = DatabaseFull(f"cannot {action}: {where} or its disk is full; nothing was changed", session_id)
        if name.startswith("SQLITE_FULL") or "full" in text:
            return full
        if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
            return CorruptRecord(f"cannot {action}: {where} is damaged or not a database ({text})", session_id)
        io = name.startswith(("SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN")) or "I/O error" in text
        if io and self._low_on_space():  # a write to the -wal or -shm that found no room says "disk I/O error"
            return full
        stuck = self._unwritable_companions() if io else []
        if stuck:
            return StoreError(
                f"cannot {action}: {stuck[0]} is read-only (left by an earlier run as another user?), so "
                f"{where} cannot be used; make it writable (chmod u+w {stuck[0]}) or delete it while no nia "
                "uses the database; nothing was changed",
                session_id,
            )
        if name.startswith("SQLITE_READONLY"):
            return StoreError(f"cannot {action}: {where} is read-only", session_id)
        if name.startswith("SQLITE_CANTOPEN"):
            return StoreError(f"cannot {action}: cannot open {where} ({text})", session_id)
        return StoreError(f"cannot {action}: database error on {where}: {text}", session_id)

    def _companions(self) -> list[Path]:
        """The WAL and shared-memory files SQLite keeps beside the database."""
        return [self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm")]

    def _low_on_space(self) -> bool:
        import shutil  # only after a failed write

        try:
            return shutil.disk_usage(self.path.parent).free < LOW_SPACE
        except OSError:
            return False

    def _unwritable_companions(self) -> list[Path]:
        return [p for p in self._companions() if p.exists() and not os.access(p, os.W_OK)]

    def _repair_companions(self) -> None:
        """Make our own read-only ``-wal``/``-shm`` (left by an earlier run) writable again.

        SQLite opens a read-only ``-shm`` read-only and then refuses every
        write; a mode change does not disturb another process that has the file
        mapped. A file owned by someone else is left alone (the error says so).
        """
        for companion in self._companions():
            with contextlib.suppress(OSError):
                info = companion.stat()
                if info.st_uid == os.geteuid() and not info.st_mode & stat.S_IWUSR:
                    companion.chmod(stat.S_IMODE(info.st_mode) | stat.S_IWUSR)

    @contextlib.contextmanager
    def _transaction(self, session_id: str | None, action: str, *, write: bool) -> Iterator[sqlite3.Connection]:
        with self._lock, self._guard(session_id, action):
            conn = self._conn
            started = time.monotonic()
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                log.debug("sqlite: %s%s: rolled back (%s)", action, _about(session_id), type(exc).__name__)
                raise
            if log.isEnabledFor(logging.DEBUG):
                kind = "committed" if write else "read"
                log.debug("sqlite: %s%s: %s in %.1f ms", action, _about(session_id), kind, _ms(started))

    def _write(self, session_id: str | None, action: str) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._transaction(session_id, action, write=True)

    def _read(self, session_id: str | None, action: str) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._transaction(session_id, action, write=False)

    def _migrate(self) -> None:
        conn = self._conn
        version = self._schema_version(conn)
        if version == SCHEMA_VERSION:
            return
        self._check_version(version)
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._schema_version(conn)
            self._check_version(version)
            if version is None:
                conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                conn.execute("INSERT INTO schema_version (version) VALUES (0)")
                version = 0
            for target, statements in MIGRATIONS:
                if target > version:
                    for statement in statements:
                        conn.execute(statement)
                    conn.execute("UPDATE schema_version SET version = ?", (target,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _schema_version(self, conn: sqlite3.Connection) -> int | None:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "schema_version" not in tables:
            others = sorted(tables - {"sqlite_sequence"})
            if others:
                raise StoreError(
                    f"{self.path} is not a nia database (it has tables {', '.join(others)} but no schema_version)"
                )
            return None
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        if row is None or not isinstance(row[0], int):
            raise CorruptRecord(f"the database {self.path} has a damaged schema_version table")
        return int(row[0])

    def _check_version(self, version: int | None) -> None:
        if version is not None and version > SCHEMA_VERSION:
            raise NewerSchema(
                f"the database {self.path} was written by a newer nia (schema version {version}; "
                f"this nia knows up to {SCHEMA_VERSION}); upgrade nia, or set NIA_DB to use another database"
            )

    def close(self) -> None:
        with self._lock:
            if self.shared_files_replaced():
                # Closing would checkpoint this connection's (removed) -wal into the database and then delete the
                # -wal file of that name, another process's now, with what it committed: left open until this
                # process ends (its own -wal holds nothing: :meth:`rest` emptied it).
                _left_open.append(self._conn)
                return
            self._conn.close()

    def shared_files_replaced(self) -> bool:
        """The ``-wal`` or ``-shm`` this connection uses is no longer the file of that name (removed) while the
        database file is the same: SQLite shares one ``-shm`` per database among the connections of
        a process, so a connection opened now in this process would use the removed one and overwrite what
        another process wrote to the new ``-wal``, and closing this one would delete that ``-wal``."""
        known = self._companion_identities
        if known is None or self._identity is None or _identity(self.path) != self._identity:
            return False  # a database moved or replaced whole has a -shm of its own: it is simply opened again
        return [_identity(p) for p in self._companions()] != known

    def rest(self) -> None:
        """Copy what the write-ahead log holds into the database file and empty the log (a checkpoint), without
        waiting for anyone: the file alone (a backup, a copy) then holds everything admitted, and a ``-wal`` or
        ``-shm`` removed while this connection stays open (:meth:`still_current` then says no) loses nothing."""
        with self._lock:
            try:
                self._conn.execute("PRAGMA busy_timeout = 0")
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                finally:
                    self._conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            except sqlite3.Error:
                return
            if self._companion_identities is None:
                self._companion_identities = [_identity(p) for p in self._companions()]

    def still_current(self) -> bool:
        """The file at :attr:`path` is still the one this connection has open, with the ``-wal`` and ``-shm`` it
        uses, at nia's schema, no transaction left open: a database deleted or replaced meanwhile (``rm``, a
        restored backup), or its companions removed, is opened again by the caller."""
        if self._identity is None or _identity(self.path) != self._identity or self.shared_files_replaced():
            return False
        with self._lock:
            try:
                return not self._conn.in_transaction and self._schema_version(self._conn) == SCHEMA_VERSION
            except (sqlite3.Error, StoreError):
                return False

    # -- content-addressed texts ----------------------------------------------------------

    def _charge(self, size: int) -> None:
        """Account ``size`` cached bytes; past the budget, forget everything cached."""
        self._cached_bytes += size
        if self._cached_bytes > _CACHE_BYTES:
            self._texts.clear()
            self._snapshots.clear()
            self._baselines.clear()
            self._ids.clear()
            self._cached_bytes = size

    def _id_of(self, text: str) -> str:
        """:func:`content_id`, remembered for large texts (the same docs are admitted again and again)."""
        if len(text) < 4096:
            return content_id(text)
        text_id = self._ids.get(text)
        if text_id is None:
            text_id = self._ids[text] = content_id(text)
            self._charge(len(text))
        return text_id

    def _put_texts(self, conn: sqlite3.Connection, texts: Mapping[str, str]) -> None:
        for text_id, text in texts.items():
            if text_id not in self._texts:
                conn.execute("INSERT OR IGNORE INTO blobs (id, data) VALUES (?, ?)", (text_id, text))

    def _get_texts(self, conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, str]:
        """Texts by id: checked ones from memory, the rest from the database (the caller checks them)."""
        found = {i: self._texts[i] for i in ids if i in self._texts}
        wanted = sorted(set(ids) - found.keys())
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for text_id, data in conn.execute(f"SELECT id, data FROM blobs WHERE id IN ({marks})", chunk):
                found[text_id] = data
        return found

    def _remember(self, texts: Mapping[str, str]) -> None:
        """Keep texts the caller has just checked."""
        for text_id, text in texts.items():
            if text_id not in self._texts:
                self._texts[text_id] = text
                self._charge(len(text))

    def _put_snapshot(self, conn: sqlite3.Connection, snapshot: Snapshot) -> str:
        manifest, texts = snapshot_manifest(snapshot, self._id_of)
        snapshot_id = content_id(manifest)
        self._put_texts(conn, texts)
        conn.execute("INSERT OR IGNORE INTO snapshots (id, manifest) VALUES (?, ?)", (snapshot_id, manifest))
        return snapshot_id

    def _load_snapshot(self, conn: sqlite3.Connection, session_id: str, snapshot_id: str) -> Snapshot:
        cached = self._snapshots.get(snapshot_id)
        if cached is not None:
            return cached
        row = conn.execute("SELECT manifest FROM snapshots WHERE id = ?", (snapshot_id,)).fetchone()
        if row is None:
            raise CorruptRecord(f"stored snapshot {snapshot_id[:12]} is missing", session_id)
        ids = manifest_ids(session_id, snapshot_id, row[0])
        wanted = [i for pair in ids.values() for i in pair if i is not None]
        texts = self._get_texts(conn, wanted)
        snapshot = snapshot_from_texts(session_id, snapshot_id, ids, texts, self._texts)
        self._remember(texts)
        self._snapshots[snapshot_id] = snapshot
        return snapshot

    # -- rows -----------------------------------------------------------------------------

    def _session_row(self, conn: sqlite3.Connection, session_id: str) -> SessionRecord:
        row = conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise UnknownSession(f"no session {session_id!r} in {self.path}")
        return session_from_row(row)

    def _next_seq(self, conn: sqlite3.Connection, session_id: str) -> int:
        row = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?", (session_id,))
        return int(row.fetchone()[0])

    def _insert_message(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        seq: int,
        epoch: int | None,
        message: Message,
        snapshot_id: str | None = None,
        reply: ReplyRecord | None = None,
    ) -> Message:
        conn.execute(
            "INSERT INTO messages (session_id, seq, epoch, kind, body, snapshot_id, created, reply)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                seq,
                epoch,
                message.kind,
                message_body(message),
                snapshot_id,
                now(),
                None if reply is None else encode_reply(reply),
            ),
        )
        stored = dataclasses.replace(message, seq=seq, epoch=epoch)
        return with_record(stored, reply)

    # -- sessions -------------------------------------------------------------------------

    def create_session(self, location: str, model: str, *, session_id: str | None = None) -> SessionRecord:
        new_id = session_id or os.urandom(6).hex()
        with self._write(new_id, "create the session") as conn:
            conn.execute(
                "INSERT INTO sessions (id, location, model, created, history_mark) VALUES (?, ?, ?, ?, ?)",
                (new_id, location, model, now(), os.urandom(16).hex()),
            )
            return self._session_row(conn, new_id)

    def session(self, session_id: str) -> SessionRecord:
        with self._read(session_id, "read the session") as conn:
            return self._session_row(conn, session_id)

    def resolve(self, prefix: str) -> str:
        # A range of the primary key's index, so naming a session reads a few rows however many there are.
        upper = after_prefix(prefix)
        below = "" if upper is None else " AND id < ?"
        with self._read(None, "look up the session") as conn:
            rows = conn.execute(
                f"SELECT id FROM sessions WHERE id >= ?{below} AND substr(id, 1, ?) = ? ORDER BY id LIMIT 6",
                (prefix, *([upper] if upper is not None else []), len(prefix), prefix),
            ).fetchall()
        return pick_session(prefix, [str(row[0]) for row in rows], str(self.path))

    def list_sessions(self) -> SessionListing:
        from nia_core.sessions.listing import listing

        with self._read(None, "list the sessions") as conn:
            rows = conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY created, id").fetchall()
        return listing(rows)

    def activity(self) -> dict[str, SessionActivity]:
        from nia_core.sessions.listing import ACTIVITY_QUERY, activity

        with self._read(None, "read the sessions' activity") as conn:
            return activity(conn.execute(ACTIVITY_QUERY).fetchall())

    def delete_session(self, session_id: str) -> None:
        with self._write(session_id, "delete the session") as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
                raise UnknownSession(f"no session {session_id!r} in {self.path}")
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c"
                    " WHERE m.type = 'table' AND c.name = 'session_id' ORDER BY m.name"
                )
            ]
            # No mark while its rows go: the triggers then leave the row alone instead of renewing it per message.
            conn.execute("UPDATE sessions SET history_mark = NULL WHERE id = ?", (session_id,))
            for table in tables:  # every table naming a session, whoever added it; then the session itself
                conn.execute(f'DELETE FROM "{table}" WHERE session_id = ?', (session_id,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        self._logs.forget(session_id)

    def state(self, session_id: str) -> SessionState:
        with self._read(session_id, "read the session") as conn:
            return self._state(conn, session_id, self._session_row(conn, session_id))

    def _state(self, conn: sqlite3.Connection, session_id: str, session: SessionRecord) -> SessionState:
        epoch = None
        if session.epoch is not None:
            epoch = self._active_epoch(conn, session_id, session.epoch)
        pending = tuple(
            pending_message(session_id, row[0], row[1], row[2])
            for row in conn.execute(
                "SELECT id, kind, body FROM pending WHERE session_id = ? ORDER BY id", (session_id,)
            )
        )
        return SessionState(session, epoch, pending)

    def view(self, session_id: str, *, after_write: bool = False, tail: bool = False) -> SessionView:
        """State and history in one read transaction; only the rows not validated before are read."""
        with self._read(session_id, "read the session") as conn:
            session, mark = self._session_and_mark(conn, session_id)
            state = self._state(conn, session_id, session)
            entries, messages, only_tail = self._history(conn, session_id, mark, tail=tail)
        return SessionView(state, entries, messages, tail=only_tail)

    def _active_epoch(self, conn: sqlite3.Connection, session_id: str, number: int) -> ActiveEpoch:
        row = conn.execute(
            f"SELECT {epoch_columns()} FROM epochs WHERE session_id = ? AND number = ?", (session_id, number)
        ).fetchone()
        if row is None:
            raise CorruptRecord(f"its active epoch {number} is missing", session_id)
        record, segments = epoch_from_row(session_id, row)
        cached = self._baselines.get((record.baseline_id, segments))
        if isinstance(cached, tuple):  # written by this store: its segments, hashed as they were stored
            cached = self._baselines[(record.baseline_id, segments)] = "".join(cached)
        baseline = cached
        if baseline is None:
            segment_ids = parse_segments(session_id, segments, number)
            texts = self._get_texts(conn, segment_ids)
            baseline = baseline_from_texts(session_id, record.baseline_id, segment_ids, texts, number, self._texts)
            # The joined baseline is kept, not its segments beside it: the same text is held once. They go
            # before the snapshot's texts are read, which then take the memory they leave.
            del texts
            self._baselines[(record.baseline_id, segments)] = baseline
            self._charge(len(baseline))
        snapshot = self._load_snapshot(conn, session_id, record.snapshot_id)
        return ActiveEpoch(record, baseline, snapshot)

    def history(self, session_id: str) -> list[HistoryEntry]:
        with self._read(session_id, "read the history") as conn:
            _, mark = self._session_and_mark(conn, session_id)
            entries, _, _ = self._history(conn, session_id, mark, tail=False)
        return list(entries)

    def _session_and_mark(self, conn: sqlite3.Connection, session_id: str) -> tuple[SessionRecord, str | None]:
        row = conn.execute(
            f"SELECT {_SESSION_COLUMNS}, history_mark FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise UnknownSession(f"no session {session_id!r} in {self.path}")
        mark = row[-1]
        return session_from_row(row[:-1]), mark if isinstance(mark, str) and mark else None

    def _history(
        self, conn: sqlite3.Connection, session_id: str, mark: str | None, *, tail: bool
    ) -> tuple[Sequence[HistoryEntry], Sequence[Message], bool]:
        """``(entries, messages, only the tail)``: the rows after those validated before under ``mark``, validated.

        Without a log for the session, ``tail`` reads only the tail (and keeps nothing).
        """
        log = self._logs.held(session_id, mark)
        after = log.last if log is not None else 0
        if log is None and tail:
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq >="
                " (SELECT max(seq) FROM messages WHERE session_id = ? AND kind = 'assistant') ORDER BY seq",
                (session_id, session_id),
            ).fetchall()
            found = tuple(history_entry(session_id, *row) for row in rows)
            return found, tuple(entry.message for entry in found), True
        while True:
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
                (session_id, after),
            ).fetchall()
            try:
                entries, messages = self._logs.extend(
                    session_id, mark, after, [history_entry(session_id, *row) for row in rows]
                )
                break
            except LookupError:  # the log was dropped meanwhile: read every row
                after = 0
        if tail:
            start = tail_start(messages)
            return entries[start:], messages[start:], True
        return entries, messages, False

    def epochs(self, session_id: str) -> list[EpochRecord]:
        with self._read(session_id, "read the epochs") as conn:
            self._session_row(conn, session_id)
            rows = conn.execute(
                f"SELECT {epoch_columns()} FROM epochs WHERE session_id = ? ORDER BY number", (session_id,)
            ).fetchall()
        return [epoch_from_row(session_id, row)[0] for row in rows]

    def snapshot(self, session_id: str, snapshot_id: str) -> Snapshot:
        with self._read(session_id, "read a snapshot") as conn:
            return self._load_snapshot(conn, session_id, snapshot_id)

    # -- input and replies ----------------------------------------------------------------

    def enqueue(self, session_id: str, message: Message) -> None:
        if message.kind not in ("user", "tool_result"):
            raise ValueError(f"only user input and tool results wait for promotion, not {message.kind!r}")
        refuse_unsendable(session_id, message)
        with self._write(session_id, "keep the input") as conn:
            self._session_row(conn, session_id)
            conn.execute(
                "INSERT INTO pending (session_id, kind, body, created) VALUES (?, ?, ?, ?)",
                (session_id, message.kind, message_body(message), now()),
            )

    def promote(self, session_id: str, *, location: str) -> list[Message]:
        with self._write(session_id, "promote the input") as conn:
            session = self._session_row(conn, session_id)
            if session.epoch is None:
                raise RevisionConflict(session_id, "no active epoch (moved?)")
            if session.location != location:
                raise RevisionConflict(session_id, f"moved to {session.location}")
            rows = conn.execute(
                "SELECT id, kind, body FROM pending WHERE session_id = ? ORDER BY id", (session_id,)
            ).fetchall()
            seq = self._next_seq(conn, session_id)
            promoted = []
            for offset, (pending_id, kind, body) in enumerate(rows):
                message = pending_message(session_id, pending_id, kind, body)
                promoted.append(self._insert_message(conn, session_id, seq + offset, session.epoch, message))
            if rows:
                conn.execute("DELETE FROM pending WHERE session_id = ? AND id <= ?", (session_id, rows[-1][0]))
            return promoted

    def append(self, session_id: str, message: Message, *, reply: ReplyRecord | None = None) -> Message:
        with self._write(session_id, f"store the {message.kind} message") as conn:
            session = self._session_row(conn, session_id)
            epoch = session.epoch
            if epoch is None:
                row = conn.execute("SELECT MAX(number) FROM epochs WHERE session_id = ?", (session_id,)).fetchone()
                epoch = row[0]
            seq = self._next_seq(conn, session_id)
            return self._insert_message(conn, session_id, seq, epoch, message, reply=reply)

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
        # Each segment is cut, hashed and stored on its own (Segments cuts them on demand): the baseline is
        # never held a second time as its pieces.
        baseline_id = content_id(segments.text) if isinstance(segments, Segments) else joined_id(segments)
        segment_ids = [content_id(text) for text in segments]
        listed = json.dumps(segment_ids)
        with self._write(session_id, "store the new context epoch") as conn:
            session = self._session_row(conn, session_id)
            if session.revision != expected_revision:
                raise RevisionConflict(session_id)
            if session.location != location:
                raise RevisionConflict(session_id, f"moved to {session.location}")
            snapshot_id = self._put_snapshot(conn, snapshot)
            stored: set[str] = set()
            for index, text_id in enumerate(segment_ids):
                if text_id not in self._texts and text_id not in stored:
                    conn.execute("INSERT OR IGNORE INTO blobs (id, data) VALUES (?, ?)", (text_id, segments[index]))
                    stored.add(text_id)
            number = conn.execute(
                "SELECT COALESCE(MAX(number), 0) + 1 FROM epochs WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            seq = self._next_seq(conn, session_id)
            history_from, summary_seq = session.history_from, session.summary_seq
            if compaction is not None:
                self._insert_message(conn, session_id, seq, number, Message("summary", compaction.summary))
                summary_seq = seq
                history_from = max(history_from, compaction.covers_upto + 1)
            conn.execute(
                "INSERT INTO epochs (session_id, number, baseline_id, segments, initial_snapshot_id, snapshot_id,"
                " start_seq, model, location, reason, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    number,
                    baseline_id,
                    listed,
                    snapshot_id,
                    snapshot_id,
                    seq,
                    model,
                    location,
                    reason,
                    now(),
                ),
            )
            conn.execute(
                "UPDATE sessions SET epoch = ?, revision = revision + 1, history_from = ?, summary_seq = ?,"
                " compaction = CASE WHEN ? THEN NULL ELSE compaction END WHERE id = ?",
                (number, history_from, summary_seq, compaction is not None, session_id),
            )
            record = self._session_row(conn, session_id)
        # Committed: the state read that follows (the same boundary) takes the baseline and snapshot
        # just written from memory, rather than reading a second copy of them back from the database.
        with self._lock:  # the caller's own text (or its segments, joined at the first read): never a copy
            self._snapshots[snapshot_id] = snapshot
            self._baselines[(baseline_id, listed)] = (
                segments.text if isinstance(segments, Segments) else tuple(segments)
            )
            self._charge(sum(map(len, segments)) if not isinstance(segments, Segments) else len(segments.text))
        return record

    def admit_update(
        self, session_id: str, *, expected_revision: int, epoch: int, text: str, snapshot: Snapshot
    ) -> Message:
        with self._write(session_id, "store the mid-conversation system message") as conn:
            session = self._session_row(conn, session_id)
            if session.revision != expected_revision or session.epoch != epoch:
                raise RevisionConflict(session_id)
            snapshot_id = self._put_snapshot(conn, snapshot)
            seq = self._next_seq(conn, session_id)
            message = self._insert_message(conn, session_id, seq, epoch, Message("system_update", text), snapshot_id)
            conn.execute(
                "UPDATE epochs SET snapshot_id = ? WHERE session_id = ? AND number = ?",
                (snapshot_id, session_id, epoch),
            )
            conn.execute("UPDATE sessions SET revision = revision + 1 WHERE id = ?", (session_id,))
            return message

    # -- user commands --------------------------------------------------------------------

    def _bump(self, session_id: str, action: str, assignments: str, values: Sequence[Any]) -> SessionRecord:
        with self._write(session_id, action) as conn:
            self._session_row(conn, session_id)
            conn.execute(
                f"UPDATE sessions SET {assignments}, revision = revision + 1 WHERE id = ?", (*values, session_id)
            )
            return self._session_row(conn, session_id)

    def move(self, session_id: str, location: str) -> SessionRecord:
        return self._bump(session_id, "move the session", "location = ?, epoch = NULL", (location,))

    def set_model(self, session_id: str, model: str) -> SessionRecord:
        return self._bump(session_id, "switch the model", "model = ?", (model,))

    def request_compaction(self, session_id: str, compaction: PendingCompaction) -> SessionRecord:
        return self._bump(session_id, "record the compaction", "compaction = ?", (compaction_json(compaction),))
