"""The providers a session can use at one Location: built-ins, configured, and plugins'.

:mod:`nia_core.providers.builtin` resolves names process-wide (built-ins read
their URL and key from the environment). :func:`providers_at` adds what a
project says: the ``[providers.NAME]`` tables of its ``.nia/project.toml``
configure the HTTP built-ins, and plugins add providers through the
``nia_providers`` hook. The result is a callable ``model -> Provider``, the
shape the session runner takes.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nia_core.deadline import Late, PluginRaised, call
from nia_core.errors import NiaError, UsageError
from nia_core.model import Provider, split_model
from nia_core.project.paths import shown_path
from nia_core.project.toml import ConfigError
from nia_core.providers import builtin
from nia_core.providers.lowering import ProviderConfigError
from nia_core.providers.remote import RemoteProvider
from nia_core.providers.settings import providers_table

if TYPE_CHECKING:
    from nia_core.context import Location
    from nia_core.plugin_host import PluginHost

log = logging.getLogger("nia.providers")

CONFIGURABLE: dict[str, type[RemoteProvider]] = {
    name: cls for name, cls in builtin.BUILTIN.items() if isinstance(cls, type) and issubclass(cls, RemoteProvider)
}
"""The built-ins a project configures with ``[providers.NAME]``: the HTTP ones."""
NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


class ProviderLookup:
    """``lookup(model)`` -> the provider serving ``PROVIDER/MODEL`` here.

    Configured providers are built on first use, so a bad setting of one
    provider (``OPENAI_BASE_URL=ftp://…``) only fails the sessions that use it.
    """

    def __init__(
        self,
        factories: Mapping[str, Callable[[], Provider]] | None = None,
        problems: tuple[str, ...] = (),
        owners: Mapping[str, str] | None = None,
    ) -> None:
        self._factories = dict(factories or {})
        self._built: dict[str, Provider] = {}
        self.problems = problems
        """Plugins' providers left out, and why (also logged as warnings)."""
        self.owners = dict(owners or {})
        """Provider name -> the plugin that contributed it (``nia models`` says where a provider comes from)."""

    def names(self) -> list[str]:
        return sorted({*self._factories, *builtin.provider_names()})

    def check(self, model: str) -> str:
        """``model`` when its provider is known and its settings are valid, else a clear error."""
        self(model)
        return model

    def __call__(self, model: str) -> Provider:
        name, _ = split_model(model)
        if name in self._built:
            return self._built[name]
        factory = self._factories.get(name)
        if factory is None:
            if name not in builtin.provider_names():
                notes = "".join(f"; {p}" for p in self.problems)
                known = ", ".join(self.names())
                raise UsageError(f"unknown provider {name!r} in model {model!r} (known providers: {known}){notes}")
            return builtin.get_provider(model)
        provider = self._built[name] = factory()
        return provider


def providers_at(location: Location, host: PluginHost | None = None) -> ProviderLookup:
    """The lookup for sessions at ``location``: project config, then plugins (when ``host`` is given)."""
    path = location.nia_dir / "project.toml"
    tables, unreadable = _settings(path)
    for name in tables:
        if name not in CONFIGURABLE:
            known = ", ".join(sorted(CONFIGURABLE))
            raise ProviderConfigError(
                f"{shown_path(path)}: [providers.{name}]: not a configurable provider (known: {known}); "
                "a plugin's provider reads the plugin's own [plugins.NAME] table"
            )
    factories: dict[str, Callable[[], Provider]] = {
        # Built per lookup, so the environment is read now, not when the process first asked.
        name: functools.partial(cls.from_config, tables.get(name, {}), where=shown_path(path))
        for name, cls in CONFIGURABLE.items()
    }
    if unreadable is not None:  # only the sessions that need the settings fail, when they are built
        factories.update({name: functools.partial(_fail, unreadable) for name in CONFIGURABLE})
    found: list[tuple[str, str]] = []
    owners: dict[str, str] = {}
    if host is not None:
        for name, provider, plugin in _plugin_providers(host, location, found):
            if name in builtin.BUILTIN:
                found.append((plugin, f"provider name {name!r} is taken by a built-in provider"))
            elif name in owners:
                found.append((plugin, f"provider name {name!r} is taken by plugin {owners[name]!r}"))
            else:
                owners[name] = plugin
                factories[name] = functools.partial(_same, provider)
        for plugin, text in found:  # so `nia plugins list` shows the plugin as broken, with the reason
            info = host.plugins.get(plugin)
            if info is not None and info.error is None:
                info.error = text
    problems = [f"plugin {plugin!r}: {text}" for plugin, text in found]
    for problem in problems:
        log.warning("%s", problem)
    if problems and host is not None and host.strict:
        raise ProviderConfigError("; ".join(problems))
    return ProviderLookup(factories, tuple(problems), owners)


def check_plugin_providers(location: Location, host: PluginHost) -> None:
    """Ask every ``nia_providers`` once, for ``nia plugins list``: each plugin that misbehaved is marked broken."""
    try:
        providers_at(location, host)
    except ProviderConfigError:
        if host.strict:
            raise  # otherwise a bad [providers] table is the session commands' to report, not a plugin's problem


_last_good: dict[Path, dict[str, dict[str, Any]]] = {}


def _settings(path: Path) -> tuple[dict[str, dict[str, Any]], NiaError | None]:
    """The ``[providers]`` tables, or the last ones read in this process while the file does not load.

    A project.toml broken mid-session is unavailable configuration, like any
    other context: the settings last read stay in force (a long-lived ``nia
    dev``, ``nia mcp`` or embedding runtime), and with none read yet only the
    HTTP providers, which need them, fail; ``echo`` and plugins' providers work.
    """
    try:
        tables = providers_table(path)
    except (ConfigError, ProviderConfigError) as exc:
        last = _last_good.get(path)
        if last is not None:
            log.warning("%s; the [providers] settings read before stay in force", exc)
            return last, None
        return {}, exc
    _last_good[path] = tables
    return tables, None


def _fail(error: NiaError) -> Provider:
    raise error


def _same(provider: Provider) -> Provider:
    return provider


def _plugin_providers(
    host: PluginHost, location: Location, problems: list[tuple[str, str]]
) -> list[tuple[str, Provider, str]]:
    """``(name, provider, plugin)`` for each plugin's provider; ``problems`` gets ``(plugin, what it did)`` for
    each one left out."""
    found: list[tuple[str, Provider, str]] = []
    answers, raised = host.call_each("nia_providers", {"location": location}, location=location, skip_broken=False)
    problems.extend((problem.plugin, problem.message) for problem in raised)  # one plugin must not break every session
    by_plugin: dict[str, list[Any]] = {}
    for name, answer in answers:
        by_plugin.setdefault(name, []).append(answer)
    seconds = host.hook_timeout("nia_providers")
    for plugin in host.load_order(by_plugin):  # a provider name two plugins use stays with the one loaded first
        for result in by_plugin[plugin]:
            try:  # isinstance() against the protocol and .name run the provider's own code
                checked, said = call(functools.partial(_checked, result), seconds)
            except Late as exc:
                problems.append((plugin, f"nia_providers' providers could not be checked: they {exc}"))
                continue
            except PluginRaised as exc:
                problems.append((plugin, f"nia_providers' providers could not be checked: {exc.text}"))
                continue
            found.extend((name, provider, plugin) for name, provider in checked)
            problems.extend((plugin, text) for text in said)
    return found


def _checked(result: Any) -> tuple[list[tuple[str, Provider]], list[str]]:
    """``(name, provider)`` of each provider in one ``nia_providers`` answer, and what is wrong with the rest."""
    if result is None:
        return [], []
    if not isinstance(result, list | tuple):
        return [], [f"nia_providers returned {type(result).__name__}, not a list"]
    checked: list[tuple[str, Provider]] = []
    said: list[str] = []
    for provider in result:
        name = getattr(provider, "name", None)
        if not isinstance(provider, Provider) or not isinstance(name, str):
            said.append(f"nia_providers returned a {type(provider).__name__}, not a provider (name, lower, send)")
            continue
        name = str.__str__(name)  # a str subclass's own methods would run the plugin's code again
        if not NAME.fullmatch(name):
            said.append(f"provider name {name!r} must be lowercase letters, digits and '-'")
            continue
        checked.append((name, provider))
    return checked, said
