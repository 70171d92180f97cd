"""What ``nia dev`` reloads together (a unit), and how a unit's new code takes the place of its old.

A unit is one local plugin (a file or package in ``.nia/plugins`` or a
``--plugins-dir``), or one top-level package of an editable-installed
distribution (with every plugin its entry points name). :class:`Swap` imports
a unit afresh and registers it; when the new code fails (an import error, a
hook pluggy rejects, one that raises), it puts the previous version back, its
modules and its registrations, so its sources stay admitted.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import importlib_metadata

from nia_core.context import Location, LocationContext
from nia_core.errors import shown_path
from nia_core.plugin_host.discovery import Selection, register_imported
from nia_core.plugin_host.importing import import_plugin
from nia_core.plugin_host.localimport import FINDER, edge_of, import_local, module_name, restore_modules, take_modules
from nia_core.plugin_host.manager import PluginHost
from nia_core.plugin_host.plugin import PluginInfo
from nia_core.plugin_host.reload_errors import (
    ReloadError,
    exception_error,
    find_in_unit,
    registration_needle,
    where,
    within,
)

UnitKind = Literal["local", "package"]


@dataclass
class Unit:
    """Plugins whose code is reloaded together."""

    kind: UnitKind
    root: Path
    """A local plugin's file or folder; an editable package's folder (or module file)."""
    prefix: str
    """Module name whose module and submodules are this unit's and nobody else's."""
    names: tuple[str, ...]
    active: tuple[str, ...] = ()
    """Plugins of this unit imported by the last attempt (registered, or failed)."""
    attempted: str | None = None
    """Fingerprint of the code last imported or tried; ``None`` when not loaded."""
    gone: bool = False
    """A local plugin whose file or folder was deleted."""

    def contains(self, path: Path) -> bool:
        return path == self.root or self.root in path.parents


@dataclass
class Attempt:
    """What to put back if a freshly imported unit misbehaves."""

    unit: Unit
    names: tuple[str, ...]
    previous: dict[str, tuple[object, PluginInfo]]
    modules: dict[str, types.ModuleType]
    finder_root: Path | None


@dataclass
class Plan:
    """What one reload did so far: the result's lists, and the attempts that may still be rolled back."""

    reloaded: list[str] = field(default_factory=list)
    loaded: list[str] = field(default_factory=list)
    unloaded: list[str] = field(default_factory=list)
    errors: list[ReloadError] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    detected: list[Path] = field(default_factory=list)
    """What was found changed, for a full check that was given no paths."""


