"""The plugin host: a pluggy PluginManager wired to the System Context Registry.

Each registered plugin gets its own registry scope; unregistering it closes
that scope, so its sources leave (with their removal text) at the next
boundary. A plugin whose hook raises, hangs or returns nonsense is reported by
name and left out; the host and the other plugins keep running.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import types
from collections.abc import Callable, Iterable
from typing import Any

import pluggy

try:  # pluggy's private parts, for a registration that runs no plugin code (see _PluginManager)
    from pluggy._hooks import HookCaller, HookImpl, normalize_hookimpl_opts
    from pluggy._manager import _static_hook_attr
except ImportError:  # a pluggy that moved them: its own registration, dir(plugin) and all
    STATIC_REGISTRATION = False
else:
    STATIC_REGISTRATION = True

from nia_core import hookspecs
from nia_core.context import Assembly, Location, LocationContext, Observation, SystemContext, SystemContextRegistry
from nia_core.context.source import LOADER_TIMEOUT, UNAVAILABLE, ContextSource
from nia_core.errors import NiaError, RenderError, one_line, raised_at
from nia_core.lazylog import lazy_logger
from nia_core.plugin_host.importing import import_deadline
from nia_core.plugin_host.plugin import HookProblem, Origin, PluginInfo
from nia_core.process import is_user_interrupt
from nia_core.project.config import project_tables
from nia_core.stdio import PLUGIN_CODE

log = lazy_logger("nia.host")


class PluginError(NiaError):
    """A plugin failed to load or misbehaved (raised under ``--strict``)."""


CONFIG_PLACEHOLDER = "nia/project.toml"
"""The key a first baseline is blocked on while ``.nia/project.toml`` does not parse."""


def _placeholder(key: str) -> ContextSource:
    """An always-unavailable source: what could not be listed blocks a first baseline, and says nothing."""
    return ContextSource(key, lambda: UNAVAILABLE, str)


def _one_line_validation(exc: Exception) -> str:
    """pluggy's three-line validation message on one line: ``definition: reason``."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    marker = "hookimpl definition:"
    definition = next((line[len(marker) :].strip() for line in lines if line.startswith(marker)), None)
    reasons = [line for line in lines[1:] if not line.startswith(marker)]
    if definition and reasons:
        return f"{definition}: {' '.join(reasons)}"
    return " ".join(lines)


WRAPPABLE_HOOKS: frozenset[str] = frozenset()
"""Hooks on which ``@hookimpl(wrapper=True)`` / ``hookwrapper=True`` works. None: nia calls each
implementation of every hook on its own (so one plugin's failure stays its own), which leaves a
wrapper nothing to wrap; it is refused at registration instead of failing at the first call."""


def _wrapper_problem(pm: pluggy.PluginManager, plugin: object) -> str | None:
    """``@hookimpl(wrapper=True)`` on a nia hook, said at registration: pluggy would accept it."""
    for attribute in static_names(plugin):
        if not attribute.startswith("nia_") or attribute in WRAPPABLE_HOOKS:
            continue
        try:
            opts = pm.parse_hookimpl_opts(plugin, attribute)
        except Exception:  # noqa: BLE001 - an attribute that cannot be read is pluggy's to report
            continue
        if opts and (opts.get("wrapper") or opts.get("hookwrapper")):
            kind = "wrapper=True" if opts.get("wrapper") else "hookwrapper=True"
            return (
                f"invalid hook implementation: {attribute}: @hookimpl({kind}) is not supported on nia hooks "
                "(nia calls each implementation on its own); use a plain @hookimpl"
            )
    return None


