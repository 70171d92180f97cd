"""Live reload of plugins under development: the library behind ``nia dev``.

A :class:`DevSession` holds a plugin host, one open Location and the snapshot a
session would hold. :meth:`DevSession.reload` takes the paths that changed,
reloads only the plugins they belong to (unregister from pluggy, close the
registry scope, drop their modules and only theirs, import again, register
into a fresh scope), reconciles against the current snapshot, and advances it,
exactly as the next safe boundary of a real session would.

What gets reloaded together is a *unit* (:mod:`~nia_core.plugin_host.units`,
which also swaps a unit's code); whether a unit changed is decided by hashing
its files' bytes, not by their timestamps: two saves of the same size within
one second are both seen, and a burst of events that leaves a unit as it was
costs nothing.

A reload that fails (syntax or import error, a hook pluggy rejects, a hook that
raises, returns nonsense or repeats another plugin's key, a renderer that
fails) is reported with file and line (:mod:`~nia_core.plugin_host.reload_errors`),
and the previous working version is put back, so its sources stay admitted.
The next good save recovers.

What a check compares is bounded (:data:`~nia_core.plugin_host.fingerprint.WATCHED_ENTRIES`
entries): a plugin, or a local plugin folder, holding more files and folders
than that is said once (:meth:`DevSession.take_notices`) and from then on
followed through the file events alone, so a tree a repository plants there
never makes each check walk it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import importlib_metadata

from nia_core.context import (
    EMPTY_SNAPSHOT,
    Assembly,
    Generation,
    Location,
    LocationContext,
    Problem,
    Reconciliation,
    ReplacementReady,
    Snapshot,
    SystemContext,
    Updated,
    reconcile,
    replace,
)
from nia_core.context.source import LOADER_TIMEOUT
from nia_core.errors import NiaError, RenderError, escape_name
from nia_core.plugin_host.discovery import (
    ENTRY_POINT_GROUP,
    Selection,
    local_plugin_entry,
    local_plugin_paths,
    register_imported,
)
from nia_core.plugin_host.fingerprint import WATCHED_ENTRIES, DigestCache, TooMany
from nia_core.plugin_host.importing import PluginRaised
from nia_core.plugin_host.load import config_disabled, load_host, local_folders
from nia_core.plugin_host.localimport import (
    FINDER,
    EditablePackage,
    compile_from_source,
    editable_packages,
    module_name,
    take_modules,
)
from nia_core.plugin_host.manager import PluginHost
from nia_core.plugin_host.reload_errors import ReloadError, exception_error, find_in_unit, where
from nia_core.plugin_host.units import Attempt, Plan, Swap, Unit, fresh_info, withdraw_location_contributions
from nia_core.plugin_host.watch import ignored
from nia_core.project.toml import ConfigError

__all__ = ["Baseline", "DevSession", "ReloadError", "ReloadResult", "Unit"]

UNCHECKED = "unchecked"
"""The fingerprint of a unit too large to compare: equal to itself, so only a file event inside it reloads it."""


@dataclass(frozen=True)
class ReloadResult:
    """What one reload did and what the next safe boundary would tell the model."""

    paths: tuple[str, ...]
    """The changed paths given, or for a full check those found changed."""
    reloaded: tuple[str, ...] = ()
    """Plugins whose new code is now registered."""
    loaded: tuple[str, ...] = ()
    """Plugins registered that were not before (new file, switched on)."""
    unloaded: tuple[str, ...] = ()
    """Plugins no longer registered (file deleted, switched off)."""
    errors: tuple[ReloadError, ...] = ()
    problems: tuple[str, ...] = ()
    """Plugins left out of this boundary for other reasons (one line each)."""
    outcome: Reconciliation | None = None
    """The reconcile result; ``None`` only when reconciling itself failed (see ``errors``)."""
    seconds: float = 0.0
    assembly: Assembly | None = None
    """The sources reconciled (with their contributors), for servers that render each source on its own."""


@dataclass(frozen=True)
class Baseline:
    """The first rendering of a dev session."""

    generation: Generation
    assembly: Assembly
    unavailable: tuple[str, ...] = ()
    """Keys left out because their loaders were unavailable (a real session would wait for them)."""
    errors: tuple[ReloadError, ...] = ()
    """Plugins left out because a renderer failed."""


class DevSession:
    """A host, a Location and a snapshot, kept current as plugin sources change.

    Use :meth:`open` to load everything for a Location, or pass a host and
    view of your own (an agent server, a test). Reloads are serialized.
    """

    def __init__(
        self,
        host: PluginHost,
        view: LocationContext,
        snapshot: Snapshot = EMPTY_SNAPSHOT,
        *,
        plugins_dirs: Iterable[str | Path] = (),
        flags: Iterable[str] = (),
        environ: dict[str, str] | None = None,
        entry_points: Iterable[importlib_metadata.EntryPoint] | None = None,
        fingerprints: Mapping[Path, str] | None = None,
    ) -> None:
        """``fingerprints`` (plugin root → fingerprint) taken before the host imported the
        plugins make an edit made during loading show up at the first :meth:`reload`."""
        self.host = host
        self.view = view
        self.location: Location = view.location
        self.snapshot = snapshot
        self.generation: Generation | None = None
        self.flags = tuple(flags)
        self.environ = environ
        self.local_folders = tuple(local_folders(self.location, plugins_dirs))
        self.config_path = self.location.nia_dir / "project.toml"
        eps = (
            list(importlib_metadata.entry_points(group=ENTRY_POINT_GROUP))
            if entry_points is None
            else list(entry_points)
        )
        self._entry_points = {ep.name: ep for ep in eps}
        self.editable: tuple[EditablePackage, ...] = tuple(editable_packages(eps))
        compile_from_source(package.package for package in self.editable)
        self._lock = threading.RLock()
        self._digests = DigestCache()
        self._notices: list[str] = []
        self._unchecked: set[Path] = set()
        """Plugin roots past :data:`WATCHED_ENTRIES`: reloaded at each file event inside them, never walked."""
        self._crowded: dict[Path, dict[Path, str]] = {}
        """Local folders past :data:`WATCHED_ENTRIES` entries -> their plugins (path -> name), kept from events."""
        self._config_fingerprint = self._digests.fingerprint(self.config_path)
        self._selection = self._read_selection()[0] or Selection.from_sources(environ=environ, flags=self.flags)
        self.units: dict[str, Unit] = {}
        for package in self.editable:
            self.units[f"package:{package.package}"] = Unit(
                "package", package.root, package.package, tuple(package.plugins)
            )
        self._refresh_local_units()
        for unit in self.units.values():
            unit.active = tuple(n for n in unit.names if n in host.plugins and host.plugins[n].enabled)
            if unit.active:
                early = (fingerprints or {}).get(unit.root)
                unit.attempted = early or self._fingerprint(unit)
        self._bases = (*self.local_folders, *(package.root for package in self.editable))
        self._swap = Swap(host, view, self._entry_points, lambda: self._selection)

    @classmethod
    def open(
        cls,
        location: Location,
        *,
        plugins_dirs: Iterable[str | Path] = (),
        flags: Iterable[str] = (),
        entry_points: bool = True,
        timeout: float = LOADER_TIMEOUT,
    ) -> DevSession:
        """Load every plugin for ``location`` (never strict) and open it; then call :meth:`start`."""
        plugins_dirs = tuple(plugins_dirs)
        eps = list(importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)) if entry_points else []
        editable = editable_packages(eps)
        compile_from_source(package.package for package in editable)
        roots = [path for folder in local_folders(location, plugins_dirs) for _, path in local_plugin_paths(folder)]
        digests = DigestCache()
        early: dict[Path, str] = {}
        for root in [*roots, *(p.root for p in editable)]:
            with contextlib.suppress(TooMany):  # the session says so, and follows it through file events
                early[root] = digests.fingerprint(root, [WATCHED_ENTRIES])
        host = load_host(location, plugins_dirs=plugins_dirs, flags=flags, entry_points=entry_points, timeout=timeout)
        view = host.open(location)
        return cls(host, view, plugins_dirs=plugins_dirs, flags=flags, entry_points=eps, fingerprints=early)

    # -- the baseline ---------------------------------------------------------------------

    def start(self) -> Baseline:
        """Render a fresh baseline (the start of a context epoch) and make its snapshot current.

        A plugin whose renderer fails is left out (and reported) rather than
        stopping the session.
        """
        with self._lock:
            errors: list[ReloadError] = []
            while True:
                assembly = self._assemble()
                try:
                    result = replace(assembly.context, EMPTY_SNAPSHOT, timeout=self.host.timeout)
                    break
                except RenderError as exc:
                    name = self._owner(assembly, exc.key)
                    if name is None or not self.host.pm.has_plugin(name):
                        raise
                    self.host.unregister(name)
                    self.host.plugins[name].error = str(exc)
                    file, line = self._hook_definition(name)
                    errors.append(ReloadError(name, f"{where(file, line, self.location)}{exc}", file, line))
            assert isinstance(result, ReplacementReady)  # an empty snapshot never blocks
            self.generation = result.generation
            self.snapshot = result.generation.snapshot
            missing = tuple(o.key for o in result.observations if not o.available)
            return Baseline(result.generation, assembly, missing, tuple(errors))

    def _assemble(self) -> Assembly:
        """The host's assembly with the engine's strict rendering: a failing renderer raises here,
        so the reload can put the plugin's previous version back and say where it failed."""
        assembly = self.host.assemble(self.view)
        context = SystemContext(
            assembly.context.sources,
            on_unavailable=assembly.context.on_unavailable,
            withheld=assembly.context.withheld,
        )
        return dataclasses.replace(assembly, context=context)

    def _owner(self, assembly: Assembly, key: str) -> str | None:
        name = assembly.owners.get(key)
        return name if name in self.host.plugins else None

    # -- what to watch --------------------------------------------------------------------

    def watch_roots(self) -> list[Path]:
        """Folders to watch: ``.nia`` (config and local plugins), each ``--plugins-dir``, each editable package."""
        candidates = [self.location.nia_dir, *self.local_folders]
        candidates += [p.root if p.root.is_dir() else p.root.parent for p in self.editable]
        roots: list[Path] = []
        for path in candidates:
            if any(path == root or root in path.parents for root in roots):
                continue
            roots = [root for root in roots if path not in root.parents]
            roots.append(path)
        return roots

    def relevant(self, path: Path) -> bool:
        """Whether a change to ``path`` can change a loaded plugin (safe to call from any thread)."""
        if path == self.config_path:
            return True
        for base in self._bases:
            if path == base:
                return True
            if base in path.parents:
                return not ignored(path.relative_to(base).parts)
        return False

    # -- reloading ------------------------------------------------------------------------

    def reload(
        self, paths: Iterable[str | os.PathLike[str]] | None = None, *, reobserve: bool = False
    ) -> ReloadResult | None:
        """Reload what ``paths`` touch (everything when ``None``) and reconcile.

        Returns ``None`` when nothing that matters changed (a save that left
        the bytes as they were, a scratch file); otherwise the result, with
        the snapshot already advanced. ``reobserve`` reconciles even when no
        plugin changed: a file a source reads (AGENTS.md) or a source that is
        not a file (``nia mcp``'s periodic re-observation) may have.
        """
        with self._lock:
            started = time.perf_counter()
            changed = None if paths is None else {Path(os.path.abspath(p)) for p in paths}
            if changed is not None and any(p == base or p in base.parents for p in changed for base in self._bases):
                changed = None  # a plugin folder itself came or went (a rename of .nia): all of it changed
            plan = Plan()
            config_changed = self._refresh_config(changed, plan)
            if changed is None or any(self._in_local_folder(p) for p in changed):
                self._refresh_local_units(changed)
            self._apply(changed, config_changed, plan)
            if not (reobserve or config_changed or plan.attempts or plan.unloaded or plan.errors or plan.loaded):
                return None
            assembly = self._settle(plan)
            outcome, assembly = self._reconcile(assembly, plan)
            if isinstance(outcome, Updated):
                self.snapshot = outcome.snapshot
            elif isinstance(outcome, ReplacementReady):
                self.generation = outcome.generation
                self.snapshot = outcome.generation.snapshot
            failed = {e.plugin for e in plan.errors}
            return ReloadResult(
                paths=tuple(sorted(str(p) for p in (plan.detected if changed is None else changed))),
                reloaded=tuple(n for n in plan.reloaded if n not in failed),
                loaded=tuple(n for n in plan.loaded if n not in failed),
                unloaded=tuple(plan.unloaded),
                errors=tuple(plan.errors),
                problems=tuple(str(p) for p in assembly.problems),
                outcome=outcome,
                seconds=time.perf_counter() - started,
                assembly=assembly,
            )

    def _in_local_folder(self, path: Path) -> bool:
        return any(folder in path.parents for folder in self.local_folders)

    def _read_selection(self) -> tuple[Selection | None, NiaError | None]:
        try:
            disabled = config_disabled(self.location)
        except NiaError as exc:
            return None, exc
        return Selection.from_sources(environ=self.environ, flags=self.flags, config_disabled=disabled), None

    def _refresh_config(self, changed: set[Path] | None, plan: Plan) -> bool:
        if changed is not None and self.config_path not in changed:
            return False
        current = self._digests.fingerprint(self.config_path)
        if current == self._config_fingerprint:
            return False
        self._config_fingerprint = current
        plan.detected.append(self.config_path)
        selection, error = self._read_selection()
        if selection is None:
            file, line = str(self.config_path), error.line if isinstance(error, ConfigError) else None
            self.host.already_reported(str(error))
            plan.errors.append(ReloadError(None, str(error), file, line, kept_previous=True))
        else:
            self._selection = selection
        return True

    def take_notices(self) -> list[str]:
        """What the session has to say once (a folder too large to compare at every check), then forgets."""
        with self._lock:
            notices, self._notices = self._notices, []
            return notices

    def _fingerprint(self, unit: Unit) -> str:
        """The unit's fingerprint; past :data:`WATCHED_ENTRIES` files and folders, a constant (said once)."""
        if unit.root in self._unchecked:
            return UNCHECKED
        try:
            return self._digests.fingerprint(unit.root, [WATCHED_ENTRIES])
        except TooMany:
            self._unchecked.add(unit.root)
            self._notices.append(
                f"plugin {unit.names[0]!r}: {escape_name(str(unit.root))} holds more than {WATCHED_ENTRIES:,} files "
                "and folders, too many to compare at every check: it is reloaded at each file event inside it, "
                "and full checks skip it"
            )
            return UNCHECKED

    def _local_plugins(self, folder: Path, changed: set[Path] | None) -> list[tuple[str, Path]]:
        """The plugins of a local folder; one of more than :data:`WATCHED_ENTRIES` entries is listed whole once,
        then kept current from the changed paths (an entry, or a file of an entry: a package's ``__init__.py``)."""
        known = self._crowded.get(folder)
        if not folder.is_dir():
            self._crowded.pop(folder, None)
            return []
        if known is None:
            try:
                with os.scandir(folder) as entries:
                    crowded = sum(1 for _ in zip(entries, range(WATCHED_ENTRIES + 1), strict=False)) > WATCHED_ENTRIES
            except OSError:
                crowded = False
            found = local_plugin_paths(folder)
            if crowded:
                self._crowded[folder] = {path: name for name, path in found}
                self._notices.append(
                    f"{escape_name(str(folder))} holds more than {WATCHED_ENTRIES:,} files and folders, too many to "
                    "list at every check: a plugin added or removed there is seen through its file event alone"
                )
            return found
        for path in changed or ():
            entry = path if path.parent == folder else path.parent if path.parent.parent == folder else None
            if entry is not None:
                known.pop(entry, None)
                plugin = local_plugin_entry(entry)
                if plugin is not None:
                    known[entry] = plugin[0]
        return [(known[path], path) for path in sorted(known)]

    def _refresh_local_units(self, changed: set[Path] | None = None) -> None:
        taken = {name for name, info in self.host.plugins.items() if info.origin != "local file"}
        taken |= set(self._entry_points)
        listing: dict[str, Path] = {}
        for folder in self.local_folders:
            for name, path in self._local_plugins(folder, changed):
                if name not in listing and name not in taken:
                    listing[name] = path
        for key in [k for k, unit in self.units.items() if unit.kind == "local" and unit.names[0] not in listing]:
            vanished = self.units[key]
            if vanished.active or vanished.attempted is not None:
                vanished.gone = True  # unloaded by _apply, then forgotten
            else:
                del self.units[key]
        for name, path in listing.items():
            known = self.units.get(f"local:{name}")
            if known is None:
                self.units[f"local:{name}"] = Unit("local", path, module_name(name), (name,))
            elif known.root != path or known.gone:
                known.root, known.gone = path, False
                known.attempted = None

    def _allowed(self, name: str, *, builtin: bool = False) -> bool:
        return self._selection.allows(name, builtin=builtin)

    def _apply(self, changed: set[Path] | None, config_changed: bool, plan: Plan) -> None:
        """Unload what is gone or switched off, then import what is new, switched on or edited."""
        for key, unit in list(self.units.items()):
            gone = unit.gone or (unit.kind == "local" and not unit.root.exists())
            wanted = () if gone else tuple(n for n in unit.names if self._allowed(n))
            dropped = [n for n in unit.active if n not in wanted]
            if dropped:
                plan.detected.append(unit.root)
            for name in dropped:
                self._swap.unload(name, forget=gone, plan=plan)
            if dropped and not wanted:
                withdraw_location_contributions(self.view, unit)
                take_modules(unit.prefix)
                unit.active, unit.attempted = (), None
            if gone:
                FINDER.discard(unit.names[0])
                del self.units[key]
                continue
            if not wanted:
                continue
            touched = changed is None or any(unit.contains(p) for p in changed)
            if unit.attempted is not None and set(wanted) == set(unit.active) and not touched:
                continue
            current = self._fingerprint(unit)
            told = (
                current == UNCHECKED and changed is not None and touched
            )  # an event inside a unit too large to compare
            if unit.attempted == current and set(wanted) == set(unit.active) and not told:
                continue
            plan.detected.append(unit.root)
            self._swap.import_unit(unit, wanted, current, plan)
        if config_changed:
            self._apply_plain(plan)

    def _apply_plain(self, plan: Plan) -> None:
        """Switch built-in and installed (not editable) plugins on or off after a config change."""
        from nia_plugins import BUILTINS

        in_units = {n for unit in self.units.values() for n in unit.names}
        for order, (name, module) in enumerate(BUILTINS.items()):
            self._toggle(name, True, lambda module=module: importlib.import_module(module), order, plan)
        for name, ep in self._entry_points.items():
            if name not in in_units and name not in BUILTINS:
                self._toggle(name, False, ep.load, None, plan)

    def _toggle(self, name: str, builtin: bool, load: Any, priority: int | None, plan: Plan) -> None:
        registered = self.host.pm.has_plugin(name)
        allowed = self._allowed(name, builtin=builtin)
        if registered and not allowed:
            self._swap.unload(name, forget=False, plan=plan)
        elif allowed and not registered and name in self.host.plugins and not self.host.plugins[name].enabled:
            info = fresh_info(self.host.plugins[name])
            registered_info = register_imported(self.host, info, load, priority=priority)
            if registered_info.error is None:
                plan.loaded.append(name)
            else:
                plan.errors.append(ReloadError(name, registered_info.error))

    def _settle(self, plan: Plan) -> Assembly:
        """Assemble; a freshly imported unit whose hook misbehaves is rolled back, then assemble again.

        A key clash is blamed on the plugin just reloaded, even when the
        registry's order let it keep the key and left the other plugin out.
        """
        while True:
            assembly = self._assemble()
            by_name = {a_name: attempt for attempt in plan.attempts for a_name in attempt.names}
            bad: list[tuple[Attempt, Problem, str]] = []
            for problem in assembly.problems:
                culprit = problem.contribution
                if culprit not in by_name and problem.kind == "duplicate-key" and problem.other is not None:
                    culprit = problem.other
                if culprit in by_name:
                    bad.append((by_name[culprit], problem, culprit))
            if not bad:
                return assembly
            for attempt, problem, culprit in bad:
                if attempt in plan.attempts:
                    error = self._problem_error(problem, culprit, attempt.unit, bool(attempt.previous))
                    self._swap.rollback(attempt, plan, error)

    def _reconcile(self, assembly: Assembly, plan: Plan) -> tuple[Reconciliation | None, Assembly]:
        while True:
            try:
                return reconcile(assembly.context, self.snapshot, timeout=self.host.timeout), assembly
            except RenderError as exc:
                name = self._owner(assembly, exc.key)
                attempt = next((a for a in plan.attempts if name in a.names), None)
                if attempt is None:
                    plan.errors.append(ReloadError(name, str(exc)))
                    return None, assembly
                file, line = find_in_unit(attempt.unit, exc.key)
                message = f"{where(file, line, self.location)}{exc}"
                self._swap.rollback(attempt, plan, ReloadError(name, message, file, line, bool(attempt.previous)))
                assembly = self._settle(plan)
            except NiaError as exc:
                plan.errors.append(ReloadError(None, str(exc)))
                return None, assembly

    def _problem_error(self, problem: Problem, name: str, unit: Unit, kept: bool) -> ReloadError:
        file: str | None = None
        line: int | None = None
        if problem.kind == "raised":
            exc = self._call_hook(name)
            if exc is not None:
                return exception_error(name, exc, unit, self.location, kept, prefix="nia_context_sources raised ")
        if problem.kind in ("duplicate-key", "namespace") and problem.key is not None:
            file, line = find_in_unit(unit, problem.key)
        if file is None:
            file, line = self._hook_definition(name)
        message = problem.message
        if name != problem.contribution and problem.kind == "duplicate-key":  # told from the reloaded side
            message = f"source key {problem.key!r} is also contributed by {problem.contributor}"
        return ReloadError(name, f"{where(file, line, self.location)}{message}", file, line, kept)

    def _call_hook(self, name: str) -> BaseException | None:
        """Call the plugin's hook again to learn where it raises (the registry keeps only the message)."""
        _, problems = self.host.call_each(
            "nia_context_sources", {"location": self.location}, location=self.location, plugin=name, skip_broken=False
        )
        found = next((problem for problem in problems if problem.error is not None), None)
        return None if found is None or found.error is None else PluginRaised(found.error, found.worded)

    def _hook_definition(self, name: str) -> tuple[str | None, int | None]:
        for impl in self.host.implementations(name):
            if impl.hook != "nia_context_sources":
                continue
            code = getattr(impl.function, "__code__", None)
            if code is not None:
                return code.co_filename, code.co_firstlineno
        return None, None

    def close(self) -> None:
        self.view.close()
