"""Provider behaviour the official SDKs and API docs define: refusals, errors in 200s, retries, system turns."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from nia_core.providers.anthropic_messages import AnthropicMessagesProvider
from nia_core.providers.openai_chat import OpenAIChatProvider
from nia_core.providers.remote import RemoteProvider
from nia_core.providers.transport import HttpError, RetryPolicy, retry_after, should_retry
from nia_core.sessions.messages import Message, ModelRequest
from tests.providers.fakeserver import API_KEY, FakeProviderServer
from tests.providers.rawserver import respond, start_stream

CHAT = "openai-chat/gpt-4.1"
CLAUDE = "anthropic-messages/claude-sonnet-4-5"
OPUS_48 = "anthropic-messages/claude-opus-4-8"


def chat(base: str, sleep: Any = None, **table: Any) -> RemoteProvider:
    settings = {"base_url": f"{base}/v1", "api_key": API_KEY, "backoff": 0, **table}
    return OpenAIChatProvider.from_config(settings, environ={}, sleep=sleep)


def claude(base: str, sleep: Any = None, **table: Any) -> RemoteProvider:
    settings = {"base_url": base, "api_key": API_KEY, "backoff": 0, **table}
    return AnthropicMessagesProvider.from_config(settings, environ={}, sleep=sleep)


def req(model: str, *messages: Message) -> ModelRequest:
    return ModelRequest("s-1", model, "Be brief.", messages or (Message("user", "Hello"),))


def sse(*events: dict[str, Any], named: bool = False, done: bool = False) -> bytes:
    out = b""
    for event in events:
        if named:
            out += f"event: {event['type']}\n".encode()
        out += b"data: " + json.dumps(event).encode() + b"\n\n"
    if done:
        out += b"data: [DONE]\n\n"
    return out


def stream_answer(body: bytes) -> Any:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        start_stream(handler)
        handler.wfile.write(body)

    return answer


def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
    }


# -- #14.5: OpenAI refusals ------------------------------------------------------------


def test_an_openai_streamed_refusal_is_shown_and_returned(raw):
    body = sse(
        chunk({"role": "assistant", "content": None, "refusal": ""}),
        chunk({"refusal": "I'm sorry, "}),
        chunk({"refusal": "I can't help with that."}),
        chunk({}, finish="stop"),
        {**chunk({}), "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 7}},
        done=True,
    )
    raw.default = stream_answer(body)
    shown: list[str] = []
    reply = chat(raw.url).send(req(CHAT), stream=shown.append)
    assert shown == ["I'm sorry, ", "I can't help with that."]
    assert reply.text == "I'm sorry, I can't help with that."
    assert reply.refusal and not reply.resets_turn
    assert reply.usage.output_tokens == 7


def test_an_openai_refusal_in_a_plain_reply_is_the_text(raw):
    message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    obj = {
        "id": "c",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    raw.default = lambda h: respond(h, 200, json.dumps(obj).encode())
    reply = chat(raw.url).send(req(CHAT))
    assert reply.text == "I can't help with that." and reply.refusal


# -- #14.6: Anthropic refusals ---------------------------------------------------------

MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [],
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 1},
}


def test_an_anthropic_refusal_in_a_plain_reply_resets_the_turn(raw):
    obj = {**MESSAGE, "content": [{"type": "text", "text": "I can't"}], "stop_reason": "refusal"}
    raw.default = lambda h: respond(h, 200, json.dumps(obj).encode())
    reply = claude(raw.url).send(req(CLAUDE))
    assert reply.refusal and reply.resets_turn and reply.stop_reason == "refusal"


def test_an_anthropic_streamed_refusal_resets_the_turn(raw):
    body = sse(
        {"type": "message_start", "message": MESSAGE},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "refusal", "stop_sequence": None},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
        named=True,
    )
    raw.default = stream_answer(body)
    shown: list[str] = []
    reply = claude(raw.url).send(req(CLAUDE), stream=shown.append)
    assert shown == ["Let me"]
    assert reply.refusal and reply.resets_turn
    assert reply.usage.output_tokens == 3


@pytest.mark.parametrize("streamed", [False, True])
def test_an_ordinary_anthropic_reply_is_not_a_refusal(streamed):
    server = FakeProviderServer().start()
    try:
        reply = claude(server.url).send(req(CLAUDE), stream=(lambda _t: None) if streamed else None)
    finally:
        server.stop()
    assert not reply.refusal and reply.stop_reason == "end_turn"


# -- #14.9: retries and errors as the SDKs do them --------------------------------------


def test_retry_after_ms_wins_over_retry_after(raw):
    raw.then(lambda h: respond(h, 429, b"{}", {"retry-after-ms": "1500", "Retry-After": "9"}))
    raw.then(lambda h: respond(h, 529, b"{}", {"Retry-After": "600"}))  # the Anthropic SDK waits it all
    raw.default = lambda h: respond(
        h, 200, json.dumps({**MESSAGE, "content": [{"type": "text", "text": "ok"}]}).encode()
    )
    waits: list[float] = []
    assert claude(raw.url, sleep=waits.append, backoff=0.25).send(req(CLAUDE)).text == "ok"
    assert waits == [1.5, 600.0]


@pytest.mark.parametrize("status", [500, 520, 522, 524, 529])
def test_every_5xx_including_anthropics_52x_is_retried(raw, status):
    raw.then(lambda h: respond(h, status, b'{"type": "error", "error": {"type": "api_error", "message": "x"}}'))
    raw.default = lambda h: respond(
        h, 200, json.dumps({**MESSAGE, "content": [{"type": "text", "text": "ok"}]}).encode()
    )
    assert claude(raw.url, sleep=lambda _s: None).send(req(CLAUDE)).text == "ok"
    assert len(raw.seen) == 2


def test_x_should_retry_false_stops_a_retry(raw):
    raw.default = lambda h: respond(h, 503, b'{"error": {"message": "no"}}', {"x-should-retry": "false"})
    with pytest.raises(HttpError, match="HTTP 503"):
        chat(raw.url, sleep=lambda _s: None).send(req(CHAT))
    assert len(raw.seen) == 1


def test_x_should_retry_true_retries_any_status(raw):
    raw.then(lambda h: respond(h, 400, b'{"error": {"message": "try again"}}', {"x-should-retry": "true"}))
    reply = chunk({"content": "ok"})
    obj = {
        "id": "c",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    }
    raw.default = lambda h: respond(h, 200, json.dumps(obj).encode())
    assert chat(raw.url, sleep=lambda _s: None).send(req(CHAT)).text == "ok"
    assert len(raw.seen) == 2 and reply


@pytest.mark.parametrize("streamed", [False, True])
def test_an_openai_200_carrying_an_error_object_is_that_error(raw, streamed):
    error = {"error": {"message": "The server is overloaded", "type": "server_error", "code": None}}
    if streamed:
        raw.default = stream_answer(b"data: " + json.dumps(error).encode() + b"\n\n")
    else:
        raw.default = lambda h: respond(h, 200, json.dumps(error).encode())
    with pytest.raises(HttpError, match="server_error: The server is overloaded"):
        chat(raw.url).send(req(CHAT), stream=(lambda _t: None) if streamed else None)


@pytest.mark.parametrize("streamed", [False, True])
def test_openai_cache_write_tokens_are_read(raw, streamed):
    usage = {
        "prompt_tokens": 2000,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 900},
    }
    if streamed:
        body = sse(chunk({"content": "ok"}, finish="stop"), {**chunk({}), "choices": [], "usage": usage}, done=True)
        raw.default = stream_answer(body)
    else:
        message = {"role": "assistant", "content": "ok"}
        obj = {"id": "c", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage}
        raw.default = lambda h: respond(h, 200, json.dumps(obj).encode())
    got = chat(raw.url).send(req(CHAT), stream=(lambda _t: None) if streamed else None).usage
    assert (got.input_tokens, got.cached_input_tokens, got.cache_write_tokens, got.output_tokens) == (
        2000,
        1024,
        900,
        5,
    )


def test_the_retry_rules_match_the_sdks():
    assert [should_retry(s, {}) for s in (400, 401, 404, 408, 409, 429, 500, 529, 599)] == [
        False, False, False, True, True, True, True, True, True
    ]  # fmt: skip
    assert should_retry(429, {"x-should-retry": "false"}) is False
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    policy = RetryPolicy(backoff=0.5, max_backoff=8)
    assert [policy.delay(n, None) for n in (1, 2, 3, 6)] == [0.5, 1.0, 2.0, 8.0]
    assert policy.delay(1, 0) == 0.5 and policy.delay(1, 120) == 120
    assert policy.refuses(121) and not policy.refuses(120), "OpenAI: a longer wait means no retry"
    anthropic = RetryPolicy(backoff=0.5, max_server_wait=None)
    assert anthropic.delay(1, 3600) == 3600 and not anthropic.refuses(3600), "Anthropic: any wait is kept"


# -- #14.7: adjacent system updates never reach the wire ---------------------------------

UPDATES = (
    Message("user", "Hello"),
    Message("system_update", "The date is now Tuesday."),
    Message("system_update", "AGENTS.md changed: be terse."),
)


def test_openai_native_updates_in_a_row_are_one_system_message(raw):
    body = OpenAIChatProvider.from_config({}, environ={}).lower(req(CHAT, *UPDATES))
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "system"]
    assert body["messages"][-1]["content"] == "The date is now Tuesday.\n\nAGENTS.md changed: be terse."


def test_anthropic_native_updates_in_a_row_are_one_system_turn_the_schema_accepts():
    server = FakeProviderServer().start()
    try:
        provider = claude(server.url)
        body = provider.lower(req(OPUS_48, *UPDATES))
        assert [t["role"] for t in body["messages"]] == ["user", "system"]
        assert [b["text"] for b in body["messages"][1]["content"]] == [
            "The date is now Tuesday.",
            "AGENTS.md changed: be terse.",
        ]
        provider.send(req(OPUS_48, *UPDATES))
        after_reply = (*UPDATES, Message("assistant", "Ok."), Message("system_update", "Now Wednesday."))
        lowered = provider.lower(req(OPUS_48, *after_reply, Message("user", "Go on")))
        assert [t["role"] for t in lowered["messages"]] == ["user", "system", "assistant", "user"], (
            "after an assistant turn the placement rule forbids a system turn: wrapped fallback"
        )
        assert "<system-update>" in lowered["messages"][3]["content"][0]["text"]
        provider.send(req(OPUS_48, *after_reply, Message("user", "Go on")))
        assert server.problems == []
    finally:
        server.stop()


def test_models_before_opus_4_8_keep_the_wrapped_fallback():
    body = AnthropicMessagesProvider.from_config({}, environ={}).lower(req(CLAUDE, *UPDATES))
    assert [t["role"] for t in body["messages"]] == ["user"]
    assert [b["text"].startswith("<system-update>") for b in body["messages"][0]["content"]] == [False, True, True]
