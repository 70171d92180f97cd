"""Finding plugins: built-ins, installed entry points (group ``nia``) and local folders.

Each plugin is imported and registered on its own, so one that fails is
reported and skipped while the rest load (``strict`` makes it an error).
"""

from __future__ import annotations

import importlib
import os
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import importlib_metadata

from nia_core.host.host import PluginHost
from nia_core.host.localimport import import_local, module_name
from nia_core.host.plugin import PluginInfo

ENTRY_POINT_GROUP = "nia"
EXCLUDED_LOCAL = {"__pycache__"}


@dataclass
class Selection:
    """Which plugins may load: the switches from the environment, flags and config."""

    disabled: set[str] = field(default_factory=set)
    disable_all_third_party: bool = False
    only: set[str] | None = None
    """From ``NIA_LOAD_PLUGINS``: only these third-party plugins load (built-ins still do)."""

    @classmethod
    def from_sources(
        cls,
        *,
        environ: dict[str, str] | os._Environ[str] | None = None,
        flags: Iterable[str] = (),
        config_disabled: Iterable[str] = (),
    ) -> Selection:
        env = os.environ if environ is None else environ
        selection = cls()
        for name in _split(env.get("NIA_DISABLE_PLUGINS", "")):
            if name == "*":
                selection.disable_all_third_party = True
            else:
                selection.disabled.add(name)
        if "NIA_LOAD_PLUGINS" in env:
            selection.only = set(_split(env["NIA_LOAD_PLUGINS"]))
        for flag in flags:
            if flag.startswith("no:"):
                selection.disabled.add(flag[3:])
        selection.disabled.update(config_disabled)
        return selection

    def allows(self, name: str, *, builtin: bool) -> bool:
        if name in self.disabled:
            return False
        if builtin:
            return True
        if self.disable_all_third_party:
            return False
        return self.only is None or name in self.only


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else f"line {exc.lineno}"
        return f"syntax error at {where}: {exc.msg}"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _namespace(plugin: object) -> str | None:
    namespace = getattr(plugin, "NIA_NAMESPACE", None)
    return namespace if isinstance(namespace, str) else None


def register_imported(host: PluginHost, info: PluginInfo, load: Any, *, priority: int | None = None) -> PluginInfo:
    """Import with ``load()`` and register; any failure marks the plugin broken."""
    try:
        plugin = load()
    except Exception as exc:  # noqa: BLE001 - isolation: report and go on
        info.error = f"failed to import: {_one_line(exc)}"
        return host.record(info)
    except SystemExit as exc:
        info.error = f"failed to import: SystemExit({exc.code})"
        return host.record(info)
    info.namespace = info.namespace or _namespace(plugin)
    info.version = info.version or getattr(plugin, "__version__", None)
    return host.register(plugin, info, priority=priority)


def load_builtins(host: PluginHost, selection: Selection) -> None:
    from nia_plugins import BUILTINS

    for order, (name, module) in enumerate(BUILTINS.items()):
        info = PluginInfo(name, "built-in", module=module, version=_nia_version())
        if not selection.allows(name, builtin=True):
            info.enabled = False
            host.record(info)
            continue
        register_imported(host, info, lambda module=module: importlib.import_module(module), priority=order)


def iter_entry_points() -> Iterator[importlib_metadata.EntryPoint]:
    yield from importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)


def load_entry_points(host: PluginHost, selection: Selection) -> None:
    for entry_point in iter_entry_points():
        dist = entry_point.dist
        info = PluginInfo(
            entry_point.name,
            "entry point",
            module=entry_point.module,
            distribution=dist.name if dist is not None else None,
            version=dist.version if dist is not None else None,
        )
        if entry_point.name in host.plugins:
            info.error = f"plugin name already used by {host.plugins[entry_point.name].origin} plugin"
            host.record(info)
            continue
        if not selection.allows(entry_point.name, builtin=False):
            info.enabled = False
            host.record(info)
            continue
        register_imported(host, info, entry_point.load)


def local_plugin_paths(folder: Path) -> list[tuple[str, Path]]:
    """``(name, path)`` for each ``*.py`` file and package in ``folder``, sorted by name."""
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith((".", "_")) or path.name in EXCLUDED_LOCAL:
            continue
        if path.is_file() and path.suffix == ".py":
            found.append((path.stem, path))
        elif path.is_dir() and (path / "__init__.py").is_file():
            found.append((path.name, path))
    return found


def load_local(host: PluginHost, selection: Selection, folders: Iterable[Path]) -> None:
    for folder in folders:
        for name, path in local_plugin_paths(folder):
            info = PluginInfo(name, "local file", module=module_name(name), path=str(path))
            existing = host.plugins.get(name)
            if existing is not None and existing.path != str(path):
                where = existing.path or existing.module
                info.error = f"plugin name already used by {existing.origin} plugin ({where})"
                host.record(info)
                continue
            if not selection.allows(name, builtin=False):
                info.enabled = False
                host.record(info)
                continue
            register_imported(host, info, lambda name=name, path=path: import_local(name, path))


def _nia_version() -> str:
    from nia_core import __version__

    return __version__
