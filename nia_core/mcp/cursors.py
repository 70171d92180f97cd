"""``context_changes``: nia's boundary semantics for any MCP client, on nia's own session layer.

Each cursor chain is an attached session in the store (``NIA_DB``), like an
agent conversation the hooks attach: host ``mcp``, one conversation per
chain, at the server's Location. Starting a chain passes its first boundary,
which starts a context epoch whose baseline is the context now. Asking with
a cursor passes a boundary again (:func:`~nia_core.sessions.pass_boundary`,
the path every door shares: observe, reconcile, durably admit the combined
update as a ``system_update`` message, or replace the epoch) and answers with
every system message admitted after the cursor, exactly as admitted. Nothing
else is kept: a restarted server reads the same store and continues any
cursor it handed out.

A cursor is ``SESSION.EPOCH.SEQ``: the chain, the epoch the client has seen,
and the first history position it has not.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from nia_core.context import LOADER_TIMEOUT, SEPARATOR, SystemContext
from nia_core.errors import NiaError
from nia_core.mcp.limits import quoted
from nia_core.runtime import BoundaryReport, attach
from nia_core.sessions import Store, pass_boundary
from nia_core.sessions.store import SessionState

HOST = "mcp"
"""The attached sessions' host name: their model is ``mcp/attached`` and never sent to a provider."""

CURSOR = re.compile(r"(mcp-[0-9a-f]{20})\.(\d{1,9})\.(\d{1,12})")

Kind = Literal["baseline", "update", "unchanged", "blocked"]


FOREIGN = "it belongs to another project (another Location); start a new chain here with no cursor"
"""Why a cursor from another Location is refused: which one is not said (its path lies outside this project)."""


class CursorError(NiaError):
    """A cursor that is malformed, unknown to the store, or belongs to another Location."""


@dataclass(frozen=True)
class Changes:
    """The answer to one ``context_changes`` call."""

    cursor: str
    kind: Kind
    """``baseline``: a new epoch (the text is its baseline, then its updates); ``update``: the system
    messages admitted since the cursor; ``unchanged``; ``blocked``: sources a baseline needs are unavailable."""
    text: str = ""
    blocked_on: tuple[str, ...] = ()


class Cursors:
    """Hands out and follows cursors for one Location; calls are serialized."""

    def __init__(
        self,
        store_factory: Callable[[], Store],
        location: str,
        context: Callable[[], SystemContext],
        *,
        timeout: float = LOADER_TIMEOUT,
    ) -> None:
        self.store_factory = store_factory
        self.location = location
        self.context = context
        self.timeout = timeout
        self._lock = threading.Lock()

    def changes(self, cursor: str | None) -> Changes:
        with self._lock:
            store = self.store_factory()
            try:
                return self._changes(store, cursor)
            finally:
                store.close()

    def _context_for(self, path: str) -> SystemContext:
        if path != self.location:
            raise CursorError(FOREIGN)
        return self.context()

    def _boundary(self, store: Store, session_id: str) -> BoundaryReport:
        return BoundaryReport(pass_boundary(store, session_id, self._context_for, timeout=self.timeout))

    def _changes(self, store: Store, cursor: str | None) -> Changes:
        if cursor is None:
            record = attach(store, HOST, secrets.token_hex(16), self.location)
            report = self._boundary(store, record.id)
            if report.outcome == "blocked":
                raise CursorError(
                    f"the context is blocked on: {', '.join(report.blocked_on)}; ask again once they are available"
                )
            state = store.state(record.id)
            assert state.epoch is not None and report.text is not None
            return Changes(_cursor(store, state), "baseline", report.text)
        session_id, epoch, seen = _parse(cursor)
        try:
            state = store.state(session_id)
        except NiaError:
            raise CursorError(f"unknown cursor {quoted(cursor)}: no such chain in this server's store") from None
        if state.session.location != self.location:
            raise CursorError(f"cursor {quoted(cursor)}: {FOREIGN}")
        report = self._boundary(store, session_id)
        state = store.state(session_id)
        if state.epoch is None:  # the epoch ended and no new baseline could be rendered
            return Changes(cursor, "blocked", "", report.blocked_on)
        updates = [
            entry.message.text
            for entry in store.history(session_id)
            if entry.message.kind == "system_update"
            and entry.message.epoch == state.epoch.number
            and (entry.message.seq or 0) >= (seen if state.epoch.number == epoch else 0)
        ]
        new_cursor = _cursor(store, state)
        if state.epoch.number != epoch:
            return Changes(new_cursor, "baseline", SEPARATOR.join([state.epoch.baseline, *updates]))
        if updates:
            return Changes(new_cursor, "update", SEPARATOR.join(updates))
        if report.outcome == "replacement-blocked":
            return Changes(new_cursor, "blocked", "", report.blocked_on)
        return Changes(new_cursor, "unchanged")


def _parse(cursor: str) -> tuple[str, int, int]:
    match = CURSOR.fullmatch(cursor.strip())
    if match is None:
        raise CursorError(f"malformed cursor {quoted(cursor)}: expected SESSION.EPOCH.SEQ as context_changes gave it")
    return match.group(1), int(match.group(2)), int(match.group(3))


def _cursor(store: Store, state: SessionState) -> str:
    assert state.epoch is not None
    history = store.history(state.session.id)
    last = max((entry.message.seq or 0 for entry in history), default=-1)
    following = max(last + 1, state.epoch.record.start_seq)
    return f"{state.session.id}.{state.epoch.number}.{following}"
