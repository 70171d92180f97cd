"""Durable sessions: the store, context epochs, the safe provider-turn boundary.

The message types live below both this package and the providers: a stored
``Message`` in :mod:`nia_core.message`, the model call's ``ModelRequest``,
``Reply`` and ``Usage`` in :mod:`nia_core.model`; they are re-exported here
because a store's API speaks them.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nia_core.lazy import lazy_exports

if TYPE_CHECKING:  # at run time __getattr__ imports on demand: an agent hook loads no compaction or moves code
    from nia_core.message import Message as Message
    from nia_core.message import ToolCall as ToolCall
    from nia_core.model import ModelRequest as ModelRequest
    from nia_core.model import Reply as Reply
    from nia_core.model import Usage as Usage
    from nia_core.sessions.boundary import Admitted as Admitted
    from nia_core.sessions.boundary import AwaitingTools as AwaitingTools
    from nia_core.sessions.boundary import pass_boundary as pass_boundary
    from nia_core.sessions.boundary import start_over as start_over
    from nia_core.sessions.compaction import Summarizer as Summarizer
    from nia_core.sessions.compaction import compact as compact
    from nia_core.sessions.compaction import default_summary as default_summary
    from nia_core.sessions.epochs import Admission as Admission
    from nia_core.sessions.epochs import Blocked as Blocked
    from nia_core.sessions.epochs import ContextFor as ContextFor
    from nia_core.sessions.epochs import Contexts as Contexts
    from nia_core.sessions.moves import move as move
    from nia_core.sessions.moves import switch_model as switch_model
    from nia_core.sessions.open import db_url as db_url
    from nia_core.sessions.open import default_db_path as default_db_path
    from nia_core.sessions.open import open_store as open_store
    from nia_core.sessions.projection import build_request as build_request
    from nia_core.sessions.projection import project as project
    from nia_core.sessions.replacement import Deferred as Deferred
    from nia_core.sessions.replacement import Replaced as Replaced
    from nia_core.sessions.replacement import replace_now as replace_now
    from nia_core.sessions.sqlite import SCHEMA_VERSION as SCHEMA_VERSION
    from nia_core.sessions.sqlite import SQLiteStore as SQLiteStore
    from nia_core.sessions.store import ActiveEpoch as ActiveEpoch
    from nia_core.sessions.store import EpochRecord as EpochRecord
    from nia_core.sessions.store import HistoryEntry as HistoryEntry
    from nia_core.sessions.store import PendingCompaction as PendingCompaction
    from nia_core.sessions.store import SessionRecord as SessionRecord
    from nia_core.sessions.store import SessionState as SessionState
    from nia_core.sessions.store import SessionView as SessionView
    from nia_core.sessions.store import Store as Store
    from nia_core.sessions.store_errors import CorruptRecord as CorruptRecord
    from nia_core.sessions.store_errors import DatabaseFull as DatabaseFull
    from nia_core.sessions.store_errors import DatabaseLocked as DatabaseLocked
    from nia_core.sessions.store_errors import NewerSchema as NewerSchema
    from nia_core.sessions.store_errors import RefusedInput as RefusedInput
    from nia_core.sessions.store_errors import RevisionConflict as RevisionConflict
    from nia_core.sessions.store_errors import StoreError as StoreError
    from nia_core.sessions.store_errors import UnknownSession as UnknownSession
    from nia_core.sessions.store_errors import UnsupportedDatabase as UnsupportedDatabase
    from nia_core.sessions.turn import BoundaryResult as BoundaryResult
    from nia_core.sessions.turn import Idle as Idle
    from nia_core.sessions.turn import Ready as Ready
    from nia_core.sessions.turn import Replied as Replied
    from nia_core.sessions.turn import TurnResult as TurnResult
    from nia_core.sessions.turn import run_boundary as run_boundary
    from nia_core.sessions.turn import run_turn as run_turn

__all__, __getattr__, __dir__ = lazy_exports(__name__)
