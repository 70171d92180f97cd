"""The PostgreSQL store's transactions: one server-side transaction per operation, and recovery.

A lost connection (a terminated backend, a restarted server) is retried until
``timeout``; when it is lost while committing, the outcome is looked up before
anything is redone (see :mod:`nia_core.sessions.postgres`). Errors become one
clear :class:`~nia_core.sessions.store_errors.StoreError` each.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from nia_core.about import extra_install
from nia_core.sessions.store_errors import DatabaseFull, DatabaseLocked, StoreError, UnsupportedDatabase, not_utf8

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

T = TypeVar("T")

log = logging.getLogger("nia.store")


def _psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401 - checked here so the error names the missing extra
    except ImportError:
        raise UnsupportedDatabase(
            f"NIA_DB is a PostgreSQL URL but psycopg is not installed; install it with: {extra_install('postgres')}"
        ) from None
    return psycopg


def display_url(url: str) -> str:
    """``url`` without its password, for messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 - a URL we cannot parse is shown by its scheme only
        return url.split("://", 1)[0] + "://…" if "://" in url else "(unparsable connection string)"
    user = f"{info['user']}@" if info.get("user") else ""
    host = str(info.get("host") or "localhost")
    port = f":{info['port']}" if info.get("port") else ""
    return f"postgresql://{user}{host}{port}/{info.get('dbname') or ''}"


def _one_line(exc: BaseException) -> str:
    """The server's primary message when there is one (not its CONTEXT lines), else the client's, on one line.

    Not :func:`nia_core.errors.one_line`: a database error is worded by the server, not by its Python type.
    """
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    lines = [line.strip() for line in str(primary or exc).splitlines() if line.strip()]
    return "; ".join(lines) or type(exc).__name__


