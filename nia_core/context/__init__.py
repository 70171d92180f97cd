"""The engine: context sources, system context, snapshots, the registry; ``initialize``, ``reconcile``, ``replace``.

Public, for tests and tools that drive the engine themselves (docs/concepts.md);
plugin authors need only what :mod:`nia_core` exports. The engine keeps no
state on disk and knows no project, store or provider: it observes sources
(on worker threads, under their timeouts), compares values with a snapshot
and renders text. Its modules are internal; import from here.
"""

from nia_core.context.codec import JSON, Codec, DataclassCodec, JsonCodec, canonical_json
from nia_core.context.keys import validate_key
from nia_core.context.location import Location
from nia_core.context.observation import Observation, observe
from nia_core.context.registry import (
    Assembly,
    Contribution,
    LocationContext,
    Problem,
    Scope,
    SystemContextRegistry,
)
from nia_core.context.snapshot import EMPTY_SNAPSHOT, CorruptSnapshot, Snapshot, SnapshotEntry
from nia_core.context.source import DEFAULT_TIMEOUT, LOADER_TIMEOUT, UNAVAILABLE, ContextSource, Unavailable
from nia_core.context.system import (
    SEPARATOR,
    Change,
    Generation,
    Reconciliation,
    Replacement,
    ReplacementBlocked,
    ReplacementReady,
    SystemContext,
    Unchanged,
    Updated,
    initialize,
    reconcile,
    replace,
)
from nia_core.errors import InitializationBlocked, RenderError

__all__ = [
    "DEFAULT_TIMEOUT",
    "EMPTY_SNAPSHOT",
    "JSON",
    "LOADER_TIMEOUT",
    "SEPARATOR",
    "UNAVAILABLE",
    "Assembly",
    "Change",
    "Codec",
    "ContextSource",
    "Contribution",
    "CorruptSnapshot",
    "DataclassCodec",
    "Generation",
    "InitializationBlocked",
    "JsonCodec",
    "Location",
    "LocationContext",
    "Observation",
    "Problem",
    "Reconciliation",
    "RenderError",
    "Replacement",
    "ReplacementBlocked",
    "ReplacementReady",
    "Scope",
    "Snapshot",
    "SnapshotEntry",
    "SystemContext",
    "SystemContextRegistry",
    "Unavailable",
    "Unchanged",
    "Updated",
    "canonical_json",
    "initialize",
    "observe",
    "reconcile",
    "replace",
    "validate_key",
]
