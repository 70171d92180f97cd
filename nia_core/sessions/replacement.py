"""Applying a requested replacement now (``nia session compact``, a model switch), not at the next boundary.

Only these commands ask: a boundary applies a pending request itself
(:func:`~nia_core.sessions.epochs.admit_changes`), so no door imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass

from nia_core.context import LOADER_TIMEOUT, ReplacementBlocked, replace
from nia_core.sessions.epochs import Blocked, Contexts, attempts, replacement_wanted, start
from nia_core.sessions.store import Store
from nia_core.sessions.store_errors import RevisionConflict


@dataclass(frozen=True)
class Replaced:
    session_id: str
    reason: str


@dataclass(frozen=True)
class Deferred:
    """Nothing to replace now: the session has no active epoch, so its next initialization applies the request."""

    session_id: str
    reason: str


ReplaceOutcome = Replaced | Deferred | Blocked


def replace_now(
    store: Store, session_id: str, contexts: Contexts, *, timeout: float = LOADER_TIMEOUT
) -> ReplaceOutcome:
    """Apply a requested replacement (compaction, model switch) now, unless an admitted source is unavailable.

    When blocked, the request stays stored and the next boundary retries it;
    the old baseline and its updates stay in force meanwhile.
    """
    for _ in attempts(session_id):
        state = store.state(session_id)
        wanted = replacement_wanted(state)
        if state.epoch is None:
            return Deferred(session_id, "applied when the session next initializes its context")
        if not wanted:
            return Replaced(session_id, "already applied")
        result = replace(contexts.at(state.session.location), state.epoch.snapshot, timeout=timeout)
        if isinstance(result, ReplacementBlocked):
            return Blocked(session_id, result.keys, f"the fresh baseline for the {wanted.kind}")
        try:
            start(store, state, result.generation, str(wanted))
        except RevisionConflict:
            continue
        return Replaced(session_id, str(wanted))
    raise AssertionError("unreachable")  # pragma: no cover
