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
nothing but itself: each name is imported on first use (PEP 562), so a command
that needs none of them (``nia --help``) does not pay for the engine, and one
that does loads the engine only, never the project layer, the host, the store
or HTTP code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nia_core.lazy import lazy_exports

if TYPE_CHECKING:  # what mypy and editors see; at run time __getattr__ imports on demand
    from nia_core.about import __version__ as __version__
    from nia_core.context import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
    from nia_core.context import JSON as JSON
    from nia_core.context import LOADER_TIMEOUT as LOADER_TIMEOUT
    from nia_core.context import UNAVAILABLE as UNAVAILABLE
    from nia_core.context import Change as Change
    from nia_core.context import Codec as Codec
    from nia_core.context import ContextSource as ContextSource
    from nia_core.context import DataclassCodec as DataclassCodec
    from nia_core.context import Generation as Generation
    from nia_core.context import JsonCodec as JsonCodec
    from nia_core.context import Location as Location
    from nia_core.context import LocationContext as LocationContext
    from nia_core.context import Observation as Observation
    from nia_core.context import ReplacementBlocked as ReplacementBlocked
    from nia_core.context import ReplacementReady as ReplacementReady
    from nia_core.context import Snapshot as Snapshot
    from nia_core.context import SnapshotEntry as SnapshotEntry
    from nia_core.context import SystemContext as SystemContext
    from nia_core.context import SystemContextRegistry as SystemContextRegistry
    from nia_core.context import Unavailable as Unavailable
    from nia_core.context import Unchanged as Unchanged
    from nia_core.context import Updated as Updated
    from nia_core.context import initialize as initialize
    from nia_core.context import reconcile as reconcile
    from nia_core.context import replace as replace
    from nia_core.errors import InitializationBlocked as InitializationBlocked
    from nia_core.errors import NiaError as NiaError
    from nia_core.errors import RenderError as RenderError
    from nia_core.files import StatCache as StatCache
    from nia_core.markers import hookimpl as hookimpl
    from nia_core.markers import hookspec as hookspec
    from nia_core.model import Message as Message
    from nia_core.model import ModelRequest as ModelRequest
    from nia_core.model import Provider as Provider
    from nia_core.model import ProviderError as ProviderError
    from nia_core.model import Reply as Reply
    from nia_core.model import StreamCallback as StreamCallback
    from nia_core.model import ToolCall as ToolCall
    from nia_core.model import Usage as Usage
    from nia_core.model import split_model as split_model

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "nia_core.about": ("__version__",),
        "nia_core.context": (
            "DEFAULT_TIMEOUT",
            "JSON",
            "LOADER_TIMEOUT",
            "UNAVAILABLE",
            "Change",
            "Codec",
            "ContextSource",
            "DataclassCodec",
            "Generation",
            "JsonCodec",
            "Location",
            "LocationContext",
            "Observation",
            "ReplacementBlocked",
            "ReplacementReady",
            "Snapshot",
            "SnapshotEntry",
            "SystemContext",
            "SystemContextRegistry",
            "Unavailable",
            "Unchanged",
            "Updated",
            "initialize",
            "reconcile",
            "replace",
        ),
        "nia_core.errors": (
            "InitializationBlocked",
            "NiaError",
            "RenderError",
        ),
        "nia_core.files": ("StatCache",),
        "nia_core.markers": (
            "hookimpl",
            "hookspec",
        ),
        "nia_core.model": (
            "Message",
            "ModelRequest",
            "Provider",
            "ProviderError",
            "Reply",
            "StreamCallback",
            "ToolCall",
            "Usage",
            "split_model",
        ),
    },
)
