"""nia: the system context of AI coding agents, assembled from plugins.

This module is the API of plugin and provider authors. A plugin that
contributes one source::

    from nia_core import ContextSource, hookimpl

    @hookimpl
    def nia_context_sources(location):
        return [ContextSource(key="acme/hello", load=lambda: "world",
                              baseline=lambda v: f"Hello, {v}.")]

A provider implements :class:`Provider` over :class:`ModelRequest` and
:class:`Reply`. Embedders use :mod:`nia_core.runtime`; plugin tests use
:mod:`nia_core.testing`. Every other module is internal: it may change in any
release (see docs/plugins.md, "What is public"). Importing this module loads
the engine only, not the project layer, the host, the store or HTTP code.
"""

from nia_core.about import __version__
from nia_core.context import (
    DEFAULT_TIMEOUT,
    JSON,
    LOADER_TIMEOUT,
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
from nia_core.model import (
    Message,
    ModelRequest,
    Provider,
    ProviderError,
    Reply,
    StreamCallback,
    ToolCall,
    Usage,
    split_model,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "JSON",
    "LOADER_TIMEOUT",
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
    "Message",
    "ModelRequest",
    "NiaError",
    "Observation",
    "Provider",
    "ProviderError",
    "RenderError",
    "ReplacementBlocked",
    "ReplacementReady",
    "Reply",
    "Snapshot",
    "SnapshotEntry",
    "StatCache",
    "StreamCallback",
    "SystemContext",
    "SystemContextRegistry",
    "ToolCall",
    "Unavailable",
    "Unchanged",
    "Updated",
    "Usage",
    "__version__",
    "hookimpl",
    "hookspec",
    "initialize",
    "reconcile",
    "replace",
    "split_model",
]
