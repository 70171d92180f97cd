"""Building a plugin host for a Location: the switches from config, flags and environment, then every plugin."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from nia_core.context import Location
from nia_core.context.source import LOADER_TIMEOUT
from nia_core.plugin_host.discovery import Selection, load_builtins, load_entry_points, load_local
from nia_core.plugin_host.manager import PluginHost
from nia_core.project.config import project_tables
from nia_core.project.paths import shown_path
from nia_core.project.toml import ConfigError


def config_disabled(location: Location) -> list[str]:
    """``[plugins] disabled`` from the Location's ``.nia/project.toml``."""
    path = location.nia_dir / "project.toml"
    plugins = project_tables(location.root).get("plugins", {})
    if not isinstance(plugins, dict):
        raise ConfigError(f"{shown_path(path)}: [plugins] must be a table")
    disabled = plugins.get("disabled", [])
    if not isinstance(disabled, list) or not all(isinstance(n, str) for n in disabled):
        raise ConfigError(f"{shown_path(path)}: plugins.disabled must be a list of plugin names")
    return disabled


def local_folders(location: Location, plugins_dirs: Iterable[str | Path] = ()) -> list[Path]:
    """The project's ``.nia/plugins`` folder, then each ``--plugins-dir``."""
    return [location.nia_dir / "plugins", *(Path(d).resolve() for d in plugins_dirs)]


def load_host(
    location: Location,
    *,
    plugins_dirs: Iterable[str | Path] = (),
    flags: Iterable[str] = (),
    strict: bool = False,
    entry_points: bool = True,
    timeout: float = LOADER_TIMEOUT,
) -> PluginHost:
    """A host with every plugin that may load at ``location``: built-ins, installed, local."""
    host = PluginHost(strict=strict, timeout=timeout)
    try:
        disabled = config_disabled(location)
    except ConfigError as exc:
        if strict:
            raise
        # The context is withheld while the file is broken (PluginHost.assemble), so loading
        # every plugin switches none of them on for the model, and none off.
        host.config_error = str(exc)
        disabled = []
    selection = Selection.from_sources(flags=flags, config_disabled=disabled)
    load_builtins(host, selection)
    if entry_points:
        load_entry_points(host, selection)
    load_local(host, selection, local_folders(location, plugins_dirs), location.root)
    return host
