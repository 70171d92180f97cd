"""A long session's request is projected from where the last projection could no longer change (#28 goal 1).

The projection of a store's log is remembered up to its last reply; a turn
projects what came after. Over generated histories (refusals, tool calls and
their results out of order, updates of several epochs, summaries, empty input),
grown a few messages at a time as a session grows, the request is always the
one projecting the whole history from scratch gives.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nia_core.model import Message, ToolCall
from nia_core.sessions.histories import Prefix
from nia_core.sessions.projection import project
from nia_core.sessions.store import SessionRecord

step = st.one_of(
    st.tuples(st.just("user"), st.sampled_from(["hi", "", "  ", "more"])),
    st.tuples(st.just("assistant"), st.sampled_from(["ok", "calls", "refused"])),
    st.tuples(st.just("tool_result"), st.sampled_from(["c1", "c2", "c9"])),
    st.tuples(st.just("system_update"), st.sampled_from(["1", "2"])),
    st.tuples(st.just("summary"), st.just("")),
)


def message(kind: str, what: str, seq: int) -> Message:
    if kind == "assistant" and what == "calls":
        return Message("assistant", "", (ToolCall("c1", "t", {}), ToolCall("c2", "t", {})), seq=seq, epoch=1)
    if kind == "assistant":
        return Message("assistant", what, seq=seq, epoch=1, refused=what == "refused")
    if kind == "tool_result":
        return Message("tool_result", f"result {what}", tool_call_id=what, seq=seq, epoch=1)
    if kind == "system_update":
        return Message("system_update", f"update {seq}", seq=seq, epoch=int(what))
    return Message(kind, what or f"{kind} {seq}" if kind == "summary" else what, seq=seq, epoch=1)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(step, min_size=1, max_size=6), min_size=1, max_size=12),
    st.lists(st.tuples(st.integers(0, 8), st.sampled_from([None, 3, 5]), st.sampled_from([1, 2])), min_size=1),
)
def test_a_growing_history_projects_as_the_whole_of_it_does(turns, keys):
    log: list[Message] = []
    for number, turn in enumerate(turns):
        for kind, what in turn:
            log.append(message(kind, what, len(log) + 1))
        history_from, summary_seq, epoch = keys[number % len(keys)]
        session = SessionRecord("s", "/p", "echo/echo", "", 1, epoch, history_from, summary_seq)
        assert project(session, epoch, Prefix(log, len(log))) == project(session, epoch, tuple(log))
        shorter = len(log) // 2  # an older read of the same log, as another thread may hold
        assert project(session, epoch, Prefix(log, shorter)) == project(session, epoch, tuple(log[:shorter]))
