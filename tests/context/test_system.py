import asyncio
import dataclasses
import threading
import time

import pytest

from nia_core.context import (
    UNAVAILABLE,
    ContextSource,
    DataclassCodec,
    InitializationBlocked,
    RenderError,
    ReplacementBlocked,
    ReplacementReady,
    Snapshot,
    SystemContext,
    Unchanged,
    Updated,
    initialize,
    reconcile,
    replace,
)
from tests.context.helpers import World


def ctx_of(*sources):
    return SystemContext(sources)


def test_initialize_renders_the_baseline_in_composition_order():
    world = World(**{"acme/b": 2, "acme/a": 1})
    generation = initialize(ctx_of(world.source("acme/b"), world.source("acme/a")))
    assert generation.baseline == "acme/b is 2\n\nacme/a is 1"
    assert [key for key, _ in generation.parts] == ["acme/b", "acme/a"]
    assert generation.snapshot["acme/a"].value == "1"
    assert generation.snapshot["acme/a"].removal == "acme/a (was 1) no longer applies"


def test_initialize_observes_every_loader_exactly_once():
    world = World(**{f"acme/s{i}": i for i in range(20)})
    initialize(ctx_of(*(world.source(f"acme/s{i}") for i in range(20))))
    assert world.loads == {f"acme/s{i}": 1 for i in range(20)}


def test_initialize_blocks_on_unavailable_sources_naming_them():
    world = World(**{"acme/a": 1})
    with pytest.raises(InitializationBlocked) as info:
        initialize(ctx_of(world.source("acme/a"), world.source("acme/b"), world.source("acme/c")))
    assert info.value.keys == ("acme/b", "acme/c")
    assert "acme/b, acme/c" in str(info.value)


def test_a_loader_that_raises_counts_as_unavailable_and_is_logged(caplog):
    def boom():
        raise RuntimeError("disk on fire")

    source = ContextSource(key="acme/boom", load=boom, baseline=str)
    with pytest.raises(InitializationBlocked):
        initialize(SystemContext.make(source))
    assert any("acme/boom" in r.getMessage() and "disk on fire" in r.getMessage() for r in caplog.records)


def test_reconcile_without_changes_is_unchanged():
    world = World(**{"acme/a": 1})
    ctx = ctx_of(world.source("acme/a"))
    generation = initialize(ctx)
    assert isinstance(reconcile(ctx, generation.snapshot), Unchanged)


def test_equal_values_in_another_dict_order_are_unchanged():
    world = World(**{"acme/a": {"x": 1, "y": 2}})
    ctx = ctx_of(world.source("acme/a"))
    generation = initialize(ctx)
    world.values["acme/a"] = {"y": 2, "x": 1}
    assert isinstance(reconcile(ctx, generation.snapshot), Unchanged)


def test_changed_added_and_removed_combine_into_one_text():
    world = World(**{"acme/a": 1, "acme/b": 1, "acme/gone2": 1, "acme/gone1": 1})
    ctx = ctx_of(*(world.source(k) for k in ("acme/a", "acme/b", "acme/gone2", "acme/gone1")))
    generation = initialize(ctx)
    world.values.update({"acme/a": 2, "acme/new": "n"})
    later = ctx_of(world.source("acme/new"), world.source("acme/b"), world.source("acme/a"))
    result = reconcile(later, generation.snapshot)
    assert isinstance(result, Updated)
    assert result.text == (
        "acme/new is 'n'\n\n"
        "acme/a changed from 1 to 2\n\n"
        "acme/gone1 (was 1) no longer applies\n\n"
        "acme/gone2 (was 1) no longer applies"
    )
    assert [(c.key, c.kind) for c in result.changes] == [
        ("acme/new", "added"),
        ("acme/a", "updated"),
        ("acme/gone1", "removed"),
        ("acme/gone2", "removed"),
    ]
    assert sorted(result.snapshot) == ["acme/a", "acme/b", "acme/new"]
    assert isinstance(reconcile(later, result.snapshot), Unchanged)