def static_names(plugin: object) -> list[str]:
    """The names ``dir(plugin)`` lists for an ordinary plugin, found without running any of its code.

    ``dir()`` calls the plugin's ``__dir__`` (a module may define one at module
    level; an object's class may too): one that never returns would freeze the
    command after the import deadline, where nothing bounds it, and one that
    raises or returns nonsense would crash it. For a module these are the keys
    of its ``__dict__``; for an object, those of its own ``__dict__`` and of
    every class in its MRO (what ``object.__dir__`` lists); for a class, those of
    every class in its MRO. Read through the types' own descriptors, so no
    ``__dir__``, ``__getattr__`` or ``__getattribute__`` of the plugin's (or of
    its metaclass) runs. Only plain ``str`` names count: any other key could
    not name a hook anyway.
    """
    if type(plugin) is types.ModuleType:
        spaces: list[Any] = [vars(plugin)]  # the module type's own descriptor: no module __getattr__ runs
    else:
        klass = plugin if issubclass(type(plugin), type) else type(plugin)
        spaces = [] if klass is plugin else [_instance_dict(plugin)]
        spaces.extend(_CLASS_DICT(base) for base in _CLASS_MRO(klass))
    names: set[str] = set()
    for space in spaces:
        names.update(key for key in list(space) if type(key) is str)
    return sorted(names)


_CLASS_DICT = type.__dict__["__dict__"].__get__
_CLASS_MRO = type.__dict__["__mro__"].__get__


