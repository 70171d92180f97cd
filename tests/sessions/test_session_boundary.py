"""The safe provider-turn boundary, step by step and in order."""

from __future__ import annotations

from typing import Any

import pytest

from nia_core.providers.names import ProviderError
from nia_core.sessions import (
    AwaitingTools,
    Blocked,
    Idle,
    Message,
    Replied,
    Store,
    ToolCall,
    run_boundary,
    run_turn,
)

from .session_checks import problems
from .session_doubles import RecordingProvider, RecordingStore
from .session_world import World

P = "/p"


def steps(log: list[Any]) -> list[str]:
    return [entry[1] if entry[0] != "observe" else "observe" for entry in log]


def compress(names: list[str]) -> list[str]:
    """Collapse runs of observations (one per source) into one step."""
    out: list[str] = []
    for name in names:
        if not (name == "observe" and out and out[-1] == "observe"):
            out.append(name)
    return out


@pytest.fixture
def world() -> World:
    w = World()
    w.set(P, "acme/a", 1)
    w.set(P, "acme/b", "x")
    return w


@pytest.fixture
def setup(store: Store, world: World) -> tuple[RecordingStore, RecordingProvider, str]:
    spy = RecordingStore(store, world.log)
    provider = RecordingProvider(world.log)
    session_id = store.create_session(P, "echo/echo").id
    return spy, provider, session_id


def turn(spy: Any, provider: RecordingProvider, world: World, session_id: str, text: str | None) -> Any:
    return run_turn(spy, session_id, world.context_for, lambda _model: provider, text=text)


def test_first_turn_initializes_before_promoting_and_admits_no_redundant_message(setup: Any, world: World) -> None:
    spy, provider, session_id = setup
    result = turn(spy, provider, world, session_id, "hello")
    assert isinstance(result, Replied)
    assert compress(steps(world.log)) == ["enqueue", "observe", "start_epoch", "promote", "send", "append"]
    request = provider.requests[0]
    assert request.baseline == "acme/a is 1.\n\nacme/b is x."
    assert [(m.kind, m.text) for m in request.messages] == [("user", "hello")]
    assert result.boundary.initialized and result.boundary.admission is None


def test_a_change_is_admitted_after_promotion_in_one_combined_message(setup: Any, world: World) -> None:
    spy, provider, session_id = setup
    turn(spy, provider, world, session_id, "hello")
    world.log.clear()
    world.set(P, "acme/a", 2)
    world.drop(P, "acme/b")
    world.set(P, "acme/c", "new")
    result = turn(spy, provider, world, session_id, "second")
    assert compress(steps(world.log)) == ["enqueue", "promote", "observe", "admit_update", "send", "append"]
    request = provider.requests[-1]
    assert request.baseline == "acme/a is 1.\n\nacme/b is x."  # the baseline never changes within its epoch
    assert [(m.kind, m.text) for m in request.messages[-2:]] == [
        ("user", "second"),
        ("system_update", "acme/a changed from 1 to 2.\n\nacme/c is new.\n\nacme/b no longer applies (was x)."),
    ]
    assert result.boundary.admission.outcome == "updated"


def test_unchanged_context_admits_nothing_and_the_next_change_arrives_once(setup: Any, world: World) -> None:
    spy, provider, session_id = setup
    turn(spy, provider, world, session_id, "one")
    turn(spy, provider, world, session_id, "two")
    world.set(P, "acme/a", 5)
    turn(spy, provider, world, session_id, "three")
    turn(spy, provider, world, session_id, "four")
    kinds = [h.message.kind for h in spy.history(session_id)]
    assert kinds == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "system_update",
        "assistant",
        "user",
        "assistant",
    ]
    assert problems(spy, session_id) == []


def test_blocked_initialization_stores_nothing_and_keeps_the_input_pending(setup: Any, world: World) -> None:
    spy, provider, session_id = setup
    world.unavailable(P, "acme/b")
    result = turn(spy, provider, world, session_id, "hello")
    assert isinstance(result, Blocked) and result.keys == ("acme/b",)
    assert "blocked on: acme/b" in str(result) and session_id in str(result)
    state = spy.state(session_id)
    assert state.epoch is None and [m.text for m in state.pending] == ["hello"]
    assert spy.history(session_id) == [] and spy.epochs(session_id) == []
    assert provider.requests == []
    world.set(P, "acme/b", "back")
    world.log.clear()
    result = turn(spy, provider, world, session_id, None)
    assert isinstance(result, Replied)
    assert compress(steps(world.log)) == ["observe", "start_epoch", "promote", "send", "append"]
    assert provider.requests[-1].baseline == "acme/a is 1.\n\nacme/b is back."
    assert [m.text for m in provider.requests[-1].messages] == ["hello"]