def test_update_defaults_to_rerendering_the_baseline():
    value = {"v": 1}
    source = ContextSource(key="acme/a", load=lambda: value["v"], baseline=lambda v: f"A={v}")
    generation = initialize(SystemContext.make(source))
    value["v"] = 2
    result = reconcile(SystemContext.make(source), generation.snapshot)
    assert isinstance(result, Updated) and result.text == "A=2"


def test_unavailable_admitted_source_keeps_its_entry_and_says_nothing():
    world = World(**{"acme/a": 1, "acme/b": 1})
    ctx = ctx_of(world.source("acme/a"), world.source("acme/b"))
    generation = initialize(ctx)
    world.values["acme/a"] = UNAVAILABLE
    world.values["acme/b"] = 2
    result = reconcile(ctx, generation.snapshot)
    assert isinstance(result, Updated)
    assert result.text == "acme/b changed from 1 to 2"
    assert result.snapshot["acme/a"] == generation.snapshot["acme/a"]
    world.values["acme/a"] = 1
    assert isinstance(reconcile(ctx, result.snapshot), Unchanged)


def test_unavailable_source_never_admitted_stays_out_until_it_loads():
    world = World(**{"acme/a": 1})
    ctx = ctx_of(world.source("acme/a"), world.source("acme/late"))
    generation = replace(ctx, Snapshot())
    assert isinstance(generation, ReplacementReady)
    assert "acme/late" not in generation.generation.snapshot
    assert isinstance(reconcile(ctx, generation.generation.snapshot), Unchanged)
    world.values["acme/late"] = "here"
    result = reconcile(ctx, generation.generation.snapshot)
    assert isinstance(result, Updated) and result.text == "acme/late is 'here'"


def test_gone_key_without_removal_text_requires_replacement_without_update_renderers():
    calls = []
    world = World(**{"acme/a": 1, "acme/fixed": 1})
    a = world.source("acme/a")
    tracked = ContextSource(
        key="acme/a",
        load=a.load,
        baseline=a.baseline,
        update=lambda old, new: calls.append((old, new)) or "updated",
        removal=a.removal,
    )
    ctx = ctx_of(tracked, world.source("acme/fixed", removable=False))
    generation = initialize(ctx)
    world.values["acme/a"] = 2
    result = reconcile(ctx_of(tracked), generation.snapshot)
    assert isinstance(result, ReplacementReady)
    assert "acme/fixed" in result.reason
    assert result.generation.baseline == "acme/a is 2"
    assert calls == []


@dataclasses.dataclass(frozen=True)
class V1:
    title: str


@dataclasses.dataclass(frozen=True)
class V2:
    summary: str


def test_stored_value_the_codec_cannot_decode_requires_replacement():
    value = {"v": V1("old")}
    old = ContextSource(
        key="acme/t", load=lambda: value["v"], baseline=lambda v: f"title {v.title}", codec=DataclassCodec(V1)
    )
    generation = initialize(SystemContext.make(old))
    value["v"] = V2("new")
    new = ContextSource(
        key="acme/t",
        load=lambda: value["v"],
        baseline=lambda v: f"summary {v.summary}",
        update=lambda a, b: pytest.fail("update renderer must not run"),
        codec=DataclassCodec(V2),
    )
    result = reconcile(SystemContext.make(new), generation.snapshot)
    assert isinstance(result, ReplacementReady)
    assert "can no longer be decoded" in result.reason
    assert result.generation.baseline == "summary new"


def test_replacement_blocked_when_an_admitted_source_is_unavailable():
    world = World(**{"acme/a": 1, "acme/fixed": 1})
    ctx = ctx_of(world.source("acme/a"), world.source("acme/fixed", removable=False))
    generation = initialize(ctx)
    world.values["acme/a"] = UNAVAILABLE
    result = reconcile(ctx_of(world.source("acme/a")), generation.snapshot)
    assert isinstance(result, ReplacementBlocked)
    assert result.keys == ("acme/a",)
    explicit = replace(ctx, generation.snapshot)
    assert isinstance(explicit, ReplacementBlocked) and explicit.keys == ("acme/a",)
    world.values["acme/a"] = 3
    ready = replace(ctx, generation.snapshot)
    assert isinstance(ready, ReplacementReady)
    assert ready.generation.baseline == "acme/a is 3\n\nacme/fixed is 1"


