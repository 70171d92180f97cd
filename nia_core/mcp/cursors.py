"""``context_changes``: nia's boundary semantics for any MCP client, on nia's own session layer.

Each cursor chain is a nia session in the store (``NIA_DB``), attached to the
server's Location. Starting a chain starts a context epoch: its baseline is
the context now. Asking with a cursor runs the boundary's admission step
(reconcile against the epoch's snapshot, store the combined update as a
``system_update`` message, or replace the epoch) and answers with every
system message admitted after the cursor, exactly as a session admitted it.
Nothing else is kept: a restarted server reads the same store and continues
any cursor it handed out.

A cursor is ``SESSION.EPOCH.SEQ``: the chain, the epoch the client has seen,
and the first history position it has not.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from nia_core.context import DEFAULT_TIMEOUT, SEPARATOR, SystemContext
from nia_core.errors import NiaError
from nia_core.sessions.epochs import Blocked, Contexts, Moved, admit_changes, ensure_epoch
from nia_core.sessions.store import SessionState, Store

MODEL = "nia-mcp/cursor"
"""The model recorded for cursor sessions: they are never sent to a provider."""

CURSOR = re.compile(r"^([0-9a-f]{4,64})\.(\d{1,9})\.(\d{1,12})$")

Kind = Literal["baseline", "update", "unchanged", "blocked"]


class CursorError(NiaError):
    """A cursor that is malformed, unknown to the store, or belongs to another Location."""


@dataclass(frozen=True)
class Changes:
    """The answer to one ``context_changes`` call."""

    cursor: str
    kind: Kind
    """``baseline``: a new epoch (the text is its baseline, then its updates); ``update``: the system
    messages admitted since the cursor; ``unchanged``; ``blocked``: a replacement waits for sources."""
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
        timeout: float = DEFAULT_TIMEOUT,
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
            raise CursorError(f"this server serves {self.location}, not {path}")
        return self.context()

    def _changes(self, store: Store, cursor: str | None) -> Changes:
        contexts = Contexts(self._context_for)
        if cursor is None:
            session_id = store.create_session(self.location, MODEL).id
            ensured = ensure_epoch(store, session_id, contexts, timeout=self.timeout)
            if isinstance(ensured, Blocked):
                raise CursorError(f"{ensured}; ask again once they are available")
            state = ensured[0]
            assert state.epoch is not None
            return Changes(_cursor(store, state), "baseline", state.epoch.baseline)
        session_id, epoch, seen = _parse(cursor)
        try:
            state = store.state(session_id)
        except NiaError:
            raise CursorError(f"unknown cursor {cursor!r}: no such chain in {store.url}") from None
        if state.session.location != self.location or state.session.model != MODEL:
            raise CursorError(f"cursor {cursor!r} does not belong to this server's Location ({self.location})")
        blocked: tuple[str, ...] = ()
        for _ in range(3):
            if state.epoch is None:
                ensured = ensure_epoch(store, session_id, contexts, timeout=self.timeout)
                if isinstance(ensured, Blocked):
                    return Changes(cursor, "blocked", "", ensured.keys)
                state = ensured[0]
            try:
                admission = admit_changes(store, state, contexts, timeout=self.timeout)
            except Moved:
                state = store.state(session_id)
                continue
            blocked = admission.blocked_on if admission.outcome == "blocked" else ()
            break
        state = store.state(session_id)
        assert state.epoch is not None
        updates = [
            entry.message
            for entry in store.history(session_id)
            if entry.message.kind == "system_update"
            and entry.message.epoch == state.epoch.number
            and (entry.message.seq or 0) >= (seen if state.epoch.number == epoch else 0)
        ]
        texts = [message.text for message in updates]
        new_cursor = _cursor(store, state)
        if state.epoch.number != epoch:
            return Changes(new_cursor, "baseline", SEPARATOR.join([state.epoch.baseline, *texts]))
        if texts:
            return Changes(new_cursor, "update", SEPARATOR.join(texts))
        if blocked:
            return Changes(new_cursor, "blocked", "", blocked)
        return Changes(new_cursor, "unchanged")


def _parse(cursor: str) -> tuple[str, int, int]:
    match = CURSOR.match(cursor.strip())
    if match is None:
        raise CursorError(f"malformed cursor {cursor!r}: expected SESSION.EPOCH.SEQ as context_changes returned it")
    return match.group(1), int(match.group(2)), int(match.group(3))


def _cursor(store: Store, state: SessionState) -> str:
    assert state.epoch is not None
    history = store.history(state.session.id)
    last = max((entry.message.seq or 0 for entry in history), default=-1)
    following = max(last + 1, state.epoch.record.start_seq)
    return f"{state.session.id}.{state.epoch.number}.{following}"
