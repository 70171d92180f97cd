"""The test kit itself: a pytest plugin any project gets with nia, and helpers that work without pytest."""

from __future__ import annotations

import textwrap

import pytest

from nia_core import ContextSource, hookimpl
from nia_core.plugin_host import PluginError
from nia_core.testing import BoundaryDriver, Conversation, make_host, plugin_name


class Counter:
    """A plugin object: one source whose value the test controls."""

    NIA_NAMESPACE = "counter"

    def __init__(self) -> None:
        self.value = 1
        self.present = True
        self.source = ContextSource(
            key="counter/value",
            load=lambda: self.value,
            baseline=lambda v: f"The counter is {v}.",
            update=lambda old, new: f"The counter went from {old} to {new}.",
            removal=lambda v: f"Forget the counter (it was {v}).",
        )

    @hookimpl
    def nia_context_sources(self):
        return [self.source] if self.present else []


def test_drive_returns_what_the_model_sees_at_each_boundary(nia_boundaries):
    counter = Counter()

    def bump():
        counter.value = 2

    texts = nia_boundaries.drive(counter, bump, lambda: None)

    assert texts.baseline == "The counter is 1."
    assert texts.added == "The counter is 1."
    assert texts.updates == ["The counter went from 1 to 2.", None]
    assert texts.removal == "Forget the counter (it was 2)."
    assert texts.messages == [texts.added, "The counter went from 1 to 2.", texts.removal]
    assert [b.kind for b in texts.boundaries] == ["updated", "updated", "unchanged", "updated"]
    assert [b.changed for b in texts.boundaries] == [
        {"counter/value": "added"},
        {"counter/value": "updated"},
        {},
        {"counter/value": "removed"},
    ]


def test_a_source_without_removal_text_forces_a_new_baseline(nia_boundaries):
    source = ContextSource(key="plain/x", load=lambda: 1, baseline=lambda v: f"x is {v}.")

    texts = nia_boundaries.drive(source)

    assert texts.removal == ""  # the new baseline: nothing left in it
    assert texts.boundaries[-1].kind == "replaced"
    assert texts.boundaries[-1].reason == "plain/x is gone and has no removal text"


def test_a_conversation_steps_one_boundary_at_a_time(nia_location):
    counter = Counter()
    conversation = BoundaryDriver(nia_location).conversation(counter)
    assert conversation.baseline == "The counter is 1."

    counter.present = False
    assert conversation.boundary().text == "Forget the counter (it was 1)."
    counter.present = True
    assert conversation.boundary().changed == {"counter/value": "added"}
    assert conversation.messages == ["Forget the counter (it was 1).", "The counter is 1."]


def test_the_kit_host_holds_only_the_plugins_under_test(nia_host, nia_location):
    host = nia_host(Counter())

    assert list(host.plugins) == ["counter"]
    assert host.assemble(host.open(nia_location)).context.keys == ("counter/value",)


def test_the_kit_host_is_strict_by_default(nia_location):
    class Wrong:
        @hookimpl
        def nia_context_sources(self, location, colour):
            return []

    with pytest.raises(PluginError, match="plugin 'wrong': invalid hook implementation"):
        make_host(Wrong())
    assert make_host(Wrong(), strict=False).plugins["wrong"].error.startswith("invalid hook implementation")


def test_strict_boundaries_fail_on_a_misbehaving_plugin(nia_location):
    class Raises:
        NIA_NAMESPACE = "raises"

        @hookimpl
        def nia_context_sources(self):
            raise RuntimeError("boom")

    with pytest.raises(PluginError, match="plugin 'raises': raised RuntimeError: boom"):
        BoundaryDriver(nia_location).drive(Raises())
    texts = BoundaryDriver(nia_location, strict=False).drive(Raises())
    assert texts.baseline == "" and texts.messages == []


def test_a_hung_loader_is_reported_against_its_plugin(nia_location):
    slow = ContextSource(key="slow/x", load=lambda: __import__("time").sleep(5), baseline=str, timeout=0.1)
    conversation = Conversation(make_host(slow, strict=False), nia_location)

    assert conversation.start().blocked_on == ("slow/x",)
    assert (
        conversation.host.plugins["sources-under-test"].error == "context source 'slow/x': loader timed out after 0.1s"
    )


def test_default_plugin_names():
    import nia_plugins.date

    assert plugin_name(nia_plugins.date) == "nia-date"
    assert plugin_name(Counter()) == "counter"
    assert plugin_name(textwrap) == "textwrap"


def test_project_configure_keeps_other_tables(nia_project):
    nia_project.write(".nia/project.toml", "# mine\n[plugins]\ndisabled = []\n")

    nia_project.configure("counter", step=2)

    assert nia_project.path(".nia/project.toml").read_text() == (
        "# mine\n[plugins]\ndisabled = []\n\n[plugins.counter]\nstep = 2\n"
    )


def test_the_kit_is_a_pytest11_plugin_that_adds_only_fixtures():
    import importlib_metadata

    import nia_core.testing

    (entry_point,) = [e for e in importlib_metadata.entry_points(group="pytest11") if e.name == "nia"]
    assert entry_point.value == "nia_core.testing"
    hooks = [name for name in vars(nia_core.testing) if name.startswith("pytest_")]
    fixtures = [name for name, value in vars(nia_core.testing).items() if hasattr(value, "_fixture_function_marker")]
    assert hooks == []
    assert sorted(fixtures) == ["nia_boundaries", "nia_host", "nia_location", "nia_project"]