@dataclass
class _Tx:
    """One transaction's connection and what to cache once it commits."""

    conn: psycopg.Connection[Any]
    stored: set[str] = field(default_factory=set)
    """Blob and snapshot ids this transaction wrote (known to exist once it commits)."""
    read: dict[str, str] = field(default_factory=dict)
    """Hash-checked texts this transaction read."""
    evidence: list[tuple[str, str, tuple[Any, ...]]] = field(default_factory=list)
    """``(what, query, params)``: a query that finds one of this transaction's rows exactly as it wrote them."""

    def prove(self, what: str, query: str, params: Sequence[Any]) -> None:
        """Record how to tell, after a crash, whether this transaction's write landed."""
        self.evidence.append((what, query, tuple(params)))

    def send(self, query: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        """Queue a statement; in a write transaction (pipeline mode) it travels with the next fetch or COMMIT."""
        return self.conn.execute(query, params)  # type: ignore[arg-type]

    def one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(query, params).fetchone()  # type: ignore[arg-type]
        return row

    def all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self.conn.execute(query, params).fetchall()  # type: ignore[arg-type]
        return rows


@dataclass
class _Call:
    """One write made by a server-side function (postgres_schema, migration 3), sent in one round trip.

    ``BEGIN``, the statements ``before`` it (content-addressed inserts, which
    need no answer), the function call and ``COMMIT`` travel together. The
    function records ``token`` and its result in ``nia_writes`` in the same
    transaction, which is how a lost answer is resolved.
    """

    query: str
    params: tuple[Any, ...]
    token: str
    before: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    stored: set[str] = field(default_factory=set)
    read: dict[str, str] = field(default_factory=dict)


class _Lost(Exception):
    """The connection was lost; when ``committing``, ``result`` is what the transaction would return."""

    def __init__(
        self, cause: BaseException, xid: str | None, committing: bool, tx: _Tx | None, result: Any, started: str
    ) -> None:
        self.cause = cause
        self.xid = xid
        self.started = started
        """When the server the transaction ran on started (a restart may reuse transaction ids)."""
        self.committing = committing
        self.tx = tx
        self.result = result
        self.token: str | None = None
        """For a function's write (:class:`_Call`): its token in ``nia_writes``."""


class Transactions:
    """Runs work in transactions on ``_pool``, retrying and recovering; the store builds on it."""

    url: str
    timeout: float
    _conninfo: str
    _kwargs: dict[str, Any]
    _pool: psycopg_pool.ConnectionPool[Any]

    _local: threading.local
    """``views``: the session as this thread's last write to it left it (raw ``nia_view`` JSON), by session id."""

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Wait at most ``timeout`` for a session's row lock, unless the URL or server chose a limit."""
        row = conn.execute("SELECT current_setting('lock_timeout')").fetchone()
        if row is not None and row[0] == "0":
            conn.execute(f"SET lock_timeout = {int(self.timeout * 1000)}")  # type: ignore[arg-type]

    # -- the session as this thread's last write left it --------------------------------

    def _forget(self, session_id: str | None) -> None:
        views = getattr(self._local, "views", None)
        if views and session_id is not None:
            views.pop(session_id, None)

    def _leave(self, session_id: str, raw: Any) -> None:
        self._local.views = {session_id: raw}  # one session per thread: a runner drives one at a time

    def _left(self, session_id: str) -> Any:
        views = getattr(self._local, "views", None)
        return views.pop(session_id, None) if views else None

    def _run(self, session_id: str | None, action: str, work: Callable[[_Tx], T], *, write: bool) -> T:
        """Run ``work`` in one transaction, retrying lost connections, deadlocks and serialization failures."""
        if write:
            self._forget(session_id)
        return self._retrying(
            session_id,
            action,
            lambda deadline: self._attempt(work, write=write, deadline=deadline),
            "committed" if write else "read",
        )

    def _call(self, session_id: str, action: str, build: Callable[[], _Call]) -> dict[str, Any]:
        """Make a function's write (a fresh :class:`_Call` per attempt); its JSON answer.

        After a lost answer resolved as committed, the answer is ``{"ok": result}``
        as the function recorded it, without the session's view.
        """
        self._forget(session_id)
        return self._retrying(
            session_id, action, lambda deadline: self._attempt_call(build(), deadline=deadline), "committed"
        )

    def _retrying(self, session_id: str | None, action: str, attempt: Callable[[float], T], kind: str) -> T:
        import psycopg

        started = time.monotonic()
        deadline = started + self.timeout
        delay = 0.02
        while True:
            try:
                result = attempt(deadline)
                if log.isEnabledFor(logging.DEBUG):
                    about = f" (session {session_id})" if session_id else ""
                    log.debug("postgres: %s%s: %s in %.1f ms", action, about, kind, (time.monotonic() - started) * 1000)
                return result
            except _Lost as lost:
                outcome = self._commit_outcome(lost, session_id, action) if lost.committing else "aborted"
                log.debug("postgres: %s: connection lost (%s); the transaction %s", action, lost.cause, outcome)
                if outcome.startswith("committed"):
                    if outcome == "committed" and lost.tx is not None:
                        self._cache(lost.tx)  # (after a restart, trust nothing but the evidence checked)
                    return lost.result  # type: ignore[no-any-return]
                if time.monotonic() >= deadline:
                    raise self._translate(lost.cause, session_id, action) from None
                self._purge()
            except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected) as exc:
                if time.monotonic() >= deadline:
                    raise self._translate(exc, session_id, action) from None
            except psycopg.Error as exc:
                raise self._translate(exc, session_id, action) from None
            except UnicodeEncodeError as exc:  # a lone surrogate (an undecodable argument byte) in a value
                raise not_utf8(action, exc, session_id) from None
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.5)

    def _attempt(self, work: Callable[[_Tx], T], *, write: bool, deadline: float) -> T:
        import psycopg

        xid: str | None = None
        started = ""
        tx: _Tx | None = None
        result: Any = None
        committing = False
        try:
            with self._connection(deadline) as conn:
                tx = _Tx(conn)
                try:
                    if write:
                        # Pipeline mode: BEGIN and the transaction id travel with the first query, the
                        # trailing writes with COMMIT, so a write costs about two round trips.
                        with conn.pipeline():
                            conn.execute("BEGIN", prepare=False)
                            xid_cursor = conn.execute(
                                "SELECT pg_current_xact_id()::text, pg_postmaster_start_time()::text", prepare=False
                            )
                            result = work(tx)
                            row = xid_cursor.fetchone()
                            assert row is not None
                            xid, started = str(row[0]), str(row[1])
                            committing = True
                            conn.execute("COMMIT", prepare=False)
                    else:
                        result = work(tx)  # single statements, each its own snapshot (autocommit)
                except BaseException:
                    _roll_back_if_open(conn)
                    raise
        except psycopg.Error as exc:
            if _is_lost_connection(exc):
                raise _Lost(exc, xid, committing, tx, result, started) from exc
            raise
        self._cache(tx)
        return result  # type: ignore[no-any-return]

    def _attempt_call(self, call: _Call, *, deadline: float) -> dict[str, Any]:
        import psycopg

        tx: _Tx | None = None
        try:
            with self._connection(deadline) as conn:
                tx = _Tx(conn, stored=call.stored, read=call.read)
                try:
                    # One round trip: everything is sent, then the one Sync (or Query) is answered.
                    if call.before:
                        with conn.pipeline():
                            conn.execute("BEGIN", prepare=False)
                            for query, params in call.before:
                                conn.execute(query, params)  # type: ignore[arg-type]
                            cursor = conn.execute(call.query, call.params)  # type: ignore[arg-type]
                            conn.execute("COMMIT", prepare=False)
                        row = cursor.fetchone()
                    else:
                        # A call alone is one Query message: the parameters bound by psycopg's ClientCursor
                        # (libpq's quoting), which costs the client a third of a pipeline's bookkeeping.
                        own = psycopg.ClientCursor(conn)
                        own.execute(f"BEGIN; {call.query}; COMMIT", call.params)  # type: ignore[arg-type]
                        own.nextset()
                        row = own.fetchone()
                except BaseException:
                    _roll_back_if_open(conn)
                    raise
        except psycopg.Error as exc:
            if _is_lost_connection(exc):
                # Once sent it may have committed: its token says (see _commit_outcome).
                lost = _Lost(exc, None, tx is not None, tx, None, "")
                lost.token = call.token
                raise lost from exc
            raise
        assert row is not None and isinstance(row[0], dict)
        self._cache(tx)
        return row[0]

    @contextlib.contextmanager
    def _connection(self, deadline: float) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection, or one of its own when the pool has none within a second.

        After a server restart the pool reconnects with a growing back-off; a
        transaction should not wait for it when the server is already back.
        """
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            conn = self._pool.getconn(timeout=min(1.0, max(0.05, deadline - time.monotonic())))
        except PoolTimeout:
            with psycopg.connect(self._conninfo, **self._kwargs) as own:
                self._configure(own)
                yield own
            return
        try:
            yield conn
        finally:
            self._pool.putconn(conn)

    def _commit_outcome(self, lost: _Lost, session_id: str | None, action: str) -> str:
        """What became of a transaction whose COMMIT lost its connection: ``committed…`` or ``aborted``.

        While the server has not restarted, its transaction id answers exactly
        (``pg_xact_status``). After a restart it cannot: an id that never became
        durable is handed out again. Then the transaction's own rows decide
        (``committed (evidence)``), or, when they cannot, a clear error says so.
        """
        import psycopg

        deadline = time.monotonic() + self.timeout
        delay = 0.02
        while True:
            try:
                # A connection of its own: after a restart the pool may still be backing off.
                with psycopg.connect(self._conninfo, **self._kwargs) as conn:
                    if lost.token is not None:
                        return self._settle(conn, lost)
                    row = conn.execute("SELECT pg_postmaster_start_time()::text").fetchone()
                    if row is not None and row[0] == lost.started and lost.xid is not None:
                        status = conn.execute("SELECT pg_xact_status(%s::xid8)", (lost.xid,)).fetchone()
                        if status is not None and status[0] in ("committed", "aborted"):
                            return str(status[0])
                    else:
                        verdict = self._verify(conn, lost.tx)
                        if verdict is not None:
                            return "committed (evidence)" if verdict else "aborted"
                        break
            except psycopg.Error as exc:
                if not _is_lost_connection(exc):
                    raise self._translate(exc, session_id, action) from None
                self._purge()
            if time.monotonic() >= deadline:
                break
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.5)
        raise StoreError(
            f"cannot {action}: lost the connection to the database {self.url} while committing "
            f"({_one_line(lost.cause)}) and could not learn whether the change was stored; "
            "check the session (nia session show) before retrying",
            session_id,
        )

    @staticmethod
    def _settle(conn: psycopg.Connection[Any], lost: _Lost) -> str:
        """A function's write whose answer was lost: ``committed`` (its result read back) or ``aborted``, for good.

        Its token row is in the write's own transaction, so it is there exactly
        when the write committed, before a server restart or after one (unlike
        a transaction id, a token is never handed out again). Inserting the
        token waits for the write while it still runs; when the write did not
        commit, the token stays taken (a tombstone, no result), so the write
        fails should it still run later.
        """
        assert lost.token is not None
        conn.execute("INSERT INTO nia_writes (token) VALUES (%s) ON CONFLICT (token) DO NOTHING", (lost.token,))
        row = conn.execute("SELECT result FROM nia_writes WHERE token = %s", (lost.token,)).fetchone()
        if row is None or row[0] is None:
            return "aborted"
        lost.result = {"ok": json.loads(row[0])}
        return "committed"

    @staticmethod
    def _verify(conn: psycopg.Connection[Any], tx: _Tx | None) -> bool | None:
        """Whether every row the transaction wrote is there as written (``None``: its rows cannot tell)."""
        if tx is None:
            return None
        if not tx.evidence:
            return True  # it wrote no rows: there is nothing to lose or duplicate
        found = []
        for _what, query, params in tx.evidence:
            row = conn.execute(query, params).fetchone()  # type: ignore[arg-type]
            found.append(row[0] if row else None)
        if all(v is True for v in found):
            return True
        if all(v is False for v in found):
            return False
        return None

    def _purge(self) -> None:
        """Drop pooled connections that died with the server."""
        import psycopg

        with contextlib.suppress(psycopg.Error):
            self._pool.check()

    def _cache(self, tx: _Tx) -> None:
        """Keep what a committed transaction wrote and read (the store's text cache)."""

    def _translate(
        self, exc: BaseException, session_id: str | None, action: str, *, retried: bool = True
    ) -> StoreError:
        import psycopg

        where = f"the database {self.url}"
        detail = _one_line(exc)
        state = getattr(exc, "sqlstate", None) or ""
        if isinstance(exc, psycopg.errors.QueryCanceled):
            return DatabaseLocked(
                f"cannot {action}: {where} did not finish in time ({detail}); nothing was changed, try again",
                session_id,
            )
        if isinstance(exc, psycopg.errors.LockNotAvailable):
            return DatabaseLocked(
                f"cannot {action}: another process held the session's lock in {where} for too long "
                f"({detail}); nothing was changed, try again",
                session_id,
            )
        if isinstance(exc, psycopg.errors.DiskFull):
            return DatabaseFull(f"cannot {action}: {where} or its disk is full; nothing was changed", session_id)
        if isinstance(exc, psycopg.errors.SerializationFailure | psycopg.errors.DeadlockDetected):
            return DatabaseLocked(
                f"cannot {action}: {where} stayed too busy (kept conflicting for {self.timeout:g}s); "
                "nothing was changed, try again",
                session_id,
            )
        if state.startswith("53"):
            return StoreError(
                f"cannot {action}: {where} is out of resources ({detail}); nothing was changed", session_id
            )
        if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
            return StoreError(f"cannot {action}: {where} is read-only (a standby?)", session_id)
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return StoreError(f"cannot {action}: permission denied on {where} ({detail})", session_id)
        if isinstance(exc, psycopg.errors.UndefinedTable):
            return StoreError(
                f"cannot {action}: {where} lacks nia's tables ({detail}); run: nia db migrate", session_id
            )
        if _is_lost_connection(exc):
            return StoreError(
                f"cannot {action}: cannot reach {where} ({detail})"
                + (f"; gave up after retrying for {self.timeout:g}s" if retried else ""),
                session_id,
            )
        return StoreError(f"cannot {action}: database error on {where}: {detail}", session_id)


def _roll_back_if_open(conn: Any) -> None:
    """After any failure inside a transaction: the connection goes back to the pool idle, or closed."""
    import psycopg
    from psycopg.pq import TransactionStatus

    if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
        with contextlib.suppress(psycopg.Error):
            conn.execute("ROLLBACK", prepare=False)


def _is_lost_connection(exc: BaseException) -> bool:
    """A failure that a new connection may not have: the server went away, restarted or is starting."""
    import psycopg

    if isinstance(exc, psycopg.errors.QueryCanceled | psycopg.errors.LockNotAvailable | psycopg.errors.DiskFull):
        return False
    state = getattr(exc, "sqlstate", None) or ""
    if state.startswith("08") or state in ("57P01", "57P02", "57P03"):
        return True
    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) and not state
