"""The plugin host: hookspecs, discovery, enable/disable, reload.

Importing the package loads nothing but itself (PEP 562, see :mod:`nia_core.lazy`):
a cached ``nia --help`` reads :mod:`nia_core.plugin_host.epcache` alone, without the
host, pluggy or the engine.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nia_core.lazy import lazy_exports

if TYPE_CHECKING:
    from nia_core.plugin_host.discovery import Selection as Selection
    from nia_core.plugin_host.load import config_disabled as config_disabled
    from nia_core.plugin_host.load import load_host as load_host
    from nia_core.plugin_host.load import local_folders as local_folders
    from nia_core.plugin_host.manager import PluginError as PluginError
    from nia_core.plugin_host.manager import PluginHost as PluginHost
    from nia_core.plugin_host.plugin import PluginInfo as PluginInfo

__all__, __getattr__, __dir__ = lazy_exports(__name__)
