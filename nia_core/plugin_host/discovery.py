"""Finding plugins: built-ins, installed entry points (group ``nia``) and local folders.

Each plugin is imported and registered on its own, so one that fails is
reported and skipped while the rest load (``strict`` makes it an error).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nia_core import hookspecs
from nia_core.context.keys import RESERVED_NAMESPACE, validate_key
from nia_core.errors import InvalidSourceKey, one_line
from nia_core.plugin_host import epcache
from nia_core.plugin_host.epcache import EntryPointRecord
from nia_core.plugin_host.implementations import marker_opts, static_names
from nia_core.plugin_host.importing import ImportAhead, ImportDeadline, PluginRaised, import_plugin
from nia_core.plugin_host.manager import PluginError, PluginHost
from nia_core.plugin_host.plugin import PluginInfo
from nia_core.process import note_plugin_module
from nia_core.project.paths import shown_path

ENTRY_POINT_GROUP = "nia"
log = logging.getLogger("nia.host")
EXCLUDED_LOCAL = {"__pycache__"}


@dataclass
class Selection:
    """Which plugins may load: the switches from the environment, flags and config."""

    disabled: set[str] = field(default_factory=set)
    disable_all_third_party: bool = False
    only: set[str] | None = None
    """From ``NIA_LOAD_PLUGINS``: only these third-party plugins load (built-ins still do)."""
    disabled_by: dict[str, str] = field(default_factory=dict)
    """Name → the switch that turned it off, for ``nia plugins list``."""

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
                selection._disable(name, "NIA_DISABLE_PLUGINS")
        if "NIA_LOAD_PLUGINS" in env:
            selection.only = set(_split(env["NIA_LOAD_PLUGINS"]))
        for flag in flags:
            if flag.startswith("no:"):
                selection._disable(flag[3:], f"-p {flag}")
        for name in config_disabled:
            selection._disable(name, "[plugins] disabled in .nia/project.toml")
        return selection

    def _disable(self, name: str, why: str) -> None:
        self.disabled.add(name)
        self.disabled_by.setdefault(name, why)

    def allows(self, name: str, *, builtin: bool) -> bool:
        return self.reason(name, builtin=builtin) is None

    def reason(self, name: str, *, builtin: bool) -> str | None:
        """Why ``name`` may not load, or ``None`` when it may."""
        if name in self.disabled:
            return self.disabled_by.get(name, "disabled")
        if builtin:
            return None
        if self.disable_all_third_party:
            return "NIA_DISABLE_PLUGINS=*"
        if self.only is not None and name not in self.only:
            return "not in NIA_LOAD_PLUGINS"
        return None


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _attribute(plugin: object, name: str) -> Any:
    """``plugin.NAME`` looked up statically, as pluggy looks up hooks: no module ``__getattr__``, no property.

    It runs on the caller's thread after the import deadline, so it must not run the plugin's code.
    """
    if type(plugin) is types.ModuleType:
        return vars(plugin).get(name)
    import inspect

    return inspect.getattr_static(plugin, name, None)


def _namespace(plugin: object, info: PluginInfo) -> str | None:
    """The plugin's declared ``NIA_NAMESPACE``; raises ``ValueError`` when it cannot be one."""
    namespace = _attribute(plugin, "NIA_NAMESPACE")
    if namespace is None:
        return None
    if not isinstance(namespace, str):
        raise ValueError(f"NIA_NAMESPACE must be a string, not {type(namespace).__name__}")
    try:
        validate_key(f"{namespace}/x")
    except InvalidSourceKey:
        raise ValueError(
            f"NIA_NAMESPACE {namespace!r} is not a key namespace (lowercase letters, digits, '-', '_', '.')"
        ) from None
    if namespace == RESERVED_NAMESPACE and info.origin != "built-in":
        raise ValueError(f"NIA_NAMESPACE {namespace!r} is reserved for nia's built-in plugins")
    return namespace


def _unknown_hooks(host: PluginHost, name: str) -> str | None:
    """What the plugin implements that no hookspec declares (a typo, most likely), with file and line.

    ``@hookimpl`` marks the function, not the name: ``nia_context_sources =
    hookimpl(_orig)`` marks ``_orig`` too, and pluggy takes every marked
    attribute as an implementation of the hook it names.
    """
    found = host.implementations(name)
    known: dict[int, str] = {}
    unknown: dict[str, str] = {}
    hints: list[str] = []
    for impl in found:
        caller = getattr(host.pm.hook, impl.hook, None)
        if caller is not None and caller.has_spec():
            known[id(inspect.unwrap(impl.function))] = impl.attribute
    for impl in found:
        caller = getattr(host.pm.hook, impl.hook, None)
        if (caller is not None and caller.has_spec()) or impl.opts.get("optionalhook") or impl.hook in unknown:
            continue
        function = inspect.unwrap(impl.function)
        code = getattr(function, "__code__", None)
        unknown[impl.hook] = impl.hook + (f" ({shown_path(code.co_filename)}:{code.co_firstlineno})" if code else "")
        alias = known.get(id(function))
        if alias is not None:
            hints.append(
                f"{impl.attribute} is the same function as {alias}, and @hookimpl marks a function under every "
                f"name it has: define {alias} itself, or use @hookimpl(specname={alias!r})"
            )
    if not unknown:
        return None
    listed = ", ".join(unknown[hook] for hook in sorted(unknown))
    said = f"implements {listed}, which is not a nia hook (see docs/plugin_hooks.md)"
    return "; ".join([said, *hints])


