"""The engine: context sources, system context, snapshots, the registry. Pure: no files, clocks or databases.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
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
    "JsonCodec",
    "Location",
    "LocationContext",
    "Observation",
    "Problem",
    "Reconciliation",
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
