import threading
from pathlib import Path

import pytest

from nia_core import ContextSource, Location
from nia_core.context import CorruptSnapshot, Snapshot, SystemContextRegistry, Unchanged, Updated, initialize, reconcile
from nia_core.errors import DuplicateContribution

HERE = Location(Path("/project/sub"), Path("/project"))
THERE = Location(Path("/other"), Path("/other"))


def const(key, value, removal=True):
    return ContextSource(
        key=key,
        load=lambda: value,
        baseline=lambda v: f"{key}={v}",
        removal=(lambda v: f"{key} removed") if removal else None,
    )


def producer(*sources):
    return lambda location: list(sources)


def test_contributions_combine_in_contribution_key_order():
    registry = SystemContextRegistry()
    registry.scope("b").register("b", producer(const("acme/b", 1)))
    registry.scope("a").register("a", producer(const("acme/a", 1)))
    assert registry.open(HERE).assemble().context.keys == ("acme/a", "acme/b")


def test_producers_receive_the_location():
    registry = SystemContextRegistry()
    registry.scope("loc").register("loc", lambda location: [const("acme/where", str(location.path))])
    here = initialize(registry.open(HERE).assemble().context).baseline
    there = initialize(registry.open(THERE).assemble().context).baseline
    assert here == "acme/where=/project/sub" and there == "acme/where=/other"


def test_replay_into_a_location_opened_later_and_from_a_plugin_registered_later():
    registry = SystemContextRegistry()
    registry.scope("early").register("early", producer(const("acme/early", 1)))
    view = registry.open(HERE)
    registry.scope("late").register("late", producer(const("acme/late", 1)))
    assert view.assemble().context.keys == ("acme/early", "acme/late")
    later_view = registry.open(THERE)
    assert later_view.assemble().context.keys == ("acme/early", "acme/late")


def test_closing_a_scope_removes_exactly_its_contributions_with_removal_text():
    registry = SystemContextRegistry()
    keep = registry.scope("keep")
    keep.register("keep", producer(const("acme/keep", 1)))
    plugin = registry.scope("plugin")
    plugin.register("plugin.one", producer(const("acme/one", 1)))
    plugin.register("plugin.two", producer(const("acme/two", 1)))
    view = registry.open(HERE)
    changes = []
    view.on_change(lambda: changes.append(1))
    generation = initialize(view.assemble().context)
    plugin.close()
    assert changes
    result = reconcile(view.assemble().context, generation.snapshot)
    assert isinstance(result, Updated)
    assert result.text == "acme/one removed\n\nacme/two removed"
    assert isinstance(reconcile(view.assemble().context, result.snapshot), Unchanged)


def test_a_scope_used_as_a_context_manager_closes():
    registry = SystemContextRegistry()
    with registry.scope("temp") as scope:
        scope.register("temp", producer(const("acme/t", 1)))
        assert registry.open(HERE).assemble().context.keys == ("acme/t",)
    assert registry.open(HERE).assemble().context.keys == ()


def test_duplicate_contribution_key_names_both_contributors():
    registry = SystemContextRegistry()
    registry.scope("first").register("same", producer(), contributor="plugin 'first'")
    with pytest.raises(DuplicateContribution, match=r"plugin 'first'.*plugin 'second'"):
        registry.scope("second").register("same", producer(), contributor="plugin 'second'")


def test_duplicate_source_key_names_both_and_keeps_the_first():
    registry = SystemContextRegistry()
    registry.scope("a").register("a", producer(const("acme/x", "a")), contributor="plugin 'a'")
    registry.scope("b").register("b", producer(const("acme/x", "b")), contributor="plugin 'b'")
    assembly = registry.open(HERE).assemble()
    assert initialize(assembly.context).baseline == "acme/x=a"
    [problem] = assembly.problems
    assert problem.kind == "duplicate-key"
    assert "plugin 'b'" in str(problem) and "plugin 'a'" in str(problem)


def test_misbehaving_producers_are_left_out_and_reported():
    registry = SystemContextRegistry(producer_timeout=0.2)
    release = threading.Event()

    def raises(location):
        raise RuntimeError("boom")

    registry.scope("ok").register("ok", producer(const("acme/ok", 1)))
    registry.scope("raises").register("raises", raises)
    registry.scope("bad").register("bad", lambda location: "not a list")
    registry.scope("items").register("items", lambda location: [1, 2])
    registry.scope("hangs").register("hangs", lambda location: release.wait(30))
    registry.scope("ns").register("ns", producer(const("other/x", 1)), namespace="acme")
    registry.scope("reserved").register("reserved", producer(const("nia/x", 1)))
    try:
        assembly = registry.open(HERE).assemble()
    finally:
        release.set()
    assert assembly.context.keys == ("acme/ok",)
    kinds = {p.contribution: p.kind for p in assembly.problems}
    assert kinds == {
        "bad": "bad-return",
        "hangs": "timeout",
        "items": "bad-return",
        "ns": "namespace",
        "raises": "raised",
        "reserved": "namespace",
    }


def test_a_generator_producer_runs_under_the_timeout_and_its_exception_is_a_problem():
    registry = SystemContextRegistry(producer_timeout=0.2)
    release = threading.Event()

    def yields(location):
        yield const("acme/gen", 1)

    def yields_then_raises(location):
        yield const("acme/half", 1)
        raise RuntimeError("boom in the middle")

    def yields_then_hangs(location):
        yield const("acme/slow", 1)
        release.wait(30)

    registry.scope("gen").register("gen", yields)
    registry.scope("raises").register("raises", yields_then_raises)
    registry.scope("hangs").register("hangs", yields_then_hangs)
    try:
        assembly = registry.open(HERE).assemble()
    finally:
        release.set()

    assert assembly.context.keys == ("acme/gen",)
    problems = {p.contribution: (p.kind, p.message) for p in assembly.problems}
    raised_on = yields_then_raises.__code__.co_firstlineno + 2
    assert problems["raises"][1].endswith(f"test_registry.py:{raised_on})"), "where, in the producer's own code"
    problems["raises"] = ("raised", problems["raises"][1].rpartition(" (")[0])
    assert problems == {
        "raises": ("raised", "raised RuntimeError: boom in the middle"),
        "hangs": (
            "timeout",
            "timed out after 0.2s; its sources are left out until it answers in time (a busy machine, a slow disk?)",
        ),
    }


def test_location_local_contributions_stay_in_their_location():
    registry = SystemContextRegistry()
    here = registry.open(HERE)
    there = registry.open(THERE)
    scope = here.scope("session")
    scope.register("local", producer(const("acme/local", 1)))
    assert here.assemble().context.keys == ("acme/local",)
    assert there.assemble().context.keys == ()
    scope.close()
    assert here.assemble().context.keys == ()


def test_corrupt_snapshot_data_is_a_clear_error():
    with pytest.raises(CorruptSnapshot, match="not valid JSON"):
        Snapshot.from_json("{nope")
    with pytest.raises(CorruptSnapshot, match="acme/a"):
        Snapshot.from_dict({"acme/a": {"value": 3}})


def test_withdraw_removes_location_local_contributions_and_notifies():
    registry = SystemContextRegistry()
    view = registry.open(HERE)
    view.register("local.a", producer(const("acme/a", 1)))
    view.register("local.b", producer(const("acme/b", 1)))
    notified = []
    view.on_change(lambda: notified.append(1))
    assert view.withdraw("local.a", "missing") == ["local.a"]
    assert view.assemble().context.keys == ("acme/b",)
    assert notified == [1]
    assert view.withdraw("missing") == [] and notified == [1]
