"""Moving a session to another Location and switching its model.

Both are user commands: they change the session's record at once. A move
clears the active epoch, so the destination must initialize a complete
baseline before another prompt is promoted. A model switch keeps the
conversation and starts a fresh epoch (the provider cache is lost anyway);
when that fresh baseline is blocked, the next boundary retries it.
"""

from __future__ import annotations

from nia_core.context import LOADER_TIMEOUT
from nia_core.model import split_model
from nia_core.sessions.epochs import Contexts
from nia_core.sessions.replacement import ReplaceOutcome, replace_now
from nia_core.sessions.store import SessionRecord, Store


def move(store: Store, session_id: str, location: str) -> SessionRecord:
    """Make ``location`` the session's authoritative Location; nothing is observed until the next boundary."""
    return store.move(session_id, location)


def switch_model(
    store: Store, session_id: str, model: str, contexts: Contexts, *, timeout: float = LOADER_TIMEOUT
) -> ReplaceOutcome:
    """Switch to ``model`` (``PROVIDER/MODEL``) and start a fresh epoch for it when the context allows."""
    split_model(model)
    store.set_model(session_id, model)
    return replace_now(store, session_id, contexts, timeout=timeout)
