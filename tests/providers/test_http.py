"""The real HTTP providers against the fake API: replies, streaming, caching, retries and failures."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nia_core.errors import NiaError
from nia_core.providers.anthropic_messages import AnthropicMessagesProvider
from nia_core.providers.lowering import encode_body
from nia_core.providers.names import ProviderError
from nia_core.providers.openai_chat import OpenAIChatProvider, prompt_cache_key
from nia_core.providers.remote import RemoteProvider
from nia_core.providers.transport import HttpError
from nia_core.sessions.messages import Message, ModelRequest, ToolCall
from tests.providers.fakeserver import API_KEY, FakeProviderServer

BASELINE = "\n\n".join(
    f"## Rule {n}\nAlways keep module {n} small, typed and documented; prefer pure functions and clear names."
    for n in range(120)
)
CHAT = "openai-chat/gpt-4.1"
CLAUDE = "anthropic-messages/claude-sonnet-4-5"


def chat(server: FakeProviderServer, sleep: Any = None, **table: Any) -> RemoteProvider:
    settings = {"base_url": f"{server.url}/v1", "api_key": API_KEY, "backoff": 0, **table}
    return OpenAIChatProvider.from_config(settings, environ={}, sleep=sleep)


def claude(server: FakeProviderServer, sleep: Any = None, **table: Any) -> RemoteProvider:
    settings = {"base_url": server.url, "api_key": API_KEY, "backoff": 0, **table}
    return AnthropicMessagesProvider.from_config(settings, environ={}, sleep=sleep)


def request(model: str, *messages: Message, session: str = "s-1") -> ModelRequest:
    return ModelRequest(session, model, BASELINE, messages or (Message("user", "Hello"),))


PROVIDERS = [pytest.param(chat, CHAT, id="openai-chat"), pytest.param(claude, CLAUDE, id="anthropic-messages")]


@pytest.mark.parametrize(("make", "model"), PROVIDERS)
def test_plain_reply_is_read_and_the_request_matches_the_documented_schema(server, make, model):
    reply = make(server).send(request(model))
    assert reply.text in ("Hello! How can I assist you today?", "Hi! My name is Claude.")
    assert reply.tool_calls == ()
    assert reply.usage.input_tokens > 1000
    assert server.problems == []
    assert server.last().status == 200


@pytest.mark.parametrize(("make", "model"), PROVIDERS)
def test_streamed_text_reaches_the_callback_in_order(server, make, model):
    pieces: list[str] = []
    reply = make(server).send(request(model), stream=pieces.append)
    assert pieces == ["Hello", "! How can", " I help?"]
    assert reply.text == "Hello! How can I help?"
    assert reply.usage.input_tokens > 1000
    assert server.last().body["stream"] is True
    assert server.problems == []


@pytest.mark.parametrize(("make", "model"), PROVIDERS)
@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_tool_calls_in_the_reply_become_tool_calls(server, make, model, streamed):
    server.reply_with("tool")
    reply = make(server).send(request(model), stream=(lambda _text: None) if streamed else None)
    assert len(reply.tool_calls) == 1
    assert reply.tool_calls[0].name == "read_file"
    assert reply.tool_calls[0].arguments == {"path": "docs/intro.md"}


@pytest.mark.parametrize(("make", "model"), PROVIDERS)
def test_a_tool_round_trip_is_accepted_by_the_schema(server, make, model):
    provider = make(server)
    history = (
        Message("user", "Read the intro"),
        Message("assistant", "Reading.", tool_calls=(ToolCall("call_1", "read_file", {"path": "docs/intro.md"}),)),
        Message("tool_result", "# Intro\nnia is a framework.", tool_call_id="call_1"),
        Message("system_update", "The date is now Tuesday, 2025-06-03."),
    )
    provider.send(request(model, *history))
    failed = Message("tool_result", "boom", tool_call_id="call_1", is_error=True)
    provider.send(request(model, *history[:2], failed))
    assert [r.status for r in server.received] == [200, 200]
    assert server.problems == []


def test_anthropic_reports_cache_reads_of_the_previous_requests_prefix(server):
    provider = claude(server)
    first = (Message("user", "Hello"),)
    reply1 = provider.send(request(CLAUDE, *first))
    assert reply1.usage.cached_input_tokens == 0
    assert reply1.usage.cache_write_tokens > 1000
    second = (*first, Message("assistant", reply1.text), Message("user", "And then?"))
    reply2 = provider.send(request(CLAUDE, *second))
    assert reply2.usage.cached_input_tokens >= reply1.usage.cache_write_tokens
    third = (*second, Message("assistant", "More."), Message("user", "Go on"), Message("system_update", "New date."))
    reply3 = provider.send(request(CLAUDE, *third))
    assert reply3.usage.cached_input_tokens >= reply2.usage.cached_input_tokens
    assert server.problems == []


def test_a_changed_system_prompt_is_served_from_no_cache(server):
    provider = claude(server)
    provider.send(request(CLAUDE))
    changed = ModelRequest("s-1", CLAUDE, "Today is Monday.\n\n" + BASELINE, (Message("user", "Hello"),))
    assert provider.send(changed).usage.cached_input_tokens == 0


def test_openai_reports_cached_tokens_for_the_same_prompt_cache_key(server):
    provider = chat(server)
    provider.send(request(CHAT))
    again = provider.send(request(CHAT, Message("user", "Hello"), Message("assistant", "Hi"), Message("user", "More")))
    assert again.usage.cached_input_tokens >= 1024
    assert (again.usage.cached_input_tokens - 1024) % 128 == 0
    other_session = provider.send(request(CHAT, session="s-2"))
    assert other_session.usage.cached_input_tokens == 0
    keys = {r.body["prompt_cache_key"] for r in server.received}
    assert keys == {prompt_cache_key("s-1"), prompt_cache_key("s-2")}


# -- failures ----------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "model"), PROVIDERS)
@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_429_is_retried_with_backoff_honouring_retry_after(server, make, model, streamed):
    waits: list[float] = []
    shown: list[str] = []
    server.fail(429, headers={"Retry-After": "3"})
    server.fail(503)
    reply = make(server, sleep=waits.append, backoff=0.25).send(
        request(model), stream=shown.append if streamed else None
    )
    assert reply.text
    assert "".join(shown) == (reply.text if streamed else "")
    assert waits == [3.0, 0.5]
    assert [r.status for r in server.received] == [429, 503, 200]


@pytest.mark.parametrize(("make", "model"), PROVIDERS)
def test_5xx_past_the_retry_budget_is_one_clear_error(server, make, model):
    waits: list[float] = []
    server.fail(500, times=3, body=b'{"error": {"message": "The server had an error"}}')
    with pytest.raises(HttpError) as caught:
        make(server, sleep=waits.append, max_retries=2).send(request(model))
    message = str(caught.value)
    assert "HTTP 500" in message
    assert "The server had an error" in message
    assert "after 3 attempts" in message
    assert len(waits) == 2
    assert caught.value.status == 500


def test_401_says_which_variable_holds_the_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    with pytest.raises(HttpError) as caught:
        OpenAIChatProvider().send(request(CHAT))
    message = str(caught.value)
    assert message.startswith("openai-chat: HTTP 401")
    assert "authentication failed (check OPENAI_API_KEY)" in message
    assert "Incorrect API key provided." in message
    assert len(server.received) == 1, "401 is not retried"


def test_a_missing_anthropic_key_says_to_set_the_variable(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    with pytest.raises(HttpError, match=r"authentication failed \(set ANTHROPIC_API_KEY\).*invalid x-api-key"):
        AnthropicMessagesProvider().send(request(CLAUDE))


def test_environment_variables_choose_url_and_key(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    assert AnthropicMessagesProvider().send(request(CLAUDE)).text == "Hi! My name is Claude."
    assert server.last().headers["x-api-key"] == API_KEY
    assert server.last().headers["anthropic-version"] == "2023-06-01"


def test_config_names_another_key_variable(server, monkeypatch):
    monkeypatch.setenv("LOCAL_LLM_KEY", API_KEY)
    provider = OpenAIChatProvider.from_config({"base_url": f"{server.url}/v1", "api_key_env": "LOCAL_LLM_KEY"})
    assert provider.send(request(CHAT)).text
    assert server.last().headers["authorization"] == f"Bearer {API_KEY}"


@pytest.mark.parametrize(
    ("make", "model", "said"),
    [
        pytest.param(chat, "openai-chat/gpt-9", "The model `gpt-9` does not exist", id="openai-chat"),
        pytest.param(claude, "anthropic-messages/claude-9", "model: claude-9", id="anthropic-messages"),
    ],
)
def test_404_for_an_unknown_model_names_it(server, make, model, said):
    with pytest.raises(HttpError) as caught:
        make(server).send(request(model))
    assert "HTTP 404" in str(caught.value)
    assert "check the base URL and the model name" in str(caught.value)
    assert said in str(caught.value)


def test_404_for_a_wrong_base_url(server):
    provider = OpenAIChatProvider.from_config({"base_url": f"{server.url}/wrong", "api_key": API_KEY})
    with pytest.raises(HttpError, match=r"HTTP 404 .* from http://127\.0\.0\.1:\d+/wrong/chat/completions"):
        provider.send(request(CHAT))


@pytest.mark.parametrize(("make", "model"), PROVIDERS)
def test_a_body_that_is_not_json_is_a_clear_error(server, make, model):
    server.garbage(b"<html><body>502 Bad Gateway</body></html>")
    with pytest.raises(HttpError, match=r"invalid response from .*: not JSON: <html><body>502 Bad Gateway"):
        make(server).send(request(model))


def test_json_of_the_wrong_shape_is_a_clear_error(server):
    server.garbage(b'{"choices": []}', content_type="application/json")
    with pytest.raises(HttpError, match=r"invalid response .*: no choices"):
        chat(server).send(request(CHAT))
    server.garbage(b"[1, 2]", content_type="application/json")
    with pytest.raises(HttpError, match="expected a JSON object, got list"):
        claude(server).send(request(CLAUDE))


@pytest.mark.parametrize(("make", "model"), PROVIDERS)
def test_a_timeout_is_retried_then_reported(server, make, model):
    server.delay(5, times=2)
    with pytest.raises(HttpError, match=r"timed out after 0\.2s \(after 2 attempts\)"):
        make(server, timeout=0.2, max_retries=1).send(request(model))


def test_a_slow_first_attempt_is_retried_and_succeeds(server):
    server.delay(5)
    reply = claude(server, timeout=0.2, max_retries=1).send(request(CLAUDE))
    assert reply.text == "Hi! My name is Claude."


def test_a_dropped_connection_is_retried(server):
    server.drop()
    assert chat(server).send(request(CHAT)).text
    assert len(server.received) == 2


def test_connection_refused_is_reported_after_retries():
    provider = OpenAIChatProvider.from_config({"base_url": "http://127.0.0.1:9/v1", "backoff": 0, "max_retries": 1})
    with pytest.raises(HttpError, match=r"cannot reach http://127\.0\.0\.1:9/v1/chat/completions: connection refused"):
        provider.send(request(CHAT))


@pytest.mark.parametrize(("make", "model"), PROVIDERS)
def test_a_stream_cut_short_is_an_error_not_a_partial_reply(server, make, model):
    server.cut_stream()
    shown: list[str] = []
    with pytest.raises(HttpError, match="the stream ended before"):
        make(server).send(request(model), stream=shown.append)
    assert len(server.received) == 1, "a stream is never retried once it started"


def test_an_error_event_in_a_stream_is_reported(server):
    body = b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    server.garbage(body, content_type="text/event-stream")
    with pytest.raises(HttpError, match="reported an error: overloaded_error: Overloaded"):
        claude(server).send(request(CLAUDE), stream=lambda _t: None)


def test_a_stream_request_answered_with_json_is_reported(server):
    server.garbage(json.dumps({"error": {"message": "streaming is off"}}).encode(), content_type="application/json")
    with pytest.raises(HttpError, match=r"expected an event stream .* streaming is off"):
        chat(server).send(request(CHAT), stream=lambda _t: None)


def test_provider_errors_are_nia_errors_with_one_line_messages(server):
    server.fail(400, body=b'{"error": {"message": "bad\\nthing"}}')
    with pytest.raises(ProviderError) as caught:
        chat(server).send(request(CHAT))
    assert isinstance(caught.value, NiaError)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(("make", "model"), PROVIDERS)
def test_a_long_baseline_arrives_byte_for_byte_with_its_length_not_chunked(server, make, model, streamed):
    """A baseline of megabytes is sent in parts (never copied into one text and one bytes object): the server
    gets exactly the bytes of the request encoded at once, with a Content-Length, as any body."""
    baseline = 'Ünïcödé ✓ "quoted" \\ and\ttabs\n' * 40_000  # about 1.3 MB
    provider = make(server)
    sent = ModelRequest("s-long", model, baseline, (Message("user", "Hello"),))
    provider.send(sent, stream=(lambda _text: None) if streamed else None)
    received = server.last()
    expected = provider.streaming_body(provider.lower(sent)) if streamed else provider.lower(sent)
    assert received.raw == encode_body(expected) and len(received.raw) > 1_000_000
    assert received.headers["content-length"] == str(len(received.raw))
    assert "transfer-encoding" not in received.headers
    assert server.problems == []
