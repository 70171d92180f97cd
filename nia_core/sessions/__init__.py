"""Durable sessions: the store, context epochs, the safe provider-turn boundary.

Names are imported lazily, on first use: the providers import
:mod:`nia_core.sessions.messages`, and the boundary imports the providers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nia_core.sessions.boundary import (
        Admitted,
        AwaitingTools,
        BoundaryResult,
        Idle,
        Ready,
        Replied,
        TurnResult,
        pass_boundary,
        run_boundary,
        run_turn,
        start_over,
    )
    from nia_core.sessions.compaction import Summarizer, compact, default_summary
    from nia_core.sessions.epochs import Admission, Blocked, ContextFor, Contexts, Deferred, Replaced, replace_now
    from nia_core.sessions.errors import (
        CorruptRecord,
        DatabaseFull,
        DatabaseLocked,
        NewerSchema,
        RefusedInput,
        RevisionConflict,
        StoreError,
        UnknownSession,
        UnsupportedDatabase,
    )
    from nia_core.sessions.messages import Message, ModelRequest, Reply, ToolCall, Usage
    from nia_core.sessions.moves import move, switch_model
    from nia_core.sessions.open import db_url, default_db_path, open_store
    from nia_core.sessions.projection import build_request, project
    from nia_core.sessions.sqlite import SCHEMA_VERSION, SQLiteStore
    from nia_core.sessions.store import (
        ActiveEpoch,
        EpochRecord,
        HistoryEntry,
        PendingCompaction,
        SessionRecord,
        SessionState,
        Store,
    )

_HOMES: dict[str, str] = {
    "ActiveEpoch": "nia_core.sessions.store",
    "Admitted": "nia_core.sessions.boundary",
    "Admission": "nia_core.sessions.epochs",
    "AwaitingTools": "nia_core.sessions.boundary",
    "Blocked": "nia_core.sessions.epochs",
    "BoundaryResult": "nia_core.sessions.boundary",
    "ContextFor": "nia_core.sessions.epochs",
    "Contexts": "nia_core.sessions.epochs",
    "CorruptRecord": "nia_core.sessions.errors",
    "DatabaseFull": "nia_core.sessions.errors",
    "DatabaseLocked": "nia_core.sessions.errors",
    "Deferred": "nia_core.sessions.epochs",
    "EpochRecord": "nia_core.sessions.store",
    "HistoryEntry": "nia_core.sessions.store",
    "Idle": "nia_core.sessions.boundary",
    "Message": "nia_core.sessions.messages",
    "ModelRequest": "nia_core.sessions.messages",
    "NewerSchema": "nia_core.sessions.errors",
    "PendingCompaction": "nia_core.sessions.store",
    "RefusedInput": "nia_core.sessions.errors",
    "Ready": "nia_core.sessions.boundary",
    "Replaced": "nia_core.sessions.epochs",
    "Replied": "nia_core.sessions.boundary",
    "Reply": "nia_core.sessions.messages",
    "RevisionConflict": "nia_core.sessions.errors",
    "SCHEMA_VERSION": "nia_core.sessions.sqlite",
    "SQLiteStore": "nia_core.sessions.sqlite",
    "SessionRecord": "nia_core.sessions.store",
    "SessionState": "nia_core.sessions.store",
    "Store": "nia_core.sessions.store",
    "StoreError": "nia_core.sessions.errors",
    "Summarizer": "nia_core.sessions.compaction",
    "TurnResult": "nia_core.sessions.boundary",
    "ToolCall": "nia_core.sessions.messages",
    "UnknownSession": "nia_core.sessions.errors",
    "UnsupportedDatabase": "nia_core.sessions.errors",
    "Usage": "nia_core.sessions.messages",
    "build_request": "nia_core.sessions.projection",
    "compact": "nia_core.sessions.compaction",
    "db_url": "nia_core.sessions.open",
    "default_db_path": "nia_core.sessions.open",
    "default_summary": "nia_core.sessions.compaction",
    "move": "nia_core.sessions.moves",
    "open_store": "nia_core.sessions.open",
    "pass_boundary": "nia_core.sessions.boundary",
    "project": "nia_core.sessions.projection",
    "replace_now": "nia_core.sessions.epochs",
    "run_boundary": "nia_core.sessions.boundary",
    "run_turn": "nia_core.sessions.boundary",
    "start_over": "nia_core.sessions.boundary",
    "switch_model": "nia_core.sessions.moves",
}

__all__ = [
    "SCHEMA_VERSION",
    "ActiveEpoch",
    "Admission",
    "Admitted",
    "AwaitingTools",
    "Blocked",
    "BoundaryResult",
    "ContextFor",
    "Contexts",
    "CorruptRecord",
    "DatabaseFull",
    "DatabaseLocked",
    "Deferred",
    "EpochRecord",
    "HistoryEntry",
    "Idle",
    "Message",
    "ModelRequest",
    "NewerSchema",
    "PendingCompaction",
    "Ready",
    "RefusedInput",
    "Replaced",
    "Replied",
    "Reply",
    "RevisionConflict",
    "SQLiteStore",
    "SessionRecord",
    "SessionState",
    "Store",
    "StoreError",
    "Summarizer",
    "ToolCall",
    "TurnResult",
    "UnknownSession",
    "UnsupportedDatabase",
    "Usage",
    "build_request",
    "compact",
    "db_url",
    "default_db_path",
    "default_summary",
    "move",
    "open_store",
    "pass_boundary",
    "project",
    "replace_now",
    "run_boundary",
    "run_turn",
    "start_over",
    "switch_model",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'nia_core.sessions' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
