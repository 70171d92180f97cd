"""The official SDKs' own rules (anthropic 2.15.0, openai 3.57.0), against their fixtures' bytes on 127.0.0.1.

Retry-After bounds and ``x-should-retry`` as each SDK's ``_base_client`` reads
them; usage only from chunk objects, and a reply without usage unpriced;
choice 0 of a stream with several; event streams with CR, LF or CRLF endings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from nia_core.cli import cli
from nia_core.model import ModelRequest
from nia_core.providers.anthropic_messages import AnthropicMessagesProvider
from nia_core.providers.openai_chat import OpenAIChatProvider
from nia_core.providers.remote import RemoteProvider
from nia_core.providers.transport import HttpError
from nia_core.sessions.messages import Message
from tests.providers.fakeserver import API_KEY
from tests.providers.rawserver import RawServer, respond
from tests.providers.sdk_streams import anthropic, chunked, close_delimited, openai_chunk, openai_stream, openai_usage

CLAUDE = "anthropic-messages/claude-sonnet-4-5"
GPT = "openai-chat/gpt-4.1"
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 1},
}
COMPLETION = {
    "id": "chatcmpl-example",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o-2024-08-06",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}


def chat(base: str, waits: list[float] | None = None, **table: Any) -> RemoteProvider:
    settings = {"base_url": f"{base}/v1", "api_key": API_KEY, "backoff": 0.25, **table}
    return OpenAIChatProvider.from_config(settings, environ={}, sleep=(waits.append if waits is not None else None))


def claude(base: str, waits: list[float] | None = None, **table: Any) -> RemoteProvider:
    settings = {"base_url": base, "api_key": API_KEY, "backoff": 0.25, **table}
    return AnthropicMessagesProvider.from_config(
        settings, environ={}, sleep=(waits.append if waits is not None else None)
    )


def req(model: str) -> ModelRequest:
    return ModelRequest("s-1", model, "Be brief.", (Message("user", "Hello"),))


def ok(body: dict[str, Any]) -> Any:
    return lambda h: respond(h, 200, json.dumps(body).encode())


# -- #30.4: Retry-After, each provider by its own SDK -----------------------------------


@pytest.mark.parametrize("header", [{"Retry-After": "300"}, {"retry-after-ms": "121000"}, {"Retry-After": "1e999"}])
def test_openai_gives_up_when_the_server_asks_to_wait_longer_than_120_seconds(raw, header):
    raw.then(lambda h: respond(h, 429, b'{"error": {"message": "slow down"}}', header))
    raw.default = ok(COMPLETION)
    waits: list[float] = []
    with pytest.raises(HttpError, match=r"HTTP 429 .*slow down; no retry: the server asked to wait [\d,]+s"):
        chat(raw.url, waits).send(req(GPT))
    assert waits == [] and len(raw.seen) == 1


@pytest.mark.parametrize(("header", "wait"), [({"Retry-After": "120"}, 120.0), ({"retry-after-ms": "2500"}, 2.5)])
def test_openai_waits_what_the_server_asks_up_to_120_seconds(raw, header, wait):
    raw.then(lambda h: respond(h, 503, b"{}", header))
    raw.default = ok(COMPLETION)
    waits: list[float] = []
    assert chat(raw.url, waits).send(req(GPT)).text == "ok"
    assert waits == [wait]


@pytest.mark.parametrize(("header", "wait"), [({"Retry-After": "300"}, 300.0), ({"retry-after-ms": "600000"}, 600.0)])
def test_anthropic_waits_the_full_time_the_server_asks(raw, header, wait):
    raw.then(
        lambda h: respond(h, 529, b'{"type": "error", "error": {"type": "overloaded_error", "message": "x"}}', header)
    )
    raw.default = ok(MESSAGE)
    waits: list[float] = []
    assert claude(raw.url, waits).send(req(CLAUDE)).text == "ok"
    assert waits == [wait]


def test_anthropic_starts_no_wait_its_deadline_would_cut_off(raw):
    raw.default = lambda h: respond(h, 429, b"{}", {"Retry-After": "3000"})
    waits: list[float] = []
    with pytest.raises(HttpError, match=r"HTTP 429 .*no retry: the call's 1800s deadline would pass first"):
        claude(raw.url, waits).send(req(CLAUDE))
    assert waits == []


# -- #30.5: x-should-retry compared exactly ---------------------------------------------


@pytest.mark.parametrize("value", ["True", "TRUE", "yes", "1"])
def test_x_should_retry_other_than_exactly_true_does_not_force_a_retry(raw, value):
    raw.then(lambda h: respond(h, 400, b'{"error": {"message": "bad"}}', {"x-should-retry": value}))
    raw.default = ok(COMPLETION)
    with pytest.raises(HttpError, match="HTTP 400"):
        chat(raw.url, []).send(req(GPT))
    assert len(raw.seen) == 1


@pytest.mark.parametrize("value", ["False", "FALSE", "no"])
def test_x_should_retry_other_than_exactly_false_does_not_stop_a_retry(raw, value):
    raw.then(lambda h: respond(h, 503, b"{}", {"x-should-retry": value}))
    raw.default = ok(MESSAGE)
    assert claude(raw.url, []).send(req(CLAUDE)).text == "ok"
    assert len(raw.seen) == 2


# -- #30.6: a reply without usage is unpriced, and stats counts it ----------------------


def nia(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_an_openai_stream_without_usage_is_an_unpriced_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw):
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    monkeypatch.setenv("OPENAI_BASE_URL", f"{raw.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.chdir(tmp_path)
    # As the SDK's own test streams it: content chunks, a finish chunk, [DONE]; no usage chunk at all.
    raw.default = chunked(
        openai_stream([openai_chunk({"role": "assistant", "content": "ok"}), openai_chunk({}, "stop")])
    )
    session = nia("session", "new", "--model", GPT).output.strip()
    sent = nia("session", "send", session, "hello")
    assert sent.exit_code == 0 and sent.stdout == "ok\n" and sent.stderr == "", "no usage line: none was reported"
    data = json.loads(nia("session", "stats", session, "--json").stdout)
    assert (data["turns"], data["turns_with_usage"], data["turns_without_usage"]) == (1, 0, 1)
    assert data["cost"]["estimated"] is None and data["cost"]["priced_turns"] == 0
    assert "turns: 1 (1 without usage" in nia("session", "stats", session).stdout
    reply = json.loads(nia("session", "show", session, "--json").stdout)["messages"][-1]["reply"]
    assert reply["usage"] is None
    assert "no usage reported (unpriced)" in nia("session", "show", session).stdout


# -- #30.7: choice 0 of a stream with several -------------------------------------------


def test_a_stream_with_several_choices_is_read_as_choice_0(raw):
    events = []
    for word in ('{"', "city", '": "', "Paris", '"}'):
        for index in range(3):
            events.append(openai_chunk({"content": word if index == 0 else word.upper()}, index=index))
    events += [openai_chunk({}, "stop", index=index) for index in range(3)]
    raw.default = chunked(openai_stream([*events, openai_usage()]))
    shown: list[str] = []
    reply = chat(raw.url).send(req(GPT), stream=shown.append)
    assert reply.text == '{"city": "Paris"}' and "".join(shown) == reply.text


# -- #30.8: usage only from chunk objects -----------------------------------------------


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({"id": "", "object": "", "created": 0, "model": "", "choices": []}, id="azure-filter-notice"),
        pytest.param({"id": "x", "object": "chat.completion", "choices": []}, id="a-completion-object"),
        pytest.param({}, id="no-object-at-all"),
    ],
)
def test_usage_is_taken_only_from_chat_completion_chunks(raw, other):
    azure_filter = {**other, "usage": {"prompt_tokens": 999, "completion_tokens": 999}}
    stream = openai_stream(
        [
            openai_chunk({"role": "assistant", "content": "ok"}),
            openai_chunk({}, "stop"),
            openai_usage(7, 2),
            azure_filter,
        ]
    )
    raw.default = chunked(stream)
    usage = chat(raw.url).send(req(GPT), stream=lambda _t: None).usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (7, 2)


def test_content_in_an_event_that_is_not_a_chunk_is_skipped(raw):
    notice = {**openai_chunk({"content": " [filtered]"}), "object": ""}
    raw.default = chunked(
        openai_stream([openai_chunk({"content": "ok"}), notice, openai_chunk({}, "stop"), openai_usage()])
    )
    assert chat(raw.url).send(req(GPT), stream=lambda _t: None).text == "ok"


# -- #30.9: CR, LF and CRLF line endings ------------------------------------------------


def with_endings(body: bytes, ending: bytes) -> bytes:
    return body.replace(b"\r\n", b"\n").replace(b"\n", ending)


@pytest.mark.parametrize("ending", [b"\r", b"\r\n", b"\n"], ids=["CR", "CRLF", "LF"])
@pytest.mark.parametrize("size", [1, 5, 97, 65536])
def test_anthropic_events_with_any_line_ending_read_the_same(raw: RawServer, ending, size):
    raw.default = chunked(with_endings(anthropic("tool_use_response"), ending), size=size)
    reply = claude(raw.url).send(req(CLAUDE), stream=lambda _t: None)
    assert reply.text == "I'll check the current weather in Paris for you."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("get_weather", {"location": "Paris"})]
    assert reply.usage is not None and reply.usage.output_tokens == 65


@pytest.mark.parametrize("ending", [b"\r", b"\r\n"], ids=["CR", "CRLF"])
def test_openai_events_with_cr_or_crlf_endings_read_the_same(raw: RawServer, ending):
    stream = openai_stream([openai_chunk({"content": "Hello"}), openai_chunk({}, "stop"), openai_usage(4, 1)])
    raw.default = close_delimited(with_endings(stream, ending))
    reply = chat(raw.url).send(req(GPT), stream=lambda _t: None)
    assert reply.text == "Hello" and reply.usage is not None and reply.usage.input_tokens == 4