def _instance_dict(plugin: object) -> dict[str, Any]:
    """An object's own ``__dict__``, as pluggy reads it (``object.__getattribute__``), or ``{}``."""
    try:
        space = object.__getattribute__(plugin, "__dict__")
    except Exception:  # noqa: BLE001 - a class's own __dict__ property: no names from there
        return {}
    return space if type(space) is dict else {}


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, registering a plugin without running the plugin's own code.

    ``register`` is pluggy's, except that the names it looks at come from
    :func:`static_names` instead of ``dir(plugin)``: for every ordinary plugin
    the same names, so the same hooks; for a plugin with a ``__dir__`` that
    hangs or raises, its hooks as its ``__dict__`` holds them, and no hang.
    ``get_name`` and ``unregister`` compare plugins by identity (pluggy uses
    ``==``, which runs an object plugin's ``__eq__``). They use pluggy's
    private parts (``HookImpl``, ``_static_hook_attr``, ``_name2plugin``); the
    tests in ``tests/plugin_host/test_hookimpl_lookup.py`` compare every registration
    with pluggy's own, so a pluggy release that changes them is caught there,
    and one that moves them gets pluggy's own ``register`` (``STATIC_REGISTRATION``).

    It also finds the hook implementations of a module plugin the quick way.
    pluggy looks at every name with :func:`inspect.getattr_static` (so that no
    property runs), several microseconds a name: a start with twenty
    installed plugins pays for some five hundred. For a plain module, what that
    finds for a name the module type does not define is the module's own
    ``__dict__`` entry, so it is read from there; everything else goes through pluggy.
    """

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        if not STATIC_REGISTRATION:
            return super().register(plugin, name)
        if plugin is None:
            return None
        plugin_name = name or self.get_canonical_name(plugin)
        if plugin_name in self._name2plugin:
            if self._name2plugin.get(plugin_name, -1) is None:
                return None  # blocked
            raise ValueError(f"Plugin name already registered: {plugin_name}")
        if any(known is plugin for known in self._name2plugin.values()):
            raise ValueError(f"Plugin already registered under a different name: {plugin_name}")
        hookimpls: list[tuple[str, HookImpl, bool]] = []
        for attr_name in static_names(plugin):  # pluggy: dir(plugin), which runs the plugin's __dir__
            opts = self.parse_hookimpl_opts(plugin, attr_name)
            if opts is None:
                continue
            normalize_hookimpl_opts(opts)
            found = _static_hook_attr(plugin, attr_name)
            if found is None:  # parse_hookimpl_opts claims only what pluggy can bind
                continue
            hookimpl = HookImpl(plugin, plugin_name, found[1], opts)
            hook_name = opts.get("specname") or attr_name
            hook: HookCaller | None = getattr(self.hook, hook_name, None)
            verified = False
            if hook is not None and hook.has_spec():
                self._verify_hook(hook, hookimpl)
                verified = True
            hookimpls.append((hook_name, hookimpl, verified))
        self._name2plugin[plugin_name] = plugin
        for hook_name, hookimpl, verified in hookimpls:
            hook = getattr(self.hook, hook_name, None)
            if hook is None:
                hook = HookCaller(hook_name, self._hookexec)
                setattr(self.hook, hook_name, hook)
            elif not verified and hook.has_spec():
                self._verify_hook(hook, hookimpl)
            hook._maybe_apply_history(hookimpl)
            hook._add_hookimpl(hookimpl)
        return plugin_name

    def unregister(self, plugin: Any | None = None, name: str | None = None) -> Any | None:
        """pluggy's, comparing plugins by identity (pluggy's ``!=`` runs an object plugin's ``__eq__``)."""
        if not STATIC_REGISTRATION:
            return super().unregister(plugin, name)
        if name is None:
            name = self.get_name(plugin)
            if name is None:
                raise ValueError("plugin is not registered")
        found = self._name2plugin.get(name)
        if found is None:  # unknown, or blocked
            return None
        if plugin is not None and plugin is not found:
            raise ValueError(f"plugin name {name!r} is registered to another plugin")
        for caller in list(vars(self.hook).values()):
            impls = caller._hookimpls
            if any(impl.plugin is found for impl in impls):
                impls[:] = [impl for impl in impls if impl.plugin is not found]
        del self._name2plugin[name]
        return found

    def get_name(self, plugin: Any) -> str | None:
        if not STATIC_REGISTRATION:
            return super().get_name(plugin)
        for name, known in self._name2plugin.items():
            if known is plugin:
                return name
        return None

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        if type(plugin) is not types.ModuleType or name in _MODULE_TYPE_NAMES:
            return super().parse_hookimpl_opts(plugin, name)  # type: ignore[arg-type]
        value = vars(plugin).get(name)
        if isinstance(value, types.FunctionType):
            opts = getattr(value, "nia_impl", None)
            if opts is None and "__func__" in value.__dict__:  # pluggy reads the marker of a __func__ too
                return super().parse_hookimpl_opts(plugin, name)  # type: ignore[arg-type]
            return opts if isinstance(opts, dict) else None
        if isinstance(value, (staticmethod, classmethod, types.MethodType)):
            return super().parse_hookimpl_opts(plugin, name)  # type: ignore[arg-type]
        return None


_MODULE_TYPE_NAMES = frozenset(dir(types.ModuleType))


class PluginHost:
    """Registers plugins with pluggy and their context producers with the registry."""

    def __init__(
        self, *, strict: bool = False, timeout: float = LOADER_TIMEOUT, import_timeout: float | None = None
    ) -> None:
        self.pm: pluggy.PluginManager = _PluginManager("nia")
        self.pm.add_hookspecs(hookspecs)
        self.registry = SystemContextRegistry(producer_timeout=timeout)
        self.strict = strict
        self.timeout = timeout
        self.import_timeout = import_deadline() if import_timeout is None else import_timeout
        """Seconds a plugin's import may take (``NIA_IMPORT_TIMEOUT``); see :mod:`nia_core.plugin_host.importing`."""
        self.plugins: dict[str, PluginInfo] = {}
        self.left_out: list[str] = []
        """Plugins not loaded at all (a name already taken), one message each, for ``nia plugins list``."""
        self._scopes: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._warned: set[str] = set()
        self._opened: list[tuple[Location, LocationContext]] = []
        """Every Location opened, for the replay of the historic ``nia_location_opened`` to newcomers."""
        self.config_error: str | None = None
        """Set when ``.nia/project.toml`` did not parse as the host loaded: ``[plugins] disabled`` was not applied."""

    # -- registration -----------------------------------------------------------------

    def record(self, info: PluginInfo) -> PluginInfo:
        """Remember a plugin that is disabled or failed before registration."""
        with self._lock:
            self.plugins[info.name] = info
        if info.error:
            if self.strict:  # the error is the report; a warning too would say it twice
                raise PluginError(f"plugin {info.name!r}: {info.error}")
            log.warning("plugin %r: %s", info.name, info.error)
        return info

    def warn(self, info: PluginInfo, warning: str) -> None:
        """A problem that leaves the plugin working: a warning (``strict`` raises)."""
        with self._lock:
            if warning not in info.warnings:
                info.warnings.append(warning)
        if self.strict:
            raise PluginError(f"plugin {info.name!r}: {warning}")
        log.warning("plugin %r: %s", info.name, warning)

    def register(self, plugin: object, info: PluginInfo, *, priority: int | None = None) -> PluginInfo:
        """Register ``plugin`` under ``info.name``; a pluggy validation error marks it broken."""
        name = info.name
        info.raised_at = None
        with self._lock:
            if self.pm.has_plugin(name):
                self.unregister(name)
            wrapper = _wrapper_problem(self.pm, plugin)
            if wrapper is not None:
                info.error = wrapper
                return self.record(info)
            try:  # runs no plugin code: nia replays nia_location_opened itself, below
                self.pm.register(plugin, name=name)
            except pluggy.PluginValidationError as exc:
                info.error = f"invalid hook implementation: {_one_line_validation(exc)}"
                return self.record(info)
            for location, view in list(self._opened):  # nia_location_opened is historic: replay it for newcomers
                _, problems = self.call_each(
                    "nia_location_opened", {"location": location, "context": view}, plugin=name, skip_broken=False
                )
                if problems:
                    self.pm.unregister(name=name)
                    error = problems[0].error
                    info.error = f"nia_location_opened raised {one_line(error) if error else problems[0].problem}"
                    info.raised_at = raised_at(error) if error is not None else None
                    return self.record(info)
            info.hooks = sorted(caller.name for caller in (self.pm.get_hookcallers(plugin) or []))
            info.error = None
            scope = self.registry.scope(name)
            scope.register(
                name,
                self._producer(name),
                contributor=f"plugin {name!r}",
                owner=name,
                namespace=info.namespace,
                reserved=info.origin == "built-in",
                priority=priority if priority is not None else (0 if info.origin == "built-in" else 100),
            )
            self._scopes[name] = scope
            self.plugins[name] = info
        return info

    def unregister(self, name: str) -> None:
        """Unregister from pluggy and close the plugin's scope (its sources leave)."""
        with self._lock:
            if self.pm.has_plugin(name):
                self.pm.unregister(name=name)
            scope = self._scopes.pop(name, None)
            if scope is not None:
                scope.close()

    def forget(self, name: str) -> None:
        self.unregister(name)
        with self._lock:
            self.plugins.pop(name, None)

    # -- Locations and context --------------------------------------------------------

    def open(self, location: Location) -> LocationContext:
        """Open ``location`` and tell every plugin (``nia_location_opened``); one that raises fails alone.

        It is unregistered and marked broken (``strict`` raises) and the others
        still run; plugins registered later are told too, as they register.
        """
        view = self.registry.open(location)
        with self._lock:
            self._opened.append((location, view))
        _, problems = self.call_each("nia_location_opened", {"location": location, "context": view}, skip_broken=False)
        for problem in problems:
            self.unregister(problem.plugin)
            self._mark_broken(problem.plugin, problem.message)
        return view

    def assemble(self, view: LocationContext) -> Assembly:
        """Load the Location's context; misbehaving plugins are marked broken and left out.

        What could not be listed is *withheld*, never removed (see
        :class:`SystemContext`): while ``.nia/project.toml`` does not parse,
        the whole context (nia cannot know which plugins it switches off, nor
        their settings); when a plugin's hook fails, that plugin's sources
        (its namespace, or every key for a plugin without one). Either way the
        last admitted values stay in force and the model is told nothing.
        """
        broken = self.config_problem(view.location)
        if broken is not None:
            self._warn_once(broken)
            held = _placeholder(CONFIG_PLACEHOLDER)  # a first baseline waits for the file to be fixed
            return Assembly(SystemContext((held,), withheld=("",)), contributors={CONFIG_PLACEHOLDER: "nia"})
        assembly = view.assemble()
        by_owner: dict[str, list[str]] = {}
        for key, owner in assembly.owners.items():
            by_owner.setdefault(owner, []).append(key)
        with self._lock:
            for name, info in self.plugins.items():
                if info.enabled and self.pm.has_plugin(name):
                    info.source_keys = sorted(by_owner.get(name, []))
                    info.error = None
            for problem in assembly.problems:
                name = problem.contribution
                if name in self.plugins:
                    self.plugins[name].error = problem.message
                    self.plugins[name].source_keys = []
        if self.strict and assembly.problems:
            raise PluginError("; ".join(str(p) for p in assembly.problems))
        sources = list(assembly.context.sources)
        contributors = dict(assembly.contributors)
        owners = dict(assembly.owners)
        for problem in assembly.problems:
            if problem.kind == "timeout":  # may work next time: a first baseline waits for it
                key = self._placeholder_key(problem.contribution)
                if key not in contributors:
                    sources.append(_placeholder(key))
                    contributors[key] = problem.contributor
                    if problem.contribution in self.plugins:
                        owners[key] = problem.contribution
        context = SystemContext(
            sources,
            on_render_error=self._render_failed(assembly),
            on_unavailable=self._unavailable(assembly),
            withheld=self._withheld(assembly),
        )
        return dataclasses.replace(assembly, context=context, contributors=contributors, owners=owners)

    def _placeholder_key(self, name: str) -> str:
        """A key standing for the sources a plugin could not list in time (``acme/acme``)."""
        info = self.plugins.get(name)
        slug = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-_.") or "plugin"
        return f"{(info.namespace if info is not None else None) or slug}/{slug}"

    def _withheld(self, assembly: Assembly) -> list[str]:
        prefixes: list[str] = []
        for problem in assembly.problems:
            if problem.kind == "duplicate-key":
                continue  # the key is someone else's; this contribution's own keys are all it lost
            info = self.plugins.get(problem.contribution)
            namespace = info.namespace if info is not None else None
            prefix = f"{namespace}/" if namespace else ""
            if prefix not in prefixes:
                prefixes.append(prefix)
        return prefixes

    def config_problem(self, location: Location) -> str | None:
        """Why the Location's ``.nia/project.toml`` cannot be used now (one line), or ``None``."""
        path = location.nia_dir / "project.toml"
        try:
            data = project_tables(location.root)
        except NiaError as exc:
            return str(exc)
        plugins = data.get("plugins", {})
        if not isinstance(plugins, dict):
            return f"{path}: [plugins] must be a table"
        disabled = plugins.get("disabled", [])
        if not isinstance(disabled, list) or not all(isinstance(n, str) for n in disabled):
            return f"{path}: plugins.disabled must be a list of plugin names"
        self._warned.clear()  # fixed: say it again if it breaks again
        return None

    def already_reported(self, message: str) -> None:
        """The caller told the user about this config problem itself: the host will not repeat it."""
        self._warned.add(message)

    def _warn_once(self, message: str) -> None:
        if message in self._warned:
            return
        self._warned.add(message)
        log.warning("%s; the context stays as it was until the file is fixed", message)

    def _plugin_of(self, assembly: Assembly, key: str) -> str | None:
        """The plugin whose contribution produced source ``key``, if a plugin did."""
        name = assembly.owners.get(key)
        return name if name in self.plugins else None

    def _render_failed(self, assembly: Assembly) -> Callable[[RenderError], None]:
        """A renderer of a plugin's source failed: the engine sets the source aside; name the plugin."""

        def handle(error: RenderError) -> None:
            name = self._plugin_of(assembly, error.key)
            message = f"plugin {name!r}: {error}" if name else str(error)
            if name is not None:
                with self._lock:
                    self.plugins[name].error = str(error)
            if self.strict:
                raise PluginError(message)
            log.warning("%s (left out until it renders)", message)

        return handle

    def _unavailable(self, assembly: Assembly) -> Callable[[Observation], None]:
        """A loader raised, timed out or returned too much: one warning naming the plugin (``strict`` raises)."""

        def handle(obs: Observation) -> None:
            name = self._plugin_of(assembly, obs.key)
            error = f"context source {obs.key!r}: {obs.reason}"
            if name is None:
                log.warning("%s; counted unavailable", error)
                return
            with self._lock:
                self.plugins[name].error = error
            if self.strict:
                raise PluginError(f"plugin {name!r}: {error}")
            log.warning("plugin %r: %s; counted unavailable", name, error)

        return handle

    def report_observations(self, assembly: Assembly, observations: Iterable[Observation]) -> list[str]:
        """Mark the plugin behind each source that failed as broken (``strict`` raises).

        The engine counts such a source unavailable and carries on; this names
        the plugin responsible, for ``nia plugins list`` and ``--strict``. It
        says nothing: each failure was reported once as it was observed or
        rendered.
        """
        messages = []
        with self._lock:
            for obs in observations:
                name = self._plugin_of(assembly, obs.key)
                if obs.status not in ("timeout", "error") or name is None:
                    continue
                error = f"context source {obs.key!r}: {obs.reason}"
                self.plugins[name].error = error  # the warning was said as the value was observed
                messages.append(f"plugin {name!r}: {error}")
        if self.strict and messages:
            raise PluginError("; ".join(messages))
        return messages

    def plugin_config(self, name: str, location: Location) -> dict[str, Any]:
        """The ``[plugins.NAME]`` table of the Location's ``.nia/project.toml``."""
        plugins = project_tables(location.root).get("plugins", {})
        table = plugins.get(name, {}) if isinstance(plugins, dict) else {}
        return dict(table) if isinstance(table, dict) else {}

    def _producer(self, name: str) -> Any:
        def produce(location: Location) -> Any:
            answers, problems = self.call_each(
                "nia_context_sources", {"location": location}, location=location, plugin=name, skip_broken=False
            )
            if problems and problems[0].error is not None:
                raise problems[0].error  # the registry records it against this plugin's sources
            sources: list[Any] = []
            for _, result in answers:
                if result is None:
                    continue
                if not isinstance(result, list | tuple):
                    return result  # the registry reports the bad return
                sources.extend(result)
            return sources

        return produce

    def call_each(
        self,
        hook: str,
        arguments: dict[str, Any],
        *,
        location: Location | None = None,
        skip_broken: bool = True,
        every: bool = False,
        plugin: str | None = None,
        per_plugin: Callable[[str], dict[str, Any]] | None = None,
    ) -> tuple[list[tuple[str, Any]], list[HookProblem]]:
        """Call every implementation of ``hook`` on its own, in pluggy's order.

        The one way nia calls plugin hooks: each implementation gets the
        arguments it names (``config``: its ``[plugins.NAME]`` table at
        ``location``; ``per_plugin(name)``: arguments of its own); one that
        raises becomes a :class:`HookProblem` and the others still run. The
        order is the one ``pm.hook.NAME(...)`` would call them in: ``tryfirst``
        implementations, then plain ones, then ``trylast`` ones, the most
        recently registered first within each group. A ``firstresult`` hook
        stops at the first answer that is not ``None``. Returns ``(plugin,
        result)`` of each that answered, in call order, and the problems; the
        caller decides what a problem means (broken plugin, strict error).
        Plugins already broken are skipped unless ``skip_broken`` is false;
        ``every`` asks a ``firstresult`` hook's every implementation (a check);
        ``plugin`` calls only that plugin's implementation.
        """
        caller = getattr(self.pm.hook, hook)
        first_result = bool(caller.spec is not None and caller.spec.opts.get("firstresult"))
        answers: list[tuple[str, Any]] = []
        problems: list[HookProblem] = []
        for impl in reversed(caller.get_hookimpls()):  # pluggy calls its list from the end (see _add_hookimpl)
            name = impl.plugin_name
            if plugin is not None and name != plugin:
                continue
            info = self.plugins.get(name)
            if skip_broken and info is not None and info.error:
                continue
            given = dict(arguments)
            if per_plugin is not None:
                given.update(per_plugin(name))
            if "config" in impl.argnames and location is not None:
                given["config"] = self.plugin_config(name, location)
            try:
                with PLUGIN_CODE:  # its prints go to stderr
                    result = impl.function(**{arg: given[arg] for arg in impl.argnames})
            except BaseException as exc:
                if is_user_interrupt(exc):
                    raise
                problems.append(HookProblem(name, hook, f"raised {one_line(exc, where=False)}", exc))
                continue
            answers.append((name, result))
            if first_result and result is not None and not every:
                break
        return answers, problems

    def load_order(self, names: Iterable[str]) -> list[str]:
        """``names`` in the order their plugins were loaded: where two plugins claim one name
        (a command, a provider), the one loaded first keeps it, whatever order pluggy called them in."""
        order = {name: index for index, name in enumerate(self.plugins)}
        return sorted(names, key=lambda name: order.get(name, len(order)))

    def summarize(self, messages: list[Any]) -> str | None:
        """The first plugin's ``nia_summarize`` answer; one that raises is marked broken and the next asked."""
        answers, problems = self.call_each("nia_summarize", {"messages": messages}, skip_broken=False)
        for problem in problems:
            self._mark_broken(problem.plugin, problem.message)
        for plugin, answer in answers:  # firstresult: the first answer decides; a blank one means the default
            if answer is None:
                continue
            if not isinstance(answer, str):
                self._mark_broken(plugin, f"nia_summarize returned {type(answer).__name__}, not text")
                return None
            return answer if answer.strip() else None
        return None

    def register_commands(self, cli: Any) -> None:
        """Each plugin adds its commands to a group of its own; a name two plugins add stays with the one
        loaded first (the other's command is left out, with a warning), and one plugin must not break the CLI."""
        import click

        groups: dict[str, click.Group] = {}
        _, problems = self.call_each(
            "nia_register_commands",
            {},
            skip_broken=False,
            per_plugin=lambda name: {"cli": groups.setdefault(name, click.Group(name))},
        )
        for problem in problems:
            groups.pop(problem.plugin, None)
            self._mark_broken(problem.plugin, problem.message)
        owners: dict[str, str] = {}
        for name in self.load_order(groups):
            for command_name, command in groups[name].commands.items():
                if command_name in owners:
                    log.warning("plugin %r: command %r is taken by plugin %r", name, command_name, owners[command_name])
                    continue
                owners[command_name] = name
                cli.add_command(command, command_name)

    def _mark_broken(self, name: str, error: str) -> None:
        info = self.plugins.get(name)
        if info is not None:
            info.error = error
        if self.strict:
            raise PluginError(f"plugin {name!r}: {error}")
        log.warning("plugin %r: %s", name, error)

    def infos(self, *, include_builtins: bool = True) -> list[PluginInfo]:
        with self._lock:
            items = sorted(self.plugins.values(), key=lambda i: (i.origin != "built-in", i.name))
        return [i for i in items if include_builtins or i.origin != "built-in"]

    def names(self, origin: Origin | None = None) -> Iterable[str]:
        return [n for n, i in self.plugins.items() if origin is None or i.origin == origin]
