"""Finding plugins: entry points (one plugin per entry point), local folders, built-ins, and switching them off."""

from __future__ import annotations

import json

import pytest

from nia_core import __version__
from nia_core.plugin_host import load_host
from nia_core.project import locate

from .conftest import run


def plugin_source(namespace: str, text: str = "hi") -> str:
    return (
        "from nia_core import ContextSource, hookimpl\n"
        f"NIA_NAMESPACE = {namespace!r}\n"
        "@hookimpl\n"
        "def nia_context_sources(location):\n"
        f"    return [ContextSource(key='{namespace}/text', load=lambda: {text!r},"
        f" baseline=lambda v: '{namespace}: ' + v, removal=lambda v: '{namespace} is gone')]\n"
    )


def listed(project, *args: str) -> dict[str, dict]:
    result = run(*args, "plugins", "list", "--json", "--all", "--location", str(project))
    assert result.exit_code == 0, result.output
    return {p["name"]: p for p in json.loads(result.stdout)}


@pytest.fixture
def pack(site):
    """One distribution, three plugins: two good, one broken."""
    return site.install(
        "acme-pack",
        version="2.1",
        plugins={"acme-one": "acme_pack.one", "acme-two": "acme_pack.two:plugin", "acme-broken": "acme_pack.broken"},
        modules={
            "acme_pack/__init__.py": "",
            "acme_pack/one.py": plugin_source("acme-one"),
            "acme_pack/two.py": "from types import SimpleNamespace\n"
            + plugin_source("acme-two")
            + "plugin = SimpleNamespace(nia_context_sources=nia_context_sources, NIA_NAMESPACE=NIA_NAMESPACE)\n",
            "acme_pack/broken.py": "raise ImportError('acme-broken needs libfoo')\n",
        },
    )


def test_each_entry_point_of_a_pack_is_a_plugin_of_its_own(pack, project):
    plugins = listed(project)

    assert {n: (p["distribution"], p["version"], p["status"]) for n, p in plugins.items() if n.startswith("acme")} == {
        "acme-one": ("acme-pack", "2.1", "enabled"),
        "acme-two": ("acme-pack", "2.1", "enabled"),
        "acme-broken": ("acme-pack", "2.1", "broken"),
    }
    assert plugins["acme-two"]["source_keys"] == ["acme-two/text"]
    assert "acme-broken needs libfoo" in plugins["acme-broken"]["error"]
    shown = run("context", "show", "--location", str(project)).stdout
    assert "acme-one: hi" in shown and "acme-two: hi" in shown


def test_one_plugin_of_a_pack_switches_off_alone(pack, project):
    plugins = listed(project, "-p", "no:acme-one")

    assert plugins["acme-one"]["status"] == "disabled" and plugins["acme-one"]["disabled_by"] == "-p no:acme-one"
    assert plugins["acme-two"]["status"] == "enabled"
    shown = run("-p", "no:acme-one", "context", "show", "--location", str(project)).stdout
    assert "acme-one: hi" not in shown and "acme-two: hi" in shown


def test_plugins_list_text_names_origin_version_hooks_and_sources(pack, project):
    result = run("plugins", "list", "--location", str(project))

    assert (
        "acme-one 2.1 [entry point from acme-pack] enabled\n  hooks: nia_context_sources\n  sources: acme-one/text"
        in (result.stdout)
    )
    assert (
        "acme-broken 2.1 [entry point from acme-pack] broken\n  error: failed to import: ImportError" in result.stdout
    )
    assert "nia-date" not in result.stdout  # built-ins only with --all
    assert "nia-date 0.1.0 [built-in] enabled" in run("plugins", "list", "--all", "--location", str(project)).stdout


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        (
            "NIA_DISABLE_PLUGINS",
            "acme-one, acme-two",
            {"acme-one": "NIA_DISABLE_PLUGINS", "acme-two": "NIA_DISABLE_PLUGINS"},
        ),
        ("NIA_DISABLE_PLUGINS", "*", {"acme-one": "NIA_DISABLE_PLUGINS=*", "acme-two": "NIA_DISABLE_PLUGINS=*"}),
        ("NIA_LOAD_PLUGINS", "acme-two", {"acme-one": "not in NIA_LOAD_PLUGINS"}),
        ("NIA_DISABLE_PLUGINS", "nia-date", {"nia-date": "NIA_DISABLE_PLUGINS"}),
    ],
)
def test_environment_switches(pack, project, monkeypatch, variable, value, expected):
    monkeypatch.setenv(variable, value)

    plugins = listed(project)

    disabled = {n: p["disabled_by"] for n, p in plugins.items() if p["status"] == "disabled"}
    assert {n: why for n, why in disabled.items() if n != "acme-broken"} == expected
    if value == "*":
        assert plugins["nia-date"]["status"] == "enabled"  # '*' means every third-party plugin