def _unmarked_hooks(plugin: object) -> list[str]:
    """Functions named like a nia hook (or nearly) that lack ``@hookimpl``: pluggy ignores them silently."""
    hooks = [name for name in vars(hookspecs) if name.startswith("nia_")]
    found = []
    for attr in static_names(plugin):
        if not attr.startswith("nia_") or attr in ("nia_impl",):
            continue
        if attr not in hooks and not _close_to_a_hook(attr, hooks):
            continue
        value = _attribute(plugin, attr)
        if callable(value) and marker_opts(plugin, attr) is None:
            found.append(attr)
    return sorted(found, key=lambda name: (name not in hooks, name))


def _close_to_a_hook(name: str, hooks: list[str]) -> bool:
    import difflib  # only for a plugin with a nia_* name that is no hook: not on every start

    return bool(difflib.get_close_matches(name, hooks, n=1, cutoff=0.85))


def _no_such_hook(function: str) -> str:
    import difflib

    hooks = [name for name in vars(hookspecs) if name.startswith("nia_")]
    close = difflib.get_close_matches(function, hooks, n=1, cutoff=0.85)
    return f" and nia has no hook of that name (did you mean {close[0]}?)" if close else ""


def register_imported(
    host: PluginHost, info: PluginInfo, load: Any, *, priority: int | None = None, deadline: bool = True
) -> PluginInfo:
    """Import with ``load()`` (under the host's import deadline) and register; any failure marks the plugin broken.

    Broken means: it failed to import (whatever it raised) or did not finish
    importing in time, declares an unusable ``NIA_NAMESPACE``, has a hook
    implementation pluggy rejects (nothing of it stays
    registered), or implements a hook nia does not have. ``deadline=False`` is
    for nia's own built-ins and objects already imported.
    """
    started = time.monotonic()
    if info.module:
        note_plugin_module(info.module, info.name)
    try:
        plugin = import_plugin(load, host.import_timeout) if deadline else load()
    except ImportDeadline as exc:
        info.error = str(exc)
        return host.record(info)
    except PluginRaised as exc:  # worded on the worker: the plugin's __str__ does not run here
        info.error = f"failed to import: {exc.worded(shown_path)}"
        log.debug("plugin %r: import traceback", info.name, exc_info=exc.original)  # shown with --debug
        return host.record(info)
    except Exception as exc:  # isolation: report and go on
        info.error = f"failed to import: {one_line(exc, show_path=shown_path)}"
        log.debug("plugin %r: import traceback", info.name, exc_info=exc)
        return host.record(info)
    try:
        info.namespace = info.namespace or _namespace(plugin, info)
    except ValueError as exc:
        info.error = str(exc)
        return host.record(info)
    info.version = info.version or _attribute(plugin, "__version__")
    registered = host.register(plugin, info, priority=priority)
    if log.isEnabledFor(logging.DEBUG):
        where = info.path or info.distribution or info.module or info.origin
        elapsed = (time.monotonic() - started) * 1000
        log.debug("plugin %r (%s, %s): imported and registered in %.1f ms", info.name, info.origin, where, elapsed)
    if registered.error is None:
        unknown = _unknown_hooks(host, info.name)
        if unknown is not None:
            host.unregister(info.name)
            info.hooks = []
            info.error = unknown
            return host.record(info)
        for function in _unmarked_hooks(plugin):
            hint = "" if hasattr(hookspecs, function) else _no_such_hook(function)
            host.warn(
                registered,
                f"function {function} has no @hookimpl marker{hint}, so nia never calls it "
                "(decorate it with @hookimpl, from nia_core import hookimpl)",
            )
    return registered


def skip_taken_name(host: PluginHost, info: PluginInfo, existing: PluginInfo) -> None:
    """Leave out a second plugin with a name already loaded; the first keeps its name and its entry."""

    def where(i: PluginInfo) -> str:
        return i.distribution or i.path or i.module or "?"

    message = (
        f"plugin {info.name!r} ({info.origin} from {where(info)}) left out: "
        f"the name is taken by the {existing.origin} plugin from {where(existing)}"
    )
    host.left_out.append(message)
    if host.strict:
        raise PluginError(message)
    log.warning("%s", message)


def load_builtins(host: PluginHost, selection: Selection) -> None:
    from nia_plugins import BUILTINS

    for order, (name, module) in enumerate(BUILTINS.items()):
        info = PluginInfo(name, "built-in", module=module, version=_nia_version())
        why = selection.reason(name, builtin=True)
        if why is not None:
            info.enabled = False
            info.disabled_by = why
            host.record(info)
            continue
        load = lambda module=module: importlib.import_module(module)  # noqa: E731
        register_imported(host, info, load, priority=order, deadline=False)


