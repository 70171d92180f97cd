"""Properties over generated sessions: every request is valid, and each one only appends to the last.

A session is a run of boundaries. At each, the promoted input (user text, or
the results of the previous turn's tool calls) may be followed by one
mid-conversation system message; the request is sent; the model answers with
text, tool calls, both, or nothing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.prompt_cache import AnthropicCache, anthropic_prompt, chat_prompt
from nia_core.providers.anthropic_messages import MAX_BREAKPOINTS, AnthropicMessagesProvider
from nia_core.providers.lowering import LARGE_TEXT, encode_body, encode_parts
from nia_core.providers.openai_chat import OpenAIChatProvider
from nia_core.sessions.messages import Message, ModelRequest, ToolCall
from tests.providers.schemas import validate_chat, validate_messages

TEXT = st.text(alphabet=st.sampled_from("ab <>&/\n\"'é"), min_size=1, max_size=12).filter(lambda t: t.strip())

boundary = st.fixed_dictionaries(
    {
        "user": TEXT,
        "update": st.one_of(st.none(), TEXT),
        "reply": TEXT | st.just(""),
        "calls": st.integers(min_value=0, max_value=2),
        "error": st.booleans(),
    }
)


def requests_of(boundaries: list[dict[str, Any]], model: str) -> list[ModelRequest]:
    """The request sent at each boundary of a generated session."""
    history: list[Message] = []
    sent: list[ModelRequest] = []
    calls: tuple[ToolCall, ...] = ()
    for number, step in enumerate(boundaries):
        if calls:
            history += [Message("tool_result", step["user"], tool_call_id=c.id, is_error=step["error"]) for c in calls]
        else:
            history.append(Message("user", step["user"]))
        if step["update"] is not None:
            history.append(Message("system_update", step["update"]))
        sent.append(ModelRequest("s", model, "baseline <rules> & more", tuple(history)))
        calls = tuple(ToolCall(f"c{number}_{i}", "tool", {"n": i, "s": step["user"]}) for i in range(step["calls"]))
        history.append(Message("assistant", step["reply"], tool_calls=calls))
    return sent


sessions = st.lists(boundary, min_size=1, max_size=8)
fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(sessions)
def test_anthropic_requests_are_valid_and_only_append(boundaries):
    provider = AnthropicMessagesProvider.from_config({}, environ={})
    cache = AnthropicCache(min_tokens=0)
    previous = None
    for request in requests_of(boundaries, "anthropic-messages/claude-x"):
        body = provider.lower(request)
        assert validate_messages(body) == []
        prompt = anthropic_prompt(body)
        assert 1 <= len(prompt.breakpoints) <= MAX_BREAKPOINTS
        for point in prompt.breakpoints:
            assert b"<system-update>" not in prompt.blocks[point], "never a breakpoint on a system update"
        usage = cache.serve(prompt)
        if previous is not None:
            assert prompt.blocks[: len(previous.blocks)] == previous.blocks
            written_to = previous.tokens_to(previous.end_of(max(previous.breakpoints)))
            assert usage.read >= written_to, "the previous request's last breakpoint is read back"
        previous = prompt


@fast
@given(sessions, st.sampled_from(["gpt-4.1", "gpt-5", "llama-3"]))
def test_chat_requests_are_valid_and_only_append(boundaries, model):
    provider = OpenAIChatProvider.from_config({}, environ={})
    previous = None
    for request in requests_of(boundaries, f"openai-chat/{model}"):
        body = provider.lower(request)
        assert validate_chat(body) == []
        prompt = chat_prompt(body)
        if previous is not None:
            assert prompt.blocks[: len(previous.blocks)] == previous.blocks
        previous = prompt


# Texts with everything JSON escapes, beyond the BMP, and long enough to be sent a slice at a time.
LONG_TEXT = (
    st.text(alphabet=st.sampled_from('ab \n\t"\\\x00\x1fé✓😀\u2028<>&'), min_size=1, max_size=40)
    .filter(str.strip)
    .map(lambda piece: piece * (LARGE_TEXT // len(piece) + 3))
)


@fast
@given(sessions, st.one_of(TEXT, LONG_TEXT), st.one_of(st.none(), LONG_TEXT))
def test_the_bytes_sent_are_the_request_encoded_once_exactly(boundaries, baseline, tool_output):
    """What a send puts on the wire (``encode_parts``) is ``encode_body``'s bytes, byte for byte, for both wire
    formats; long texts (a baseline, a file a tool read) go in parts, so neither the whole JSON text nor a
    second copy of the bytes is ever held."""
    providers = [
        (OpenAIChatProvider.from_config({}, environ={}), "openai-chat/gpt-4.1"),
        (AnthropicMessagesProvider.from_config({}, environ={}), "anthropic-messages/claude-x"),
    ]
    for provider, model in providers:
        for request in requests_of(boundaries, model):
            messages = request.messages
            if tool_output is not None:
                messages = (
                    *messages[:-1],
                    Message(
                        messages[-1].kind,
                        tool_output,
                        messages[-1].tool_calls,
                        messages[-1].tool_call_id,
                        messages[-1].is_error,
                    ),
                )
            body = provider.lower(ModelRequest("s", model, baseline, messages))
            parts = encode_parts(body)
            assert b"".join(parts) == encode_body(body)
            assert len(parts) > 1 or len(baseline) < LARGE_TEXT
