"""The host finds a plugin's hook implementations exactly where pluggy would, without running the plugin's code.

nia registers a namespace of the implementations, read statically, with pluggy's own ``register``;
these tests compare what that registers with what pluggy registers for the plugin itself.
"""

from __future__ import annotations

import re
import types

import pluggy
import pytest

import nia_core
import nia_plugins.git
import nia_plugins.instructions
from nia_core import hookimpl, hookspecs
from nia_core.plugin_host.discovery import register_imported
from nia_core.plugin_host.implementations import marker_opts, static_names
from nia_core.plugin_host.manager import PluginHost
from nia_core.plugin_host.plugin import PluginInfo


def _module() -> types.ModuleType:
    module = types.ModuleType("acme_lookup")

    @hookimpl(specname="nia_context_sources")
    def sources(location):
        return []

    @hookimpl
    def nia_register_commands(cli):
        return None

    def nia_summarize(messages):
        return None

    def odd():
        return None

    odd.nia_impl = "not a dict"  # type: ignore[attr-defined]

    def carrier(location):  # unmarked, but its __func__ is marked: pluggy registers it
        return []

    carrier.__func__ = sources  # type: ignore[attr-defined]

    def blank(location):  # marked with empty options: registered under its own name
        return None

    blank.nia_impl = {}  # type: ignore[attr-defined]

    class Holder:
        @staticmethod
        @hookimpl
        def nia_providers(location, config):
            return None

    def __getattr__(name: str) -> object:  # never consulted by a static look-up
        return sources

    for value in (sources, nia_register_commands, nia_summarize, odd, __getattr__):
        setattr(module, value.__name__, value)
    module.nia_providers = carrier  # type: ignore[attr-defined]
    module.nia_location_opened = blank  # type: ignore[attr-defined]
    module.static = vars(Holder)["nia_providers"]  # type: ignore[attr-defined]
    module.bound = Holder().nia_providers  # type: ignore[attr-defined]
    module.text = "nia_context_sources"  # type: ignore[attr-defined]
    module.__doc__ = "a module"
    return module


@pytest.mark.parametrize("plugin", [_module(), nia_plugins.git, nia_plugins.instructions], ids=lambda m: m.__name__)
def test_every_name_of_a_module_plugin_parses_as_pluggy_parses_it(plugin):
    theirs = pluggy.PluginManager("nia")
    names = [*dir(plugin), "missing", "__getattr__", "__dict__", "__class__"]
    for name in names:
        assert marker_opts(plugin, name) == theirs.parse_hookimpl_opts(plugin, name), name


def _registered(host: PluginHost, name: str) -> object:
    return host.pm.get_plugin(name)


def test_a_module_plugin_registers_the_same_hooks_as_with_pluggy_alone():
    module = _module()
    host, theirs = PluginHost(), pluggy.PluginManager("nia")
    host.register(module, PluginInfo("acme", "local file"))
    theirs.register(module, name="acme")
    found = [sorted(_hooks(host.pm, _registered(host, "acme"))), sorted(_hooks(theirs, module))]
    assert found[0] == found[1]
    hooks = {name for name, _, _ in found[0]}
    assert "nia_context_sources" in hooks and "nia_register_commands" in hooks  # renamed, marked
    assert ("nia_context_sources", "acme", "carrier") in found[0]  # marked through its __func__, as pluggy does
    assert "nia_summarize" not in hooks  # unmarked


class _Base:
    @hookimpl
    def nia_summarize(self, messages):
        return None


class _Plugin(_Base):
    """An object plugin: hooks from its class, its bases, its own ``__dict__`` and its slots' neighbours."""

    NIA_NAMESPACE = "acme"

    @hookimpl(specname="nia_context_sources")
    def sources(self, location):
        return []

    @staticmethod
    @hookimpl
    def nia_register_commands(cli):
        return None

    @classmethod
    @hookimpl
    def nia_providers(cls, location, config):
        return None

    @property
    def nia_location_opened(self):  # a property is never a hook, and never runs
        raise AssertionError("ran")


class _Slotted:
    __slots__ = ("nia_summarize",)

    @hookimpl
    def nia_context_sources(self, location):
        return []


def _object_plugins() -> list[object]:
    plain = _Plugin()

    @hookimpl
    def own(location, context):  # set on the instance: pluggy takes it as it is
        return None

    plain.nia_location_opened_own = own  # type: ignore[attr-defined]

    @hookimpl
    def summarize(messages):
        return None

    slotted = _Slotted()
    slotted.nia_summarize = summarize  # type: ignore[misc]
    return [plain, _Plugin, slotted, _Slotted]


NORMAL = [_module(), nia_plugins.git, nia_plugins.instructions, *_object_plugins()]


def _hooks(manager: pluggy.PluginManager, plugin: object) -> list[tuple[str, str, str]]:
    """``(hook, plugin name, function name)`` of each implementation, in pluggy's list order."""
    callers = manager.get_hookcallers(plugin) or []
    return [(c.name, i.plugin_name, i.function.__name__) for c in callers for i in c.get_hookimpls()]


def _details(manager: pluggy.PluginManager, plugin: object) -> list[tuple[str, tuple[str, ...], dict]]:
    """``(hook, argument names, options)`` of each implementation: what pluggy calls it with, and how."""
    callers = manager.get_hookcallers(plugin) or []
    return [(c.name, i.argnames, i.opts) for c in callers for i in c.get_hookimpls()]


@pytest.mark.parametrize("plugin", NORMAL, ids=lambda p: getattr(p, "__name__", type(p).__name__))
def test_the_names_nia_lists_are_those_dir_lists_for_every_ordinary_plugin(plugin):
    assert static_names(plugin) == dir(plugin)