def entry_point_records() -> list[EntryPointRecord]:
    """The installed ``nia`` entry points, from the scan cache when nothing installed has changed."""
    return epcache.scan(ENTRY_POINT_GROUP)


def load_entry_points(
    host: PluginHost, selection: Selection, records: Iterable[EntryPointRecord] | None = None
) -> None:
    """Load each entry point on its own: a plugin pack's entry points are separate plugins."""
    started = time.monotonic()
    found = entry_point_records() if records is None else list(records)
    log.debug("entry points: %d in group 'nia', found in %.1f ms", len(found), (time.monotonic() - started) * 1000)
    editable = {r.module.partition(".")[0] for r in found if r.editable}
    if editable:  # under development: from source in every process, never a stale .pyc
        from nia_core.plugin_host.localimport import compile_from_source

        compile_from_source(editable)
    steps = []
    for point in sorted(found, key=lambda r: r.name):  # stable: on a name clash, sys.path order decides
        info = PluginInfo(
            point.name,
            "entry point",
            module=point.module,
            distribution=point.distribution,
            version=point.version,
        )
        steps.append((info, point.load))
    _load_in_turn(host, selection, steps, lambda info, existing: True)


def _load_in_turn(
    host: PluginHost,
    selection: Selection,
    steps: list[tuple[PluginInfo, Callable[[], Any]]],
    clashes: Callable[[PluginInfo, PluginInfo], bool],
) -> None:
    """Skip each plugin whose name is taken (``clashes`` with the one holding it), record each switched off,
    import and register the rest, in order.

    Which plugins get imported is known up front (every plugin handled takes
    its name), so their imports run ahead on one worker (:class:`ImportAhead`)
    while the ones already imported are registered.
    """
    holders = dict(host.plugins)
    plan: list[tuple[str, PluginInfo, int]] = []
    loads: list[Callable[[], Any]] = []
    for info, load in steps:
        existing = holders.get(info.name)
        if existing is not None and clashes(info, existing):
            plan.append(("taken", info, -1))
            continue
        holders[info.name] = info
        why = selection.reason(info.name, builtin=False)
        if why is not None:
            info.enabled = False
            info.disabled_by = why
            plan.append(("disabled", info, -1))
            continue
        plan.append(("import", info, len(loads)))
        loads.append(load)
    ahead = ImportAhead(loads, host.import_timeout)
    try:
        for what, info, index in plan:
            if what == "taken":
                skip_taken_name(host, info, host.plugins[info.name])
            elif what == "disabled":
                host.record(info)
            else:  # the deadline is the ImportAhead's
                register_imported(host, info, ahead.take(index), deadline=False)
    finally:
        ahead.close()


def local_plugin_paths(folder: Path) -> list[tuple[str, Path]]:
    """``(name, path)`` for each ``*.py`` file and package in ``folder``, sorted by name.

    Every hook lists the folder, so what a repository puts there besides plugins must cost little: one
    ``os.scandir`` (an entry's kind comes with its name), and a ``stat`` only for a folder's
    ``__init__.py`` (a ``Path`` and three ``stat`` calls per entry made 30,000 planted folders cost
    three to four times as much).
    """
    if not folder.is_dir():
        return []
    with os.scandir(folder) as listing:
        entries = sorted((entry.name, entry) for entry in listing if _may_be_plugin(entry.name))
    found = []
    for name, entry in entries:
        try:
            if name.endswith(".py") and entry.is_file():
                found.append((name[: -len(".py")], folder / name))
            elif entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                found.append((name, folder / name))
        except OSError:  # gone, or unreadable, since it was listed
            continue
    return found


def _may_be_plugin(name: str) -> bool:
    return not name.startswith((".", "_")) and name not in EXCLUDED_LOCAL


def local_plugin_entry(path: Path) -> tuple[str, Path] | None:
    """``(name, path)`` when ``path``, an entry of a local plugin folder, is a plugin (a ``*.py`` file or a package)."""
    if not _may_be_plugin(path.name):
        return None
    if path.is_file() and path.suffix == ".py":
        return path.stem, path
    if path.is_dir() and (path / "__init__.py").is_file():
        return path.name, path
    return None


def load_local(host: PluginHost, selection: Selection, folders: Iterable[Path], project: Path | None = None) -> None:
    """Import each local plugin of ``folders``; one found inside ``project`` must keep its modules inside it."""
    steps: list[tuple[PluginInfo, Callable[[], Any]]] = []
    for folder in folders:
        found = local_plugin_paths(folder)
        if found:  # the import machinery of local plugins, only for a folder that holds some
            from nia_core.plugin_host.localimport import edge_of, module_name
        for name, path in found:
            info = PluginInfo(name, "local file", module=module_name(name), path=str(path))
            steps.append((info, _local_import(name, path, None if project is None else edge_of(path, project))))
    _load_in_turn(host, selection, steps, lambda info, existing: existing.path != info.path)


def _local_import(name: str, path: Path, edge: Path | None) -> Callable[[], Any]:
    from nia_core.plugin_host.localimport import import_local

    return lambda: import_local(name, path, edge)


def _nia_version() -> str:
    from nia_core import __version__

    return __version__
