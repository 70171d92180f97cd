"""Compaction never separates a tool call from its results."""

from __future__ import annotations

from nia_core.providers.builtin import get_provider
from nia_core.sessions import Contexts, Message, Store, ToolCall, compact

from .session_checks import problems
from .session_doubles import RecordingProvider
from .session_world import World
from .test_session_epochs import P, kinds, turn


def test_compaction_keeps_a_pending_tool_exchange_verbatim(store: Store) -> None:
    world = World()
    world.set(P, "acme/a", 1)
    provider = RecordingProvider(world.log)
    session_id = store.create_session(P, "anthropic-messages/claude-sonnet-4-5").id
    turn(store, world, provider, session_id, "one")
    provider.calls = (ToolCall("call-1", "grep", {"pattern": "TODO"}),)
    turn(store, world, provider, session_id, "two")
    store.enqueue(session_id, Message("tool_result", text="3 matches", tool_call_id="call-1"))

    compact(store, session_id, Contexts(world.context_for))
    turn(store, world, provider, session_id, None)

    request = provider.requests[-1]
    assert kinds(request.messages) == ["summary", "user", "assistant", "tool_result"]
    assert request.messages[2].tool_calls[0].id == "call-1"
    assert request.messages[3].tool_call_id == "call-1"
    assert "- User: one" in request.messages[0].text
    assert "two" not in request.messages[0].text
    body = get_provider("anthropic-messages/claude-sonnet-4-5").lower(request)  # raises on a split exchange
    assert body["messages"][-1]["content"][0]["type"] == "tool_result"
    assert problems(store, session_id) == []