@pytest.mark.parametrize("bad", ["", "   \n", None, 42])
def test_a_renderer_returning_empty_or_non_text_is_an_error_naming_the_key(bad):
    source = ContextSource(key="acme/empty", load=lambda: 1, baseline=lambda v: bad)
    with pytest.raises(RenderError, match="acme/empty"):
        initialize(SystemContext.make(source))


def test_a_renderer_that_raises_is_an_error_naming_the_key():
    source = ContextSource(key="acme/r", load=lambda: 1, baseline=lambda v: 1 / 0)
    with pytest.raises(RenderError, match=r"acme/r.*ZeroDivisionError"):
        initialize(SystemContext.make(source))


def test_a_value_the_codec_cannot_encode_counts_as_unavailable():
    source = ContextSource(key="acme/set", load=lambda: {1, 2}, baseline=str)
    with pytest.raises(InitializationBlocked, match="acme/set"):
        initialize(SystemContext.make(source))


def test_a_custom_codec_that_raises_anything_counts_as_unavailable_naming_the_key():
    class Picky:
        def encode(self, value):
            return value["id"]  # KeyError for a value without one

        def decode(self, data):
            return {"id": data}

    good = ContextSource(key="acme/good", load=lambda: 1, baseline=str)
    picky = ContextSource(key="acme/picky", load=lambda: {}, baseline=str, codec=Picky())
    with pytest.raises(InitializationBlocked, match="acme/picky"):
        initialize(ctx_of(good, picky))

    admitted = initialize(SystemContext.make(good)).snapshot
    result = replace(ctx_of(good, picky), admitted)
    assert isinstance(result, ReplacementReady) and result.generation.baseline == "1"
    [observation] = [o for o in result.observations if o.key == "acme/picky"]
    raised_on = Picky.encode.__code__.co_firstlineno + 1
    assert observation.status == "error"
    assert observation.reason.startswith("codec could not encode the value: 'id' (")  # where, in the codec's code
    assert observation.reason.endswith(f"test_system.py:{raised_on})"), observation.reason


def test_async_and_sync_loaders_run_concurrently():
    async def slow_async():
        await asyncio.sleep(0.3)
        return "async"

    def slow_sync():
        time.sleep(0.3)
        return "sync"

    sources = [ContextSource(key=f"acme/s{i}", load=slow_sync, baseline=str) for i in range(3)]
    sources += [ContextSource(key=f"acme/a{i}", load=slow_async, baseline=str) for i in range(3)]
    started = time.monotonic()
    generation = initialize(SystemContext(sources))
    elapsed = time.monotonic() - started
    assert generation.baseline.count("sync") == 6
    # Six 0.3 s loaders in sequence would take 1.8 s; concurrency is the point, not a benchmark.
    assert elapsed < 1.5


def test_a_hanging_loader_is_unavailable_after_its_timeout_and_others_still_load():
    release = threading.Event()
    hanging = ContextSource(key="acme/hang", load=lambda: release.wait(30), baseline=str, timeout=0.1)
    world = World(**{f"acme/ok{i}": i for i in range(10)})
    ctx = SystemContext([hanging, *(world.source(f"acme/ok{i}") for i in range(10))])
    try:
        replacement = replace(ctx, Snapshot())
        assert isinstance(replacement, ReplacementReady)
        assert sorted(replacement.generation.snapshot) == sorted(f"acme/ok{i}" for i in range(10))
        status = {o.key: o.status for o in replacement.observations}
        assert status["acme/hang"] == "timeout"
        with pytest.raises(InitializationBlocked, match="acme/hang"):
            initialize(ctx, timeout=0.1)
    finally:
        release.set()