@pytest.mark.parametrize("plugin", NORMAL, ids=lambda p: getattr(p, "__name__", type(p).__name__))
def test_every_ordinary_plugin_registers_the_same_hooks_in_the_same_order_as_with_pluggy(plugin):
    host, theirs = PluginHost(), pluggy.PluginManager("nia")
    theirs.add_hookspecs(hookspecs)
    host.register(types.ModuleType("first"), PluginInfo("first", "local file"))
    theirs.register(types.ModuleType("first"), name="first")
    assert host.register(plugin, PluginInfo("acme", "local file")).error is None
    assert theirs.register(plugin, name="acme") == "acme"
    ours = _registered(host, "acme")
    assert _hooks(host.pm, ours) == _hooks(theirs, plugin)
    assert _details(host.pm, ours) == _details(theirs, plugin)
    assert _hooks(host.pm, ours)  # each of them implements something
    assert host.plugin("acme") is plugin
    host.unregister("acme")
    assert host.pm.get_hookcallers(ours) is None and host.pm.get_name(ours) is None and host.plugin("acme") is None


def test_nia_registers_with_pluggys_own_plugin_manager_and_uses_none_of_its_private_names():
    from pathlib import Path

    assert type(PluginHost().pm) is pluggy.PluginManager
    package = Path(nia_core.__file__).parent
    private = re.compile(r"pluggy\._|\._hookimpls|_name2plugin|_static_hook_attr|_verify_hook|_hookexec")
    found = [f"{path}: {m.group()}" for path in package.rglob("*.py") for m in private.finditer(path.read_text())]
    assert found == []


def test_every_hook_call_goes_through_pluggy_so_its_monitoring_sees_it(tmp_path):
    from nia_core.project import locate

    host = PluginHost()
    host.register(_module(), PluginInfo("acme", "local file"))
    seen: list[str] = []
    undo = host.pm.add_hookcall_monitoring(lambda hook, impls, kwargs: seen.append(hook), lambda *args: None)
    try:
        host.open(locate(tmp_path))
        host.summarize([])
        host.register_commands(__import__("click").Group())
    finally:
        undo()
    assert seen == ["nia_location_opened", "nia_summarize", "nia_register_commands"]


class Ran(Exception):
    pass


def _never(*args: object) -> object:
    raise Ran(args)


def _hostile_module(kind: str) -> types.ModuleType:
    module = _module()
    dirs = {"raises": _never, "nonsense": lambda: [1, object(), None], "huge": lambda: range(10**12)}
    module.__dir__ = dirs[kind]  # type: ignore[method-assign]
    module.__getattr__ = _never  # type: ignore[attr-defined]
    vars(module)[3] = "a key that is no name"
    return module


@pytest.mark.parametrize("kind", ["raises", "nonsense", "huge"])
def test_a_module_dir_is_never_run_and_its_hooks_are_those_of_its_dict(kind):
    """What pluggy finds for the same module without its ``__dir__`` (and, then, no key that is no name)."""
    module = _hostile_module(kind)
    plain = _module()
    host, theirs = PluginHost(), pluggy.PluginManager("nia")
    assert host.register(module, PluginInfo("acme", "local file")).error is None
    theirs.register(plain, name="acme")
    assert sorted(_hooks(host.pm, _registered(host, "acme"))) == sorted(_hooks(theirs, plain))
    assert ("nia_context_sources", "acme", "sources") in _hooks(host.pm, _registered(host, "acme"))


class _Hostile(_Plugin):
    def __dir__(self):
        raise Ran("__dir__")

    def __eq__(self, other):
        raise Ran("__eq__")

    __hash__ = object.__hash__

    def __getattr__(self, name):
        raise Ran(name)


class _Meta(type):
    def __dir__(cls):
        raise Ran("__dir__")

    def __getattr__(cls, name):
        raise Ran(name)


class _HostileClass(_Plugin, metaclass=_Meta):
    pass


@pytest.mark.parametrize("kind", ["object", "class"])
def test_an_object_or_class_plugin_dir_eq_and_getattr_never_run(kind):
    plugin = _Hostile() if kind == "object" else _HostileClass
    host, theirs = PluginHost(), pluggy.PluginManager("nia")
    theirs.add_hookspecs(hookspecs)
    host.register(types.ModuleType("first"), PluginInfo("first", "local file"))
    assert host.register(plugin, PluginInfo("acme", "local file")).error is None
    theirs.register(_Plugin(), name="acme")
    ours = _registered(host, "acme")
    assert [h[0] for h in _hooks(host.pm, ours)] == [h[0] for h in _hooks(theirs, theirs.get_plugin("acme"))]
    assert host.pm.get_name(ours) == "acme" and host.plugin("acme") is plugin
    host.register(types.ModuleType("last"), PluginInfo("last", "local file"))  # compares with every plugin held
    host.unregister("acme")
    assert not host.pm.has_plugin("acme") and host.pm.has_plugin("last")


def test_the_host_registers_an_object_plugin_with_a_hostile_dir_as_it_registers_any(tmp_path):
    """Through discovery (entry points name objects too): no wrapper check, no unmarked-hook check runs ``dir``."""
    host = PluginHost()
    info = register_imported(host, PluginInfo("acme", "entry point"), lambda: _Hostile(), deadline=False)
    assert info.error is None and info.warnings == []
    assert info.hooks == ["nia_context_sources", "nia_providers", "nia_register_commands", "nia_summarize"]
    assert info.namespace == "acme"
