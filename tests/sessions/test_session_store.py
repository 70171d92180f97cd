"""The Store conformance suite: every backend must pass these unchanged."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from nia_core.context import Snapshot, SnapshotEntry
from nia_core.sessions import (
    Message,
    PendingCompaction,
    RevisionConflict,
    SessionView,
    Store,
    ToolCall,
    UnknownSession,
)

SNAP = Snapshot({"acme/a": SnapshotEntry('"one"', "a is gone"), "acme/b": SnapshotEntry("[1,2]")})
SNAP2 = Snapshot({"acme/a": SnapshotEntry('"two"', "a is gone"), "acme/b": SnapshotEntry("[1,2]")})


def started(store: Store, location: str = "/p", segments: tuple[str, ...] = ("a is one.", "\n\n", "b.")) -> str:
    record = store.create_session(location, "echo/echo")
    store.start_epoch(
        record.id,
        expected_revision=record.revision,
        location=location,
        model="echo/echo",
        segments=segments,
        snapshot=SNAP,
        reason="test",
    )
    return record.id


def test_a_new_session_has_no_epoch_and_is_listed_and_resolvable(store: Store) -> None:
    first = store.create_session("/p", "echo/echo", session_id="abc123")
    second = store.create_session("/q", "echo/x", session_id="abd456")
    assert first.epoch is None and first.revision == 0 and first.location == "/p"
    assert [s.id for s in store.sessions()] == ["abc123", "abd456"]
    assert store.resolve("abc") == "abc123"
    assert store.resolve("abd456") == "abd456"
    assert store.session("abd456").model == "echo/x"
    assert second.created.endswith("+00:00")
    with pytest.raises(UnknownSession, match="ambiguous"):
        store.resolve("ab")
    with pytest.raises(UnknownSession, match="no session 'zzz'"):
        store.resolve("zzz")
    with pytest.raises(UnknownSession):
        store.state("nope")


def test_the_baseline_comes_back_byte_for_byte(store: Store) -> None:
    segments = ("Ünïcödé ✓ \r\n trailing  ", "\n\n", "", "last\x00part\n")
    session_id = started(store, segments=segments)
    state = store.state(session_id)
    assert state.epoch is not None
    assert state.epoch.baseline == "".join(segments)
    assert state.epoch.snapshot == SNAP
    assert state.epoch.record.reason == "test"
    assert state.session.revision == 1 and state.session.epoch == 1


def test_start_epoch_is_a_compare_and_swap_on_revision_and_location(store: Store) -> None:
    record = store.create_session("/p", "echo/echo")
    kwargs = {"model": "echo/echo", "segments": ["x"], "snapshot": SNAP, "reason": "r"}
    with pytest.raises(RevisionConflict):
        store.start_epoch(record.id, expected_revision=record.revision + 1, location="/p", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(RevisionConflict):
        store.start_epoch(record.id, expected_revision=record.revision, location="/elsewhere", **kwargs)  # type: ignore[arg-type]
    assert store.epochs(record.id) == [] and store.state(record.id).epoch is None
    store.start_epoch(record.id, expected_revision=record.revision, location="/p", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(RevisionConflict):  # the same stale revision loses the second time
        store.start_epoch(record.id, expected_revision=record.revision, location="/p", **kwargs)  # type: ignore[arg-type]
    assert [e.number for e in store.epochs(record.id)] == [1]


def test_admit_update_stores_message_and_snapshot_together(store: Store) -> None:
    session_id = started(store)
    revision = store.session(session_id).revision
    message = store.admit_update(session_id, expected_revision=revision, epoch=1, text="a is two", snapshot=SNAP2)
    assert message.kind == "system_update" and message.seq == 1 and message.epoch == 1
    state = store.state(session_id)
    assert state.epoch is not None and state.epoch.snapshot == SNAP2
    assert state.session.revision == revision + 1
    [entry] = store.history(session_id)
    assert entry.snapshot_id == store.epochs(session_id)[0].snapshot_id
    assert store.snapshot(session_id, entry.snapshot_id) == SNAP2
    with pytest.raises(RevisionConflict):
        store.admit_update(session_id, expected_revision=revision, epoch=1, text="again", snapshot=SNAP)
    assert len(store.history(session_id)) == 1 and store.state(session_id).epoch.snapshot == SNAP2  # type: ignore[union-attr]


def test_pending_input_is_promoted_in_order_once(store: Store) -> None:
    session_id = started(store)
    store.enqueue(session_id, Message("user", "first"))
    store.enqueue(session_id, Message("tool_result", "42", tool_call_id="c1", is_error=True))
    assert [m.text for m in store.state(session_id).pending] == ["first", "42"]
    promoted = store.promote(session_id, location="/p")
    assert [(m.seq, m.kind, m.text) for m in promoted] == [(1, "user", "first"), (2, "tool_result", "42")]
    assert promoted[1].tool_call_id == "c1" and promoted[1].is_error
    assert store.promote(session_id, location="/p") == []
    assert store.state(session_id).pending == ()
    assert [h.message.text for h in store.history(session_id)] == ["first", "42"]


def test_promotion_is_fenced_on_an_active_epoch_at_the_location(store: Store) -> None:
    record = store.create_session("/p", "echo/echo")
    store.enqueue(record.id, Message("user", "hi"))
    with pytest.raises(RevisionConflict):  # no epoch yet
        store.promote(record.id, location="/p")
    session_id = started(store)
    store.enqueue(session_id, Message("user", "hi"))
    with pytest.raises(RevisionConflict):  # the session is elsewhere
        store.promote(session_id, location="/old")
    store.move(session_id, "/q")
    with pytest.raises(RevisionConflict):  # moved: no epoch until /q initializes
        store.promote(session_id, location="/q")
    assert [m.text for m in store.state(session_id).pending] == ["hi"]
    assert store.history(session_id) == []


def test_replies_keep_tool_calls(store: Store) -> None:
    session_id = started(store)
    call = ToolCall("c1", "read_file", {"path": "a.txt", "n": [1, 2]})
    stored = store.append(session_id, Message("assistant", "let me look", (call,)))
    assert stored.seq == 1 and stored.epoch == 1
    [entry] = store.history(session_id)
    assert entry.message.tool_calls == (call,) and entry.message.text == "let me look"


def test_move_clears_the_epoch_and_set_model_bumps_the_revision(store: Store) -> None:
    session_id = started(store)
    before = store.session(session_id)
    switched = store.set_model(session_id, "echo/other")
    assert switched.model == "echo/other" and switched.revision == before.revision + 1
    assert switched.epoch == 1
    moved = store.move(session_id, "/q")
    assert moved.location == "/q" and moved.epoch is None and moved.revision == before.revision + 2
    assert store.state(session_id).epoch is None
    assert [e.location for e in store.epochs(session_id)] == ["/p"]  # the audit trail stays


def test_a_compaction_opens_the_new_epoch_with_its_summary(store: Store) -> None:
    session_id = started(store)
    store.enqueue(session_id, Message("user", "one"))
    store.promote(session_id, location="/p")
    store.append(session_id, Message("assistant", "two"))
    record = store.request_compaction(session_id, PendingCompaction("we said one and two", covers_upto=2))
    assert record.compaction == PendingCompaction("we said one and two", 2)
    record = store.start_epoch(
        session_id,
        expected_revision=record.revision,
        location="/p",
        model="echo/echo",
        segments=["fresh"],
        snapshot=SNAP2,
        reason="compaction",
        compaction=record.compaction,
    )
    assert record.compaction is None and record.epoch == 2
    assert record.summary_seq == 3 and record.history_from == 3
    history = store.history(session_id)
    assert [(h.message.kind, h.message.epoch) for h in history] == [("user", 1), ("assistant", 1), ("summary", 2)]
    epochs = store.epochs(session_id)
    assert epochs[1].start_seq == 3 and epochs[1].reason == "compaction"
    assert store.state(session_id).epoch.baseline == "fresh"  # type: ignore[union-attr]


def test_two_connections_see_each_others_writes(store: Store, reopen: Callable[[], Store]) -> None:
    other = reopen()
    session_id = started(store)
    other.enqueue(session_id, Message("user", "from the other one"))
    assert [m.text for m in store.promote(session_id, location="/p")] == ["from the other one"]
    revision = other.session(session_id).revision
    store.admit_update(session_id, expected_revision=revision, epoch=1, text="t", snapshot=SNAP2)
    with pytest.raises(RevisionConflict):
        other.admit_update(session_id, expected_revision=revision, epoch=1, text="t", snapshot=SNAP2)


def _same(store: Store, session_id: str, view: SessionView) -> None:
    """``view`` is exactly what reading the session now gives, through every read method."""
    assert view == store.view(session_id)
    assert view.state == store.state(session_id) and list(view.history) == store.history(session_id)


def test_a_view_after_each_write_is_the_session_as_that_write_left_it(store: Store) -> None:
    session_id = started(store)
    store.enqueue(session_id, Message("user", "first"))
    after = store.view(session_id, after_write=True)
    assert [m.text for m in after.state.pending] == ["first"] and after.history == ()
    _same(store, session_id, after)
    store.promote(session_id, location="/p")
    after = store.view(session_id, after_write=True)
    assert after.state.pending == () and [h.message.text for h in after.history] == ["first"]
    _same(store, session_id, after)
    revision = after.state.session.revision
    store.admit_update(session_id, expected_revision=revision, epoch=1, text="a is two", snapshot=SNAP2)
    after = store.view(session_id, after_write=True)
    assert after.state.epoch is not None and after.state.epoch.snapshot == SNAP2
    assert after.state.session.revision == revision + 1 and after.history[-1].message.text == "a is two"
    _same(store, session_id, after)
    store.append(session_id, Message("assistant", "ok"))
    _same(store, session_id, store.view(session_id, after_write=True))


def test_a_view_after_a_failed_or_foreign_write_is_read_anew(store: Store, reopen: Callable[[], Store]) -> None:
    """Never the view an earlier write left: not after a lost compare-and-swap, not on another thread."""
    other = reopen()
    session_id = started(store)
    revision = store.session(session_id).revision
    store.enqueue(session_id, Message("user", "first"))
    other.append(session_id, Message("assistant", "from elsewhere"))
    with pytest.raises(RevisionConflict):
        store.admit_update(session_id, expected_revision=revision + 5, epoch=1, text="t", snapshot=SNAP2)
    seen = store.view(session_id, after_write=True)
    assert [h.message.text for h in seen.history] == ["from elsewhere"]
    store.enqueue(session_id, Message("user", "second"))
    other.append(session_id, Message("assistant", "later"))
    elsewhere: list[SessionView] = []
    worker = threading.Thread(target=lambda: elsewhere.append(store.view(session_id, after_write=True)))
    worker.start()
    worker.join()
    assert [h.message.text for h in elsewhere[0].history] == ["from elsewhere", "later"]
    _same(store, session_id, elsewhere[0])


def test_a_view_of_an_unknown_session_is_refused(store: Store) -> None:
    with pytest.raises(UnknownSession):
        store.view("nosuchsession")
    with pytest.raises(UnknownSession):
        store.view("nosuchsession", after_write=True)
