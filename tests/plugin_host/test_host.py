import types

from nia_core import ContextSource, hookimpl
from nia_core.context import Unchanged, Updated, initialize, reconcile
from nia_core.plugin_host import PluginHost, PluginInfo, load_host
from nia_core.project import locate


def plugin_module(name, **hooks):
    module = types.ModuleType(name)
    for hook_name, function in hooks.items():
        setattr(module, hook_name, hookimpl(function))
    return module


def const_source(key, value):
    return ContextSource(
        key=key,
        load=lambda: value,
        baseline=lambda v: f"{key}: {v}",
        removal=lambda v: f"{key} no longer applies",
    )


def test_location_opened_is_historic_for_plugins_registered_later(tmp_path):
    host = PluginHost()
    location = locate(tmp_path)
    host.open(location)
    seen = []
    late = plugin_module("late", nia_location_opened=lambda location, context: seen.append(location))
    host.register(late, PluginInfo("late", "local file"))
    assert seen == [location]


def test_location_local_contribution_from_location_opened(tmp_path):
    host = PluginHost()

    def opened(location, context):
        context.register("per-location", lambda loc: [const_source("acme/here", str(loc.path))])

    host.register(plugin_module("acme", nia_location_opened=opened), PluginInfo("acme", "local file"))
    view = host.open(locate(tmp_path))
    assert initialize(host.assemble(view).context).baseline == f"acme/here: {tmp_path.resolve()}"


def test_unregistering_a_plugin_emits_its_removal_text_at_the_next_reconcile(tmp_path):
    host = PluginHost()
    host.register(
        plugin_module("acme", nia_context_sources=lambda: [const_source("acme/a", 1)]), PluginInfo("acme", "local file")
    )
    view = host.open(locate(tmp_path))
    generation = initialize(host.assemble(view).context)
    assert isinstance(reconcile(host.assemble(view).context, generation.snapshot), Unchanged)
    host.unregister("acme")
    result = reconcile(host.assemble(view).context, generation.snapshot)
    assert isinstance(result, Updated) and result.text == "acme/a no longer applies"


def test_a_plugin_registered_later_is_replayed_into_an_open_location(tmp_path):
    host = PluginHost()
    view = host.open(locate(tmp_path))
    generation = initialize(host.assemble(view).context)
    host.register(
        plugin_module("late", nia_context_sources=lambda: [const_source("acme/late", "x")]),
        PluginInfo("late", "local file"),
    )
    result = reconcile(host.assemble(view).context, generation.snapshot)
    assert isinstance(result, Updated) and result.text == "acme/late: x"


def test_builtins_keep_declaration_order_and_third_party_sorts_after(tmp_path):
    plugins = tmp_path / ".nia" / "plugins"
    plugins.mkdir(parents=True)
    (tmp_path / "AGENTS.md").write_text("Be brief.")
    (plugins / "aaa.py").write_text(
        "from nia_core import ContextSource, hookimpl\n"
        "@hookimpl\n"
        "def nia_context_sources():\n"
        "    return [ContextSource(key='aaa/first', load=lambda: 1, baseline=lambda v: 'aaa')]\n"
    )
    location = locate(tmp_path)
    host = load_host(location, entry_points=False)
    keys = host.assemble(host.open(location)).context.keys
    assert keys == ("nia/environment", "nia/date", "nia/instructions", "aaa/first")


def test_plugin_config_table_reaches_the_hook(tmp_path):
    (tmp_path / ".nia").mkdir()
    (tmp_path / ".nia" / "project.toml").write_text('[plugins.nia-date]\ntimezone = "Pacific/Kiritimati"\n')
    location = locate(tmp_path)
    host = load_host(location, entry_points=False)
    received = {}

    def sources(config):
        received.update(config)
        return []

    host.register(plugin_module("spy", nia_context_sources=sources), PluginInfo("nia-date-spy", "local file"))
    (tmp_path / ".nia" / "project.toml").write_text(
        '[plugins.nia-date]\ntimezone = "Pacific/Kiritimati"\n[plugins.nia-date-spy]\ncolour = "blue"\n'
    )
    host.assemble(host.open(location))
    assert received == {"colour": "blue"}


def test_date_plugin_rolls_over_at_midnight_with_one_line():
    import datetime as dt

    from nia_plugins.date import date_source

    now = {"t": dt.datetime(2026, 11, 29, 23, 59, 59, tzinfo=dt.UTC)}
    source = date_source(lambda: now["t"])
    from nia_core.context import SystemContext

    ctx = SystemContext.make(source)
    generation = initialize(ctx)
    assert generation.baseline == "Today's date is Sunday, 2026-11-29."
    now["t"] += dt.timedelta(seconds=2)
    result = reconcile(ctx, generation.snapshot)
    assert isinstance(result, Updated)
    assert result.text == "The date is now Monday, 2026-11-30."
    assert "\n" not in result.text


def test_unknown_timezone_marks_the_date_plugin_broken_and_others_keep_working(tmp_path):
    (tmp_path / ".nia").mkdir()
    (tmp_path / ".nia" / "project.toml").write_text('[plugins.nia-date]\ntimezone = "Mars/Olympus"\n')
    location = locate(tmp_path)
    host = load_host(location, entry_points=False)
    assembly = host.assemble(host.open(location))
    assert "nia/date" not in assembly.context.keys
    assert "nia/environment" in assembly.context.keys
    assert "Mars/Olympus" in (host.plugins["nia-date"].error or "")


def test_a_location_hook_that_raises_on_replay_leaves_nothing_registered(tmp_path):
    host = PluginHost()
    view = host.open(locate(tmp_path))

    def opened(location, context):
        raise RuntimeError("cannot start watcher")

    module = plugin_module(
        "flaky", nia_location_opened=opened, nia_context_sources=lambda: [const_source("flaky/a", 1)]
    )
    info = host.register(module, PluginInfo("flaky", "local file"))
    assert info.error is not None
    assert info.error.startswith("nia_location_opened raised RuntimeError: cannot start watcher (")
    assert not host.pm.has_plugin("flaky")
    assert host.assemble(view).context.keys == ()
