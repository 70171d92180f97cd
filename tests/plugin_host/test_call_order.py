"""nia calls hook implementations in exactly the order pluggy's own ``pm.hook.NAME(...)`` calls them."""

from __future__ import annotations

import types

import click
import pluggy
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from nia_core import hookimpl, hookspecs
from nia_core.plugin_host import PluginHost, PluginInfo
from nia_core.project import locate

KINDS = ("plain", "tryfirst", "trylast")


def _plugins(kinds: list[str], calls: list[str]) -> list[tuple[str, types.ModuleType]]:
    """One module per kind, each implementing three hooks that note their plugin's name when called."""
    made = []
    for index, kind in enumerate(kinds):
        name = f"p{index}-{kind}"
        module = types.ModuleType(name)
        marker = hookimpl(**({kind: True} if kind != "plain" else {}))

        def note(name: str = name) -> None:
            calls.append(name)

        module.nia_summarize = marker(lambda messages, note=note: note())  # firstresult: each answers None
        module.nia_providers = marker(lambda location, note=note: note())
        module.nia_register_commands = marker(lambda cli, note=note: note())
        made.append((name, module))
    return made


def _orders(kinds: list[str], tmp_path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``(nia's, pluggy's)``: for each hook, the plugins in the order they were called."""
    location = locate(tmp_path)
    ours: dict[str, list[str]] = {}
    theirs: dict[str, list[str]] = {}
    calls: list[str] = []
    host = PluginHost()
    for name, module in _plugins(kinds, calls):
        assert host.register(module, PluginInfo(name, "local file")).error is None
    for hook, arguments in [
        ("nia_summarize", {"messages": []}),
        ("nia_providers", {"location": location}),
        ("nia_register_commands", {"cli": click.Group()}),
    ]:
        calls.clear()
        host.call_each(hook, arguments, location=location)
        ours[hook] = list(calls)
    plain = pluggy.PluginManager("nia")
    plain.add_hookspecs(hookspecs)
    for name, module in _plugins(kinds, calls):
        plain.register(module, name=name)
    calls.clear()
    plain.hook.nia_summarize(messages=[])
    theirs["nia_summarize"] = list(calls)
    calls.clear()
    plain.hook.nia_providers(location=location, config={})
    theirs["nia_providers"] = list(calls)
    calls.clear()
    plain.hook.nia_register_commands(cli=click.Group())
    theirs["nia_register_commands"] = list(calls)
    return ours, theirs


@pytest.mark.parametrize(
    "kinds",
    [
        ["tryfirst", "plain", "plain", "trylast"],  # the issue's example: first, b, a, last
        ["trylast", "plain", "tryfirst", "plain", "tryfirst", "trylast"],
        ["plain", "plain", "plain"],
        ["trylast", "trylast", "tryfirst", "tryfirst"],
    ],
)
def test_nia_calls_each_hook_in_pluggys_order(kinds, tmp_path):
    ours, theirs = _orders(kinds, tmp_path)
    assert ours == theirs
    assert len(ours["nia_providers"]) == len(kinds)


def test_the_issue_example_runs_first_then_b_then_a_then_last(tmp_path):
    ours, _ = _orders(["tryfirst", "plain", "plain", "trylast"], tmp_path)
    assert ours["nia_providers"] == ["p0-tryfirst", "p2-plain", "p1-plain", "p3-trylast"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(KINDS), min_size=1, max_size=7))
def test_any_mix_of_tryfirst_trylast_and_plain_is_called_as_pluggy_calls_it(kinds):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        ours, theirs = _orders(kinds, Path(folder))
    assert ours == theirs


def test_a_firstresult_hook_stops_at_the_first_answer_in_pluggys_order(tmp_path):
    host = PluginHost()
    plain = pluggy.PluginManager("nia")
    plain.add_hookspecs(hookspecs)
    for name, kind in [("a", "trylast"), ("b", "plain"), ("c", "plain"), ("d", "tryfirst")]:
        module = types.ModuleType(name)
        module.nia_summarize = hookimpl(**({kind: True} if kind != "plain" else {}))(lambda messages, n=name: n)
        host.register(module, PluginInfo(name, "local file"))
        plain.register(module, name=name)
    assert host.summarize([]) == plain.hook.nia_summarize(messages=[]) == "d"


def _commands_plugin(name: str, kind: str, text: str) -> types.ModuleType:
    module = types.ModuleType(name)

    def register(cli):
        @cli.command("hello")
        def hello():
            click.echo(text)

    module.nia_register_commands = hookimpl(**({kind: True} if kind != "plain" else {}))(register)
    return module


@pytest.mark.parametrize("kind", KINDS)
def test_a_command_name_two_plugins_add_stays_with_the_plugin_loaded_first(kind, caplog):
    host = PluginHost()
    host.register(_commands_plugin("alpha", "plain", "from alpha"), PluginInfo("alpha", "local file"))
    host.register(_commands_plugin("beta", kind, "from beta"), PluginInfo("beta", "local file"))
    cli = click.Group()
    host.register_commands(cli)
    result = CliRunner().invoke(cli, ["hello"])
    assert result.output == "from alpha\n"
    assert "plugin 'beta': command 'hello' is taken by plugin 'alpha'" in caplog.text