class Swap:
    """Unloads, imports and registers units for one host and Location, putting the previous version back
    when the new one fails."""

    def __init__(
        self,
        host: PluginHost,
        view: LocationContext,
        entry_points: Mapping[str, importlib_metadata.EntryPoint],
        selection: Callable[[], Selection],
    ) -> None:
        self.host = host
        self.view = view
        self.location: Location = view.location
        self.entry_points = entry_points
        self.selection = selection
        """The plugins switched on and off now (it changes with the project's config)."""

    def unload(self, name: str, *, forget: bool, plan: Plan) -> None:
        """Unregister ``name``; ``forget`` drops it from the host's list too (its file is gone)."""
        was_registered = self.host.pm.has_plugin(name)
        self.host.unregister(name)
        if forget:
            self.host.forget(name)
        elif name in self.host.plugins:
            info = self.host.plugins[name]
            info.enabled = False
            info.error = None
            info.disabled_by = self.selection().reason(name, builtin=info.origin == "built-in")
        if was_registered:
            plan.unloaded.append(name)

    def info(self, unit: Unit, name: str) -> PluginInfo:
        existing = self.host.plugins.get(name)
        if existing is not None:
            info = fresh_info(existing)
            if unit.kind == "local":
                info.path = str(unit.root)  # a file may have become a package
            return info
        if unit.kind == "local":
            return PluginInfo(name, "local file", module=module_name(name), path=str(unit.root))
        ep = self.entry_points[name]
        dist = ep.dist
        return PluginInfo(
            name,
            "entry point",
            module=ep.module,
            distribution=dist.name if dist is not None else None,
            version=dist.version if dist is not None else None,
        )

    def load(self, unit: Unit, name: str) -> Any:
        """Import under the host's deadline; see :mod:`nia_core.plugin_host.importing`."""
        if unit.kind == "local":
            edge = edge_of(unit.root, self.location.root)
            return import_plugin(lambda: import_local(name, unit.root, edge), self.host.import_timeout)
        return import_plugin(self.entry_points[name].load, self.host.import_timeout)

    def import_unit(self, unit: Unit, names: tuple[str, ...], current: str, plan: Plan) -> None:
        """Import the unit afresh and register it; on failure put the previous version back."""
        previous = {
            n: (self.host.plugin(n), dataclasses.replace(self.host.plugins[n]))
            for n in unit.active
            if self.host.pm.has_plugin(n) and n in self.host.plugins
        }
        attempt = Attempt(
            unit,
            names,
            previous,
            take_modules(unit.prefix),
            FINDER.roots.get(unit.names[0]) if unit.kind == "local" else None,
        )
        importlib.invalidate_caches()
        unit.attempted = current
        unit.active = names
        objects: dict[str, Any] = {}
        for name in names:
            try:
                objects[name] = self.load(unit, name)
            except Exception as exc:  # noqa: BLE001 - a plugin's import may raise anything (BaseException comes wrapped)
                self.rollback(attempt, plan, exception_error(name, exc, unit, self.location, bool(previous)))
                return
        withdraw_location_contributions(self.view, unit)
        for name, plugin in objects.items():
            info = self.info(unit, name)
            try:
                registered = register_imported(self.host, info, lambda plugin=plugin: plugin, deadline=False)
            except Exception as exc:  # noqa: BLE001 - a historic hook replayed at registration raised
                self.rollback(attempt, plan, exception_error(name, exc, unit, self.location, bool(previous)))
                return
            if registered.error is not None:
                error, file, line = registered.error, None, None
                if registered.raised_at is not None:  # the text ends with " (FILE:LINE)": shown once, in front
                    file, line = registered.raised_at
                    error = error.removesuffix(f" ({shown_path(file)}:{line})")
                else:
                    file, line = find_in_unit(unit, registration_needle(error))
                message = f"{where(file, line, self.location)}{error}"
                self.rollback(attempt, plan, ReloadError(name, message, file, line, bool(previous)))
                return
        plan.reloaded.extend(n for n in names if n in previous)
        plan.loaded.extend(n for n in names if n not in previous)
        plan.attempts.append(attempt)

    def rollback(self, attempt: Attempt, plan: Plan, error: ReloadError | None) -> None:
        """Unregister the new code and put the previous version (modules and registration) back."""
        unit = attempt.unit
        for name in attempt.names:
            self.host.unregister(name)
        withdraw_location_contributions(self.view, unit)
        restore_modules(unit.prefix, attempt.modules)
        if attempt.finder_root is not None:
            FINDER.add(unit.names[0], attempt.finder_root, edge_of(attempt.finder_root, self.location.root))
        for plugin, info in attempt.previous.values():
            info.error = None
            try:
                self.host.register(plugin, info)
            except Exception as exc:  # noqa: BLE001 - the old version's replayed hook may fail now
                self.host.unregister(info.name)
                info.error = f"the previous version could not be restored: {type(exc).__name__}: {exc}"
                self.host.record(info)
        for name in attempt.names:
            if name not in attempt.previous:
                info = self.info(unit, name)
                info.error = error.message if error is not None else "reload failed"
                self.host.record(info)
        unit.active = tuple(attempt.previous)
        for name in attempt.names:
            for bucket in (plan.reloaded, plan.loaded):
                if name in bucket:
                    bucket.remove(name)
        if attempt in plan.attempts:
            plan.attempts.remove(attempt)
        if error is not None:
            plan.errors.append(error)


def withdraw_location_contributions(view: LocationContext, unit: Unit) -> None:
    """Take back what the unit's code registered into the Location itself (``nia_location_opened``).

    The host replays ``nia_location_opened`` when the new version registers,
    and it would register the same contribution keys again. Contributions are
    recognised by where their producer's code lives.
    """
    view.withdraw(*(c.key for c in view.contributions if defined_in(c.producer, unit)))


def defined_in(function: object, unit: Unit) -> bool:
    code = getattr(function, "__code__", None)
    if code is not None:
        return within(code.co_filename, unit.root)
    module = getattr(function, "__module__", None) or ""
    return module == unit.prefix or module.startswith(unit.prefix + ".")


def fresh_info(info: PluginInfo) -> PluginInfo:
    return dataclasses.replace(info, enabled=True, error=None, raised_at=None, hooks=[], source_keys=[], namespace=None)
