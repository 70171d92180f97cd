"""Context epochs: compaction, model switches, moves, fencing and compare-and-swap retries."""

from __future__ import annotations

from typing import Any

import pytest

from nia_core.errors import UsageError
from nia_core.sessions import (
    Blocked,
    Contexts,
    Deferred,
    Message,
    Replaced,
    Replied,
    Store,
    compact,
    default_summary,
    move,
    project,
    run_boundary,
    run_turn,
    switch_model,
)

from .session_checks import problems
from .session_doubles import RecordingProvider, RecordingStore
from .session_world import World

P, Q = "/p", "/q"


@pytest.fixture
def world() -> World:
    w = World()
    w.set(P, "acme/a", 1)
    w.set(Q, "acme/a", 100)
    w.set(Q, "acme/q", "only at q")
    return w


@pytest.fixture
def provider(world: World) -> RecordingProvider:
    return RecordingProvider(world.log)


def turn(store: Any, world: World, provider: RecordingProvider, session_id: str, text: str | None) -> Any:
    return run_turn(store, session_id, world.context_for, lambda _m: provider, text=text)


@pytest.fixture
def chatted(store: Store, world: World, provider: RecordingProvider) -> str:
    """A session with two turns and one admitted system message."""
    session_id = store.create_session(P, "echo/echo").id
    turn(store, world, provider, session_id, "one")
    world.set(P, "acme/a", 2)
    turn(store, world, provider, session_id, "two")
    return session_id


def kinds(messages: Any) -> list[str]:
    return [m.kind for m in messages]


# -- compaction ------------------------------------------------------------------------


def test_compaction_starts_a_fresh_epoch_that_opens_with_the_summary(
    store: Store, world: World, provider: RecordingProvider, chatted: str
) -> None:
    history_before = [h.message for h in store.history(chatted)]
    session_before = store.session(chatted)
    outcome = compact(store, chatted, Contexts(world.context_for))
    assert outcome == Replaced(chatted, "compaction")
    turn(store, world, provider, chatted, "three")
    request = provider.requests[-1]
    assert request.baseline == "acme/a is 2."
    assert kinds(request.messages) == ["summary", "user"]
    summary = request.messages[0].text
    assert summary == default_summary(project(session_before, 1, history_before))
    assert summary.splitlines()[1:4:2] == ["- User: one", "- User: two"]
    assert "acme/a changed from 1 to 2." not in summary.replace("latest system update: acme/a changed", "")
    durable = kinds(h.message for h in store.history(chatted))
    assert durable == ["user", "assistant", "user", "system_update", "assistant", "summary", "user", "assistant"]
    assert [e.reason for e in store.epochs(chatted)] == ["initialized at /p", "compaction"]
    assert problems(store, chatted) == []


def test_a_plugin_summarizer_is_used(store: Store, world: World, provider: RecordingProvider, chatted: str) -> None:
    compact(store, chatted, Contexts(world.context_for), lambda msgs: f"{len(msgs)} messages, all friendly")
    turn(store, world, provider, chatted, "three")
    assert provider.requests[-1].messages[0].text == "5 messages, all friendly"


def test_a_blocked_compaction_keeps_the_old_baseline_and_is_retried_at_the_next_boundary(
    store: Store, world: World, provider: RecordingProvider, chatted: str
) -> None:
    world.unavailable(P, "acme/a")
    outcome = compact(store, chatted, Contexts(world.context_for), lambda _m: "the summary")
    assert isinstance(outcome, Blocked) and outcome.keys == ("acme/a",)
    assert store.session(chatted).compaction is not None
    result = turn(store, world, provider, chatted, "three")  # still unavailable: old epoch, updates in force
    assert isinstance(result, Replied) and result.boundary.admission.outcome == "blocked"
    assert provider.requests[-1].baseline == "acme/a is 1."
    assert kinds(provider.requests[-1].messages) == ["user", "assistant", "user", "system_update", "assistant", "user"]
    world.set(P, "acme/a", 3)
    result = turn(store, world, provider, chatted, "four")
    assert result.boundary.admission.outcome == "replaced"
    request = provider.requests[-1]
    assert request.baseline == "acme/a is 3."
    # the summary stands for what was there when compaction was asked for; later input stays
    assert kinds(request.messages) == ["summary", "user", "assistant", "user"]
    assert [m.text for m in request.messages if m.kind != "assistant"] == ["the summary", "three", "four"]
    assert store.session(chatted).compaction is None
    assert problems(store, chatted) == []


def test_nothing_to_compact_is_a_clear_error(store: Store, world: World) -> None:
    session_id = store.create_session(P, "echo/echo").id
    with pytest.raises(UsageError, match=f"session {session_id}: nothing to compact"):
        compact(store, session_id, Contexts(world.context_for))


# -- model switch ----------------------------------------------------------------------


def test_a_model_switch_starts_a_fresh_epoch_and_keeps_the_conversation(
    store: Store, world: World, provider: RecordingProvider, chatted: str
) -> None:
    outcome = switch_model(store, chatted, "echo/other", Contexts(world.context_for))
    assert isinstance(outcome, Replaced) and "model switch" in outcome.reason
    turn(store, world, provider, chatted, "three")
    request = provider.requests[-1]
    assert request.model == "echo/other" and request.baseline == "acme/a is 2."
    assert kinds(request.messages) == ["user", "assistant", "user", "assistant", "user"]
    assert [e.model for e in store.epochs(chatted)] == ["echo/echo", "echo/other"]


