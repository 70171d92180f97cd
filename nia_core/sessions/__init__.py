"""Durable sessions: the store, context epochs, the safe provider-turn boundary.

The message types (``Message``, ``ModelRequest``, ``Reply``, ...) live in
:mod:`nia_core.model`, below both this package and the providers; they are
re-exported here because a store's API speaks them.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from __future__ import annotations

from nia_core.model import Message, ModelRequest, Reply, ToolCall, Usage
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
    SessionView,
    Store,
)

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
    "SessionView",
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
