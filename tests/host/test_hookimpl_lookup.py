"""The host finds a module plugin's hook implementations exactly where pluggy would, only faster."""

from __future__ import annotations

import types

import pluggy
import pytest

import nia_plugins.git
import nia_plugins.instructions
from nia_core import hookimpl
from nia_core.host.host import PluginHost


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
    ours = PluginHost().pm
    theirs = pluggy.PluginManager("nia")
    assert type(ours) is not pluggy.PluginManager
    names = [*dir(plugin), "missing", "__getattr__", "__dict__", "__class__"]
    for name in names:
        assert ours.parse_hookimpl_opts(plugin, name) == theirs.parse_hookimpl_opts(plugin, name), name


def test_a_module_plugin_registers_the_same_hooks_as_with_pluggy_alone():
    module = _module()
    found = []
    for manager in (PluginHost().pm, pluggy.PluginManager("nia")):
        manager.register(module, name="acme")
        callers = manager.get_hookcallers(module) or []
        found.append(sorted((c.name, i.function.__name__) for c in callers for i in c.get_hookimpls()))
    assert found[0] == found[1]
    hooks = {name for name, _ in found[0]}
    assert "nia_context_sources" in hooks and "nia_register_commands" in hooks  # renamed, marked
    assert ("nia_context_sources", "carrier") in found[0]  # marked through its __func__, as pluggy does
    assert "nia_summarize" not in hooks  # unmarked
