"""nia: the system context of AI coding agents, assembled from plugins.

This module is the plugin author's API. A plugin that contributes one source::

    from nia_core import ContextSource, hookimpl

    @hookimpl
    def nia_context_sources(location):
        return [ContextSource(key="acme/hello", load=lambda: "world",
                              baseline=lambda v: f"Hello, {v}.")]
"""

from nia_core.about import __version__
from nia_core.context import (
    DEFAULT_TIMEOUT,
    JSON,
    UNAVAILABLE,
    Change,
    Codec,
    ContextSource,
    DataclassCodec,
    Generation,
    JsonCodec,
    Location,
    LocationContext,
    Observation,
    ReplacementBlocked,
    ReplacementReady,
    Snapshot,
    SnapshotEntry,
    SystemContext,
    SystemContextRegistry,
    Unavailable,
    Unchanged,
    Updated,
    initialize,
    reconcile,
    replace,
)
from nia_core.errors import InitializationBlocked, NiaError, RenderError
from nia_core.files import StatCache
from nia_core.markers import hookimpl, hookspec
from nia_core.project.sections import project_context_sources

__all__ = [
    "DEFAULT_TIMEOUT",
    "JSON",
    "UNAVAILABLE",
    "Change",
    "Codec",
    "ContextSource",
    "DataclassCodec",
    "Generation",
    "InitializationBlocked",
    "JsonCodec",
    "Location",
    "LocationContext",
    "NiaError",
    "Observation",
    "RenderError",
    "ReplacementBlocked",
    "ReplacementReady",
    "Snapshot",
    "SnapshotEntry",
    "StatCache",
    "SystemContext",
    "SystemContextRegistry",
    "Unavailable",
    "Unchanged",
    "Updated",
    "__version__",
    "hookimpl",
    "hookspec",
    "initialize",
    "project_context_sources",
    "reconcile",
    "replace",
]
