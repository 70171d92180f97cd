"""nia: the system context of AI coding agents, assembled from plugins.

This module is the API of plugin and provider authors, and nia's built-in
plugins use nothing else. A plugin that contributes one source::

    from nia_core import ContextSource, hookimpl

    @hookimpl
    def nia_context_sources(location):
        return [ContextSource(key="acme/hello", load=lambda: "world",
                              baseline=lambda v: f"Hello, {v}.")]

A source backed by a project file reads it with :class:`StatCache` (the
checked reader: confined to the project root, bounded, regular files only),
catches :class:`Refused`, and names files with :func:`escape_name`. A provider
implements :class:`Provider` over :class:`ModelRequest` and :class:`Reply`.
The engine (``initialize``, ``reconcile``, ``replace``, snapshots, the
registry) is :mod:`nia_core.context`, for tests and tools; embedders use
:mod:`nia_core.runtime`; plugin tests use :mod:`nia_core.testing`. Every other
module is internal: it may change in any release (docs/plugins.md, "What is
public"). Importing this module loads nothing but itself: each name below is
imported on first use (PEP 562, :mod:`nia_core.lazy`), so a command that needs
none of them (``nia --help``) does not pay for the engine.
"""

from __future__ import annotations

from nia_core.lazy import lazy_exports

TYPE_CHECKING = False  # not typing's: an agent's hook (the thin client) imports this package and never needs typing

if TYPE_CHECKING:  # each public name, once: at run time nia_core.lazy reads these lines and imports on first use
    from nia_core.about import __version__ as __version__
    from nia_core.context.codec import JSON as JSON
    from nia_core.context.codec import Codec as Codec
    from nia_core.context.codec import DataclassCodec as DataclassCodec
    from nia_core.context.codec import JsonCodec as JsonCodec
    from nia_core.context.location import Location as Location
    from nia_core.context.registry import LocationContext as LocationContext
    from nia_core.context.source import LOADER_TIMEOUT as LOADER_TIMEOUT
    from nia_core.context.source import UNAVAILABLE as UNAVAILABLE
    from nia_core.context.source import Constant as Constant
    from nia_core.context.source import ContextSource as ContextSource
    from nia_core.context.source import Unavailable as Unavailable
    from nia_core.errors import NiaError as NiaError
    from nia_core.files import Content as Content
    from nia_core.files import Refused as Refused
    from nia_core.files import StatCache as StatCache
    from nia_core.markers import hookimpl as hookimpl
    from nia_core.markers import hookspec as hookspec
    from nia_core.message import Message as Message
    from nia_core.message import ToolCall as ToolCall
    from nia_core.model import ModelRequest as ModelRequest
    from nia_core.model import Provider as Provider
    from nia_core.model import ProviderError as ProviderError
    from nia_core.model import Reply as Reply
    from nia_core.model import StreamCallback as StreamCallback
    from nia_core.model import Usage as Usage
    from nia_core.model import split_model as split_model
    from nia_core.notices import warn_once as warn_once
    from nia_core.project.binary import looks_binary as looks_binary
    from nia_core.project.generated import GENERATED_NAMES as GENERATED_NAMES
    from nia_core.project.paths import escape_name as escape_name
    from nia_core.project.paths import user_config_folder as user_config_folder
    from nia_core.project.sections import project_context_sources as project_context_sources

__all__, _exported, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:
    from typing import Any

_MOVED = frozenset(
    {
        "Change",
        "DEFAULT_TIMEOUT",
        "Generation",
        "InitializationBlocked",
        "Observation",
        "RenderError",
        "ReplacementBlocked",
        "ReplacementReady",
        "Snapshot",
        "SnapshotEntry",
        "SystemContext",
        "SystemContextRegistry",
        "Unchanged",
        "Updated",
        "initialize",
        "reconcile",
        "replace",
    }
)
"""Engine names that were importable from here and now live in :mod:`nia_core.context` only."""


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import warnings

        warnings.warn(
            f"nia_core.{name} is the engine's: import it from nia_core.context", DeprecationWarning, stacklevel=2
        )
        import nia_core.context

        return getattr(nia_core.context, name)
    return _exported(name)