def test_a_blocked_model_switch_is_retried_at_the_next_boundary(
    store: Store, world: World, provider: RecordingProvider, chatted: str
) -> None:
    world.unavailable(P, "acme/a")
    blocked = switch_model(store, chatted, "echo/other", Contexts(world.context_for))
    assert isinstance(blocked, Blocked)
    assert str(blocked) == f"session {chatted}: the fresh baseline for the model switch is blocked on: acme/a"
    turn(store, world, provider, chatted, "three")
    assert provider.requests[-1].model == "echo/other" and provider.requests[-1].baseline == "acme/a is 1."
    world.set(P, "acme/a", 2)
    result = turn(store, world, provider, chatted, "four")
    assert result.boundary.admission.outcome == "replaced"
    assert [e.model for e in store.epochs(chatted)] == ["echo/echo", "echo/other"]


# -- moves -----------------------------------------------------------------------------


def test_a_moved_session_initializes_at_its_destination_before_promoting(
    store: Store, world: World, provider: RecordingProvider, chatted: str
) -> None:
    move(store, chatted, Q)
    assert store.state(chatted).epoch is None
    world.log.clear()
    result = turn(store, world, provider, chatted, "at q")
    assert isinstance(result, Replied)
    assert {entry[1] for entry in world.log if entry[0] == "observe"} == {Q}
    request = provider.requests[-1]
    assert request.baseline == "acme/a is 100.\n\nacme/q is only at q."
    assert kinds(request.messages) == ["user", "assistant", "user", "assistant", "user"]
    epochs = store.epochs(chatted)
    assert [(e.number, e.location) for e in epochs] == [(1, P), (2, Q)]
    assert store.history(chatted)[-2].message.epoch == 2


def test_a_blocked_destination_keeps_the_input_pending(
    store: Store, world: World, provider: RecordingProvider, chatted: str
) -> None:
    move(store, chatted, Q)
    world.unavailable(Q, "acme/q")
    result = turn(store, world, provider, chatted, "at q")
    assert isinstance(result, Blocked) and result.keys == ("acme/q",)
    assert [m.text for m in store.state(chatted).pending] == ["at q"]
    assert deferred_compaction_is_applied_at_initialization(store, world, provider, chatted)


def deferred_compaction_is_applied_at_initialization(
    store: Store, world: World, provider: RecordingProvider, session_id: str
) -> bool:
    outcome = compact(store, session_id, Contexts(world.context_for), lambda _m: "summary before the move")
    assert isinstance(outcome, Deferred)
    world.set(Q, "acme/q", "back")
    turn(store, world, provider, session_id, None)
    request = provider.requests[-1]
    assert [(m.kind, m.text) for m in request.messages] == [("summary", "summary before the move"), ("user", "at q")]
    assert [e.reason for e in store.epochs(session_id)][-1] == f"initialized at {Q}"
    return True


def test_initialization_is_fenced_against_a_concurrent_move(
    store: Store, world: World, provider: RecordingProvider, reopen: Any
) -> None:
    session_id = store.create_session(P, "echo/echo").id
    other = reopen()

    def move_away(location: str) -> None:  # another process moves the session while we observe /p
        if location == P:
            world.hook = None
            other.move(session_id, Q)

    world.hook = move_away
    result = turn(store, world, provider, session_id, "hello")
    assert isinstance(result, Replied)
    assert [e.location for e in store.epochs(session_id)] == [Q]  # /p's context was never stored
    assert provider.requests[-1].baseline == "acme/a is 100.\n\nacme/q is only at q."


def test_promotion_is_fenced_against_a_move_after_initialization(
    store: Store, world: World, provider: RecordingProvider, reopen: Any
) -> None:
    session_id = store.create_session(P, "echo/echo").id
    spy = RecordingStore(store, world.log)
    other = reopen()
    spy.before["promote"] = lambda: other.move(session_id, Q)
    result = turn(spy, world, provider, session_id, "hello")
    assert isinstance(result, Replied)
    assert [e.location for e in store.epochs(session_id)] == [P, Q]
    [user] = [h.message for h in store.history(session_id) if h.message.kind == "user"]
    assert user.epoch == 2  # promoted only once the destination had a complete baseline
    assert provider.requests[-1].baseline == "acme/a is 100.\n\nacme/q is only at q."


# -- compare-and-swap retries -----------------------------------------------------------


def test_a_lost_admission_race_rereads_and_admits_nothing_twice(
    store: Store, world: World, provider: RecordingProvider, chatted: str, reopen: Any
) -> None:
    spy = RecordingStore(store, world.log)
    other = reopen()
    world.set(P, "acme/a", 7)
    store.enqueue(chatted, Message("user", "three"))
    store.promote(chatted, location=P)
    spy.before["admit_update"] = lambda: run_boundary(other, chatted, world.context_for)
    result = run_boundary(spy, chatted, world.context_for)
    assert result.admission.outcome == "unchanged"  # the other runner admitted it first
    updates = [h.message.text for h in store.history(chatted) if h.message.kind == "system_update"]
    assert updates == ["acme/a changed from 1 to 2.", "acme/a changed from 2 to 7."]
    assert problems(store, chatted) == []


def test_a_concurrent_compaction_during_reconciliation_is_absorbed(
    store: Store, world: World, provider: RecordingProvider, chatted: str, reopen: Any
) -> None:
    spy = RecordingStore(store, world.log)
    other = reopen()
    world.set(P, "acme/a", 7)
    spy.before["admit_update"] = lambda: compact(other, chatted, Contexts(world.context_for), lambda _m: "s")
    result = run_turn(spy, chatted, world.context_for, lambda _m: provider, text="three")
    assert isinstance(result, Replied)
    request = provider.requests[-1]
    assert request.baseline == "acme/a is 7."  # the fresh baseline already carries the change
    assert [(m.kind, m.text) for m in request.messages] == [("summary", "s"), ("user", "three")]
    assert problems(store, chatted) == []