def test_async_loader_timeout():
    async def forever():
        await asyncio.sleep(30)

    ctx = SystemContext.make(ContextSource(key="acme/slow", load=forever, baseline=str, timeout=0.05))
    result = replace(ctx, Snapshot())
    assert isinstance(result, ReplacementReady)
    assert result.observations[0].status == "timeout"


def test_snapshot_round_trips_through_json():
    world = World(**{"acme/a": {"n": [1, 2]}, "acme/b": "x"})
    generation = initialize(SystemContext([world.source("acme/a"), world.source("acme/b", removable=False)]))
    again = Snapshot.from_json(generation.snapshot.to_json())
    assert again == generation.snapshot
    assert again["acme/b"].removal is None


class Flaky:
    """Renderers that fail while ``broken`` is set."""

    def __init__(self) -> None:
        self.broken = False
        self.value = 1
        self.errors: list[RenderError] = []

    def render(self, value):
        if self.broken:
            raise RuntimeError("template missing")
        return f"flaky is {value}"

    def source(self) -> ContextSource:
        return ContextSource(
            key="acme/flaky", load=lambda: self.value, baseline=self.render, removal=lambda v: "flaky gone"
        )

    def context(self, *others: ContextSource) -> SystemContext:
        return SystemContext([self.source(), *others], on_render_error=self.errors.append)


def test_with_a_handler_a_failing_update_renderer_keeps_the_stored_entry_like_unavailable():
    flaky = Flaky()
    world = World(**{"acme/ok": 1})
    ctx = flaky.context(world.source("acme/ok"))
    generation = initialize(ctx)
    flaky.broken, flaky.value = True, 2
    world.values["acme/ok"] = 2
    result = reconcile(ctx, generation.snapshot)
    assert isinstance(result, Updated)
    assert result.text == "acme/ok changed from 1 to 2"
    assert result.snapshot["acme/flaky"] == generation.snapshot["acme/flaky"]
    assert [e.key for e in flaky.errors] == ["acme/flaky"]
    [obs] = [o for o in result.observations if o.key == "acme/flaky"]
    assert obs.status == "error" and "template missing" in obs.reason
    only_flaky = reconcile(ctx, result.snapshot)
    assert isinstance(only_flaky, Unchanged)
    flaky.broken = False
    healed = reconcile(ctx, result.snapshot)
    assert isinstance(healed, Updated) and healed.text == "flaky is 2"


def test_with_a_handler_initialization_is_blocked_naming_the_failing_source():
    flaky = Flaky()
    flaky.broken = True
    with pytest.raises(InitializationBlocked) as info:
        initialize(flaky.context())
    assert info.value.keys == ("acme/flaky",)
    assert len(flaky.errors) == 1


def test_with_a_handler_a_new_source_that_cannot_render_stays_out_and_replacement_of_admitted_blocks():
    flaky = Flaky()
    world = World(**{"acme/ok": 1})
    first = initialize(SystemContext([world.source("acme/ok")]))
    flaky.broken = True
    ctx = flaky.context(world.source("acme/ok"))
    assert isinstance(reconcile(ctx, first.snapshot), Unchanged)
    fresh = replace(ctx, first.snapshot)
    assert isinstance(fresh, ReplacementReady) and "acme/flaky" not in fresh.generation.snapshot
    flaky.broken = False
    admitted = reconcile(ctx, first.snapshot)
    assert isinstance(admitted, Updated)
    flaky.broken = True
    blocked = replace(ctx, admitted.snapshot)
    assert isinstance(blocked, ReplacementBlocked) and blocked.keys == ("acme/flaky",)


def test_combine_keeps_the_first_render_error_handler():
    errors: list[RenderError] = []
    a = SystemContext([ContextSource(key="acme/a", load=lambda: 1, baseline=str)])
    b = SystemContext(
        [ContextSource(key="acme/b", load=lambda: 1, baseline=lambda v: "")], on_render_error=errors.append
    )
    combined = SystemContext.combine(a, b)
    assert combined.on_render_error is not None
    assert isinstance(replace(combined, Snapshot()), ReplacementReady)
    assert [e.key for e in errors] == ["acme/b"]