def test_builtins_switch_off_like_any_plugin(project):
    shown = run("-p", "no:nia-date", "context", "show", "--location", str(project)).stdout
    assert "Environment:" in shown and "Today's date" not in shown
    (project / ".nia" / "project.toml").write_text('[plugins]\ndisabled = ["nia-environment"]\n')
    shown = run("context", "show", "--location", str(project)).stdout
    assert "Environment:" not in shown and "Today's date" in shown


def test_local_plugins_need_no_packaging(project, tmp_path):
    (project / ".nia" / "plugins").mkdir()
    (project / ".nia" / "plugins" / "notes.py").write_text(plugin_source("notes", "from .nia/plugins"))
    extra = tmp_path / "more-plugins" / "tracker"
    extra.mkdir(parents=True)
    (extra / "__init__.py").write_text(plugin_source("tracker", "from --plugins-dir"))

    result = run("--plugins-dir", str(extra.parent), "plugins", "list", "--json", "--location", str(project))

    plugins = {p["name"]: p for p in json.loads(result.stdout)}
    assert plugins["notes"]["origin"] == "local file" and plugins["notes"]["source_keys"] == ["notes/text"]
    assert plugins["tracker"]["path"] == str(extra)
    shown = run("--plugins-dir", str(extra.parent), "context", "show", "--location", str(project)).stdout
    assert "notes: from .nia/plugins" in shown and "tracker: from --plugins-dir" in shown


def test_an_entry_point_name_taken_twice_loads_once(site, project):
    site.plugin("same", plugin_source("first"), dist="first-dist")
    site.install("second-dist", plugins={"same": "second_mod"}, modules={"second_mod.py": plugin_source("second")})

    host = load_host(locate(project))

    assert host.plugins["same"].error is None and host.plugins["same"].distribution == "first-dist"
    assert host.assemble(host.open(locate(project))).context.keys[-1] == "first/text"
    result = run("context", "show", "--location", str(project))
    assert result.stderr == (
        "Warning: plugin 'same' (entry point from second-dist) left out: "
        "the name is taken by the entry point plugin from first-dist\n"
    )
    assert run("--strict", "context", "show", "--location", str(project)).exit_code == 1
    listed = run("plugins", "list", "--location", str(project))
    assert listed.stdout.count("same 1.0") == 1
    assert listed.stderr == result.stderr  # the list does not show it, so it says why


def test_a_local_plugin_named_like_a_builtin_is_left_out_with_a_warning_in_plugins_list(project):
    plugins = project / ".nia" / "plugins"
    plugins.mkdir()
    (plugins / "nia-date.py").write_text("")

    listed = run("plugins", "list", "--all", "--location", str(project))

    assert f"nia-date {__version__} [built-in] enabled" in listed.stdout and "local file" not in listed.stdout
    assert listed.stderr == (
        f"Warning: plugin 'nia-date' (local file from {plugins / 'nia-date.py'}) left out: "
        "the name is taken by the built-in plugin from nia_plugins.date\n"
    )


def test_a_namespace_that_is_not_a_string_is_an_error(site, project):
    site.plugin("odd", "NIA_NAMESPACE = 3\n")

    assert load_host(locate(project)).plugins["odd"].error == "NIA_NAMESPACE must be a string, not int"
