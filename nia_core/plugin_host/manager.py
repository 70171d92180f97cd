"""The plugin host: a pluggy PluginManager wired to the System Context Registry.

Each registered plugin gets its own registry scope; unregistering it closes
that scope, so its sources leave (with their removal text) at the next
boundary. A plugin whose hook raises, hangs or returns nonsense is reported by
name and left out; the host and the other plugins keep running.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pluggy

from nia_core import hookspecs
from nia_core.context import Assembly, Location, LocationContext, Observation, SystemContext, SystemContextRegistry
from nia_core.context.source import LOADER_TIMEOUT, UNAVAILABLE, ContextSource
from nia_core.errors import NiaError, RenderError, plugin_frame, where_raised
from nia_core.plugin_host.calls import HookCall, PerPlugin, guarded
from nia_core.plugin_host.implementations import HookNamespace, Implementation, implementations
from nia_core.plugin_host.importing import import_deadline
from nia_core.plugin_host.plugin import HookProblem, Origin, PluginInfo
from nia_core.project.config import load_project_config, project_tables

log = logging.getLogger("nia.host")


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


HOOK_TIMEOUTS: Mapping[str, float] = {"nia_summarize": 30.0}
"""Seconds a hook implementation may take where the host's timeout (2 s by default) is too short:
a summarizer may ask a model."""

WRAPPABLE_HOOKS: frozenset[str] = frozenset()
"""Hooks on which ``@hookimpl(wrapper=True)`` / ``hookwrapper=True`` works. None: nia calls each
implementation of every hook on its own (so one plugin's failure stays its own), which leaves a
wrapper nothing to wrap; it is refused at registration instead of failing at the first call."""


def _wrapper_problem(found: list[Implementation]) -> str | None:
    """``@hookimpl(wrapper=True)`` on a nia hook, said at registration: pluggy would accept it."""
    for impl in found:
        if not impl.attribute.startswith("nia_") or impl.attribute in WRAPPABLE_HOOKS:
            continue
        if impl.opts.get("wrapper") or impl.opts.get("hookwrapper"):
            kind = "wrapper=True" if impl.opts.get("wrapper") else "hookwrapper=True"
            return (
                f"invalid hook implementation: {impl.attribute}: @hookimpl({kind}) is not supported on nia hooks "
                "(nia calls each implementation on its own); use a plain @hookimpl"
            )
    return None


class PluginHost:
    """Registers plugins with pluggy and their context producers with the registry."""

    def __init__(
        self,
        *,
        strict: bool = False,
        timeout: float = LOADER_TIMEOUT,
        import_timeout: float | None = None,
        hook_timeouts: Mapping[str, float] | None = None,
    ) -> None:
        self.pm = pluggy.PluginManager("nia")
        self.pm.add_hookspecs(hookspecs)
        self.registry = SystemContextRegistry(producer_timeout=timeout)
        self.strict = strict
        self.timeout = timeout
        self.import_timeout = import_deadline() if import_timeout is None else import_timeout
        self.hook_timeouts = dict(HOOK_TIMEOUTS if hook_timeouts is None else hook_timeouts)
        """Seconds per hook implementation, by hook, where :attr:`timeout` does not apply."""
        """Seconds a plugin's import may take (``NIA_IMPORT_TIMEOUT``); see :mod:`nia_core.plugin_host.importing`."""
        self.plugins: dict[str, PluginInfo] = {}
        self.left_out: list[str] = []
        """Plugins not loaded at all (a name already taken), one message each, for ``nia plugins list``."""
        self._scopes: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._warned: set[str] = set()
        self._objects: dict[str, object] = {}
        """Each registered plugin as it was imported (pluggy holds a :class:`HookNamespace` in its place)."""
        self._implementations: dict[str, list[Implementation]] = {}
        self._callers: dict[tuple[str, str], Any] = {}
        """``(hook, plugin)`` -> the hook caller of that plugin alone (a pluggy subset caller), made once."""
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
        """Register ``plugin`` under ``info.name``; a pluggy validation error marks it broken.

        pluggy registers a :class:`HookNamespace` of the plugin's hook
        implementations, read statically (see
        :mod:`nia_core.plugin_host.implementations`), and replays the historic
        ``nia_location_opened`` for every Location already open into it; a
        replay that raises unregisters the plugin and marks it broken.
        """
        name = info.name
        info.raised_at = None
        with self._lock:
            if self.pm.has_plugin(name):
                self.unregister(name)
            found = implementations(plugin)
            wrapper = _wrapper_problem(found)
            if wrapper is not None:
                info.error = wrapper
                return self.record(info)
            namespace = HookNamespace({impl.attribute: guarded(name, impl.function, impl.opts) for impl in found})
            self._callers.clear()
            try:
                with HookCall("nia_location_opened", seconds=self.hook_timeout("nia_location_opened")) as replay:
                    self.pm.register(namespace, name=name)
            except pluggy.PluginValidationError as exc:
                if self.pm.has_plugin(name):  # a pluggy that validates as it goes leaves a part registered
                    self.pm.unregister(name=name)
                info.error = f"invalid hook implementation: {_one_line_validation(exc)}"
                return self.record(info)
            if replay.problems:
                self.pm.unregister(name=name)
                problem = replay.problems[0]
                info.raised_at = plugin_frame(problem.error) if problem.error is not None else None
                info.error = f"{problem.message}{where_raised(problem.error)}"
                return self.record(info)
            self._objects[name] = plugin
            self._implementations[name] = found
            info.hooks = sorted(caller.name for caller in (self.pm.get_hookcallers(namespace) or []))
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
                self._callers.clear()
            self._objects.pop(name, None)
            self._implementations.pop(name, None)
            scope = self._scopes.pop(name, None)
            if scope is not None:
                scope.close()

    def plugin(self, name: str) -> object | None:
        """The registered plugin ``name`` as it was imported (a module, a class, an object), or ``None``."""
        return self._objects.get(name)

    def implementations(self, name: str) -> list[Implementation]:
        """The hook implementations of registered plugin ``name``, as pluggy found them."""
        return list(self._implementations.get(name, ()))

    def forget(self, name: str) -> None:
        self.unregister(name)
        with self._lock:
            self.plugins.pop(name, None)

    # -- Locations and context --------------------------------------------------------

    def open(self, location: Location) -> LocationContext:
        """Open ``location`` and tell every plugin (``nia_location_opened``); one that raises fails alone.

        It is unregistered and marked broken (``strict`` raises) and the others
        still run. The hook is historic: pluggy keeps the call and replays it
        into every plugin registered later (see :meth:`register`).
        """
        view = self.registry.open(location)
        _, problems = self.call_each("nia_location_opened", {"location": location, "context": view}, skip_broken=False)
        for problem in problems:
            self.unregister(problem.plugin)
            self._mark_broken(problem.plugin, problem.message, problem.error)
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
        """Why the Location's ``.nia/project.toml`` cannot be used now (one line), or ``None``.

        Every kind of error is the same problem, reported the same way: the
        file does not parse, or a table nia reads (``[project]``, ``[commit]``,
        ``[[services]]``, ``[logs]``, ``[session]``, ``[plugins]``) has an
        unknown key or a bad value (``[plugins]`` a table, ``disabled`` a list
        of names); the line names file, line and key. One read of the file.
        """
        try:
            load_project_config(location.root)
        except NiaError as exc:
            return str(exc)
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
            if error.__cause__ is not None:  # --debug: where, in the renderer
                log.debug("%s: traceback", message, exc_info=error.__cause__)

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
            answers, problems = self.call_each(  # on the registry's worker, under its timeout
                "nia_context_sources",
                {"location": location},
                location=location,
                plugin=name,
                skip_broken=False,
                bounded=True,
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
        bounded: bool = False,
    ) -> tuple[list[tuple[str, Any]], list[HookProblem]]:
        """Call ``hook`` through pluggy, every implementation on its own (see :mod:`nia_core.plugin_host.calls`).

        The one way nia calls plugin hooks. The order is pluggy's:
        ``tryfirst`` implementations, then plain ones, then ``trylast`` ones,
        the most recently registered first within each group; a
        ``firstresult`` hook stops at the first answer that is not ``None``.
        Each implementation gets the arguments it names: ``config`` is its own
        ``[plugins.NAME]`` table at ``location``, and a :class:`PerPlugin`
        argument its own value. One that raises becomes a :class:`HookProblem`
        and the others still run. Returns ``(plugin, result)`` of each that
        answered, in call order, and the problems; the caller decides what a
        problem means (broken plugin, strict error). Plugins already broken
        are skipped unless ``skip_broken`` is false; ``every`` asks a
        ``firstresult`` hook's every implementation (a check); ``plugin``
        calls only that plugin's implementation. Each implementation runs as
        plugin code under :meth:`hook_timeout` (past it, it is a problem like
        one that raised), unless the caller is ``bounded`` by a deadline of its
        own (a registry producer, on a worker). A historic hook
        (``nia_location_opened``) is called with ``call_historic``: pluggy
        keeps the call and replays it into plugins registered later.
        """
        caller = getattr(self.pm.hook, hook)
        kwargs = dict(arguments)
        if caller.spec is not None and "config" in caller.spec.argnames and "config" not in kwargs:
            at = location
            kwargs["config"] = PerPlugin(lambda name: self.plugin_config(name, at) if at is not None else {})
        skip = self._is_broken if skip_broken else None
        seconds = None if bounded else self.hook_timeout(hook)
        with HookCall(hook, skip=skip, only=plugin, every=every, seconds=seconds) as call:
            if plugin is not None:
                self._caller_of(hook, plugin)(**kwargs)
            elif caller.is_historic():
                caller.call_historic(kwargs=kwargs)
            else:
                caller(**kwargs)
        return call.answers, call.problems

    def hook_timeout(self, hook: str) -> float:
        """Seconds one implementation of ``hook`` may take: the host's timeout, or :data:`HOOK_TIMEOUTS`'."""
        return self.hook_timeouts.get(hook, self.timeout)

    def _is_broken(self, name: str) -> bool:
        info = self.plugins.get(name)
        return info is not None and info.error is not None

    def _caller_of(self, hook: str, name: str) -> Any:
        """pluggy's caller of ``hook`` for plugin ``name`` alone: at every boundary, each plugin's own
        ``nia_context_sources`` is asked on its own."""
        caller = self._callers.get((hook, name))
        if caller is None:
            with self._lock:
                others = [self.pm.get_plugin(other) for other in self._objects if other != name]
                caller = self._callers[hook, name] = self.pm.subset_hook_caller(hook, others)
        return caller

    def load_order(self, names: Iterable[str]) -> list[str]:
        """``names`` in the order their plugins were loaded: where two plugins claim one name
        (a command, a provider), the one loaded first keeps it, whatever order pluggy called them in."""
        order = {name: index for index, name in enumerate(self.plugins)}
        return sorted(names, key=lambda name: order.get(name, len(order)))

    def summarize(self, messages: list[Any]) -> str | None:
        """The first plugin's ``nia_summarize`` answer; one that raises is marked broken and the next asked."""
        answers, problems = self.call_each("nia_summarize", {"messages": messages}, skip_broken=False)
        for problem in problems:
            self._mark_broken(problem.plugin, problem.message, problem.error)
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
        own_group = PerPlugin(lambda name: groups.setdefault(name, click.Group(name)))
        _, problems = self.call_each("nia_register_commands", {"cli": own_group}, skip_broken=False)
        for problem in problems:
            groups.pop(problem.plugin, None)
            self._mark_broken(problem.plugin, problem.message, problem.error)
        owners: dict[str, str] = {}
        for name in self.load_order(groups):
            for command_name, command in groups[name].commands.items():
                if command_name in owners:
                    log.warning("plugin %r: command %r is taken by plugin %r", name, command_name, owners[command_name])
                    continue
                owners[command_name] = name
                cli.add_command(command, command_name)

    def _mark_broken(self, name: str, error: str, raised: BaseException | None = None) -> None:
        """``raised``: what the plugin's code raised, whose traceback ``--debug`` shows."""
        info = self.plugins.get(name)
        if info is not None:
            info.error = error
        if self.strict:
            raise PluginError(f"plugin {name!r}: {error}")
        log.warning("plugin %r: %s", name, error)
        if raised is not None:
            log.debug("plugin %r: traceback", name, exc_info=raised)

    def infos(self, *, include_builtins: bool = True) -> list[PluginInfo]:
        with self._lock:
            items = sorted(self.plugins.values(), key=lambda i: (i.origin != "built-in", i.name))
        return [i for i in items if include_builtins or i.origin != "built-in"]

    def names(self, origin: Origin | None = None) -> Iterable[str]:
        return [n for n, i in self.plugins.items() if origin is None or i.origin == origin]