def test_a_failed_provider_call_keeps_the_admitted_message_and_the_retry_resends_it_unchanged(
    setup: Any, world: World
) -> None:
    spy, provider, session_id = setup
    turn(spy, provider, world, session_id, "hello")
    world.set(P, "acme/a", 2)
    provider.fail = 1
    with pytest.raises(ProviderError, match=f"session {session_id}: echo/echo failed: connection reset"):
        turn(spy, provider, world, session_id, "second")
    failed = provider.requests[-1]
    history = spy.history(session_id)
    assert [h.message.kind for h in history] == ["user", "assistant", "user", "system_update"]
    result = turn(spy, provider, world, session_id, None)
    assert isinstance(result, Replied)
    retried = provider.requests[-1]
    assert retried == failed
    assert provider.lower(retried) == provider.lower(failed)
    kinds = [h.message.kind for h in spy.history(session_id)]
    assert kinds == ["user", "assistant", "user", "system_update", "assistant"]


def test_an_idle_session_observes_nothing(setup: Any, world: World) -> None:
    spy, provider, session_id = setup
    turn(spy, provider, world, session_id, "hello")
    world.log.clear()
    world.set(P, "acme/a", 99)
    assert isinstance(run_boundary(spy, session_id, world.context_for), Idle)
    assert isinstance(turn(spy, provider, world, session_id, None), Idle)
    assert world.log == []
    turn(spy, provider, world, session_id, "now")
    updates = [h.message.text for h in spy.history(session_id) if h.message.kind == "system_update"]
    assert updates == ["acme/a changed from 1 to 99."]


def test_tool_results_settle_before_the_boundary_and_precede_the_system_message(setup: Any, world: World) -> None:
    spy, provider, session_id = setup
    provider.calls = (ToolCall("c1", "read", {"path": "x"}), ToolCall("c2", "read", {"path": "y"}))
    turn(spy, provider, world, session_id, "look at x and y")
    world.set(P, "acme/a", 2)
    spy.enqueue(session_id, Message("tool_result", "contents of x", tool_call_id="c1"))
    world.log.clear()
    result = run_boundary(spy, session_id, world.context_for)
    assert isinstance(result, AwaitingTools) and result.call_ids == ("c2",)
    assert world.log == []  # not a safe boundary: nothing observed, nothing promoted
    assert "waiting for tool results: c2" in str(result)
    assert [m.text for m in spy.state(session_id).pending] == ["contents of x"]
    spy.enqueue(session_id, Message("tool_result", "contents of y", tool_call_id="c2"))
    result = turn(spy, provider, world, session_id, None)
    assert isinstance(result, Replied)
    tail = [(m.kind, m.tool_call_id) for m in provider.requests[-1].messages[-4:]]
    assert tail == [("assistant", None), ("tool_result", "c1"), ("tool_result", "c2"), ("system_update", None)]


def test_a_source_new_to_the_snapshot_emits_its_baseline_rendering_once(setup: Any, world: World) -> None:
    spy, provider, session_id = setup
    turn(spy, provider, world, session_id, "one")
    world.set(P, "acme/late", "here")
    turn(spy, provider, world, session_id, "two")
    turn(spy, provider, world, session_id, "three")
    updates = [h.message.text for h in spy.history(session_id) if h.message.kind == "system_update"]
    assert updates == ["acme/late is here."]


def test_a_source_gone_without_removal_text_replaces_the_epoch(setup: Any, world: World) -> None:
    spy, provider, session_id = setup
    world.set(P, "acme/fixed", "f", removable=False)
    turn(spy, provider, world, session_id, "one")
    world.set(P, "acme/a", 2)
    turn(spy, provider, world, session_id, "two")  # admits an update in epoch 1
    world.drop(P, "acme/fixed")
    result = turn(spy, provider, world, session_id, "three")
    assert result.boundary.admission.outcome == "replaced"
    request = provider.requests[-1]
    assert request.baseline == "acme/a is 2.\n\nacme/b is x."
    # the conversation stays; epoch 1's system message leaves the projection but stays durable
    assert [m.kind for m in request.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert "system_update" in [h.message.kind for h in spy.history(session_id)]
    assert [e.number for e in spy.epochs(session_id)] == [1, 2]
    assert problems(spy, session_id) == []


def test_a_blocked_replacement_keeps_the_old_baseline(setup: Any, world: World) -> None:
    spy, provider, session_id = setup
    world.set(P, "acme/fixed", "f", removable=False)
    turn(spy, provider, world, session_id, "one")
    world.drop(P, "acme/fixed")
    world.unavailable(P, "acme/a")
    result = turn(spy, provider, world, session_id, "two")
    assert isinstance(result, Replied)
    assert result.boundary.admission.outcome == "blocked"
    assert result.boundary.admission.blocked_on == ("acme/a",)
    assert provider.requests[-1].baseline == provider.requests[0].baseline
    assert [e.number for e in spy.epochs(session_id)] == [1]
    world.set(P, "acme/a", 1)
    result = turn(spy, provider, world, session_id, "three")
    assert result.boundary.admission.outcome == "replaced"


def test_the_baseline_is_reused_verbatim_by_another_connection(setup: Any, world: World, reopen: Any) -> None:
    spy, provider, session_id = setup
    turn(spy, provider, world, session_id, "one")
    world.set(P, "acme/b", "changed")  # a fresh rendering would differ now
    other = reopen()
    run_turn(other, session_id, world.context_for, lambda _m: provider, text="two")
    assert provider.requests[1].baseline == provider.requests[0].baseline
