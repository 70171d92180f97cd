"""A cut stream is never stored as a reply, no session is ever stuck, the deadline bounds every byte.

Every server here sends the official SDKs' own fixtures (``sdk_streams``),
whole, cut at the transport (chunked framing, ``Content-Length``, a closed
connection) or cut by the protocol, on 127.0.0.1.
"""

from __future__ import annotations

import json
import sqlite3
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from nia_core.cli import cli
from nia_core.model import ModelRequest
from nia_core.providers.anthropic_messages import AnthropicMessagesProvider
from nia_core.providers.openai_chat import OpenAIChatProvider
from nia_core.providers.transport import HttpError
from nia_core.sessions.messages import Message
from tests.providers.fakeserver import API_KEY
from tests.providers.rawserver import RawServer
from tests.providers.schemas import validate_chat, validate_messages
from tests.providers.sdk_streams import (
    anthropic,
    chunked,
    close_delimited,
    openai_chunk,
    openai_stream,
    openai_usage,
    with_length,
)

CLAUDE = "anthropic-messages/claude-sonnet-4-5"
GPT = "openai-chat/gpt-4.1"
BASIC_TEXT = "Hello there!"


def nia(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: RawServer) -> Path:
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    (root / ".nia" / "project.toml").write_text(
        "[providers.anthropic-messages]\nbackoff = 0\n[providers.openai-chat]\nbackoff = 0\n"
    )
    (root / "AGENTS.md").write_text("Be brief.\n")
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", raw.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{raw.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.chdir(root)
    return root


def new_session(model: str) -> str:
    result = nia("session", "new", "--model", model)
    assert result.exit_code == 0, result.output
    return result.output.strip()


def shown(session: str) -> dict[str, Any]:
    result = nia("session", "show", session, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def kinds(session: str) -> list[str]:
    return [m["kind"] for m in shown(session)["messages"]]


def sent_bodies(raw: RawServer) -> list[dict[str, Any]]:
    return [json.loads(seen.body) for seen in raw.seen]


def sendable(body: dict[str, Any]) -> list[str]:
    """What the provider's documented schema says about a request body nia sent (empty: accepted)."""
    return validate_messages(body) if "max_tokens" in body and "system" in body else validate_chat(body)


OPENAI_WHOLE = openai_stream(
    [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "Hello"}),
        openai_chunk({"content": " there!"}),
        openai_chunk({}, "stop"),
        openai_usage(9, 3),
    ]
)
FINISH_END = OPENAI_WHOLE.index(b'"choices": []') - OPENAI_WHOLE[: OPENAI_WHOLE.index(b'"choices": []')][::-1].index(
    b"\n\n"
)
"""Where the usage chunk starts: everything before it is the reply up to its finish chunk."""


# -- #30.1: truncation at the transport and at the protocol ----------------------------


@pytest.mark.parametrize(
    "serve",
    [
        pytest.param(lambda: chunked(OPENAI_WHOLE, cut_after=FINISH_END + 20), id="chunked-framing-cut"),
        pytest.param(lambda: close_delimited(OPENAI_WHOLE[:FINISH_END]), id="closed-before-usage-chunk"),
        pytest.param(lambda: with_length(OPENAI_WHOLE[:FINISH_END], declared=len(OPENAI_WHOLE)), id="content-length"),
    ],
)
def test_an_openai_stream_cut_after_its_finish_chunk_is_never_stored_as_a_reply(project, raw, serve):
    session = new_session(GPT)
    raw.then(serve())
    result = nia("session", "send", session, "hello")
    assert result.exit_code == 1
    assert "nothing of this reply is stored" in result.output and "the input is kept" in result.output
    assert kinds(session) == ["user"], "no reply with usage 0/0/0/0 is stored"
    assert len(raw.seen) == 1, "text was shown: no retry"
    raw.then(chunked(OPENAI_WHOLE))
    again = nia("session", "send", session)
    assert again.exit_code == 0, again.output
    assert shown(session)["messages"][-1]["reply"]["usage"]["input_tokens"] == 9


@pytest.mark.parametrize(
    "cut",
    [
        pytest.param(lambda body: chunked(body, cut_after=0), id="chunked-before-any-byte"),
        pytest.param(lambda body: chunked(body, cut_after=60), id="chunked-inside-the-first-event"),
        pytest.param(lambda body: close_delimited(body, cut_after=60), id="closed-inside-the-first-event"),
        pytest.param(lambda body: with_length(body[:60], declared=len(body)), id="content-length"),
    ],
)
def test_an_anthropic_stream_cut_before_its_first_event_is_retried(project, raw, cut):
    body = anthropic("basic_response")
    session = new_session(CLAUDE)
    raw.then(cut(body))
    raw.then(close_delimited(body))
    result = nia("session", "send", session, "hello")
    assert result.exit_code == 0, result.output
    assert result.stdout == BASIC_TEXT + "\n"
    assert len(raw.seen) == 2 and raw.seen[0].body == raw.seen[1].body
    assert kinds(session) == ["user", "assistant"]


@pytest.mark.parametrize(
    ("serve", "said"),
    [
        pytest.param(chunked, "bytes before its last chunk (chunked framing)", id="transport"),
        pytest.param(close_delimited, "the stream ended before message_stop", id="protocol"),
    ],
)
def test_an_anthropic_stream_cut_before_message_stop_is_an_error_and_not_retried(project, raw, serve, said):
    body = anthropic("basic_response")
    cut_at = body.index(b"event: message_delta")
    session = new_session(CLAUDE)
    raw.then(serve(body, cut_after=cut_at))
    result = nia("session", "send", session, "hello")
    assert result.exit_code == 1
    assert result.stdout == "Hello there!\n", "the text shown so far ends its line before the error"
    assert f"{said}; nothing of this reply is stored" in result.stderr
    assert len(raw.seen) == 1
    assert kinds(session) == ["user"]


@pytest.mark.parametrize(
    "serve",
    [
        pytest.param(chunked, id="chunked"),
        pytest.param(close_delimited, id="close-delimited"),
        pytest.param(with_length, id="content-length"),
    ],
)
@pytest.mark.parametrize("fixture", ["basic_response", "tool_use_response"])
def test_the_sdk_fixtures_whole_are_whole_replies_however_framed(raw, serve, fixture):
    """The SDK fixtures end without a blank line after message_stop: a whole body, not a cut one."""
    raw.default = serve(anthropic(fixture))
    provider = AnthropicMessagesProvider.from_config({"base_url": raw.url, "api_key": API_KEY}, environ={})
    reply = provider.send(ModelRequest("s", CLAUDE, "Be brief.", (Message("user", "Hi"),)), stream=lambda _t: None)
    assert reply.stop_reason in ("end_turn", "tool_use")
    assert len(raw.seen) == 1


# -- #23.18: the deadline bounds the whole call, whatever the server sends -------------


def trickle(raw: RawServer, prefix: bytes, byte: bytes = b"x") -> Any:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(prefix)
        handler.wfile.flush()
        while not raw.stop_event.wait(0.2):
            handler.wfile.write(byte)
            handler.wfile.flush()

    return answer


STREAM_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


@pytest.mark.parametrize(
    ("prefix", "byte"),
    [
        pytest.param(STREAM_HEAD + b"\r\ndata: ", b"x", id="inside-an-event-line"),
        pytest.param(b"HTTP/1.1 200 ", b"O", id="inside-the-status-line"),
        pytest.param(STREAM_HEAD + b"X-Slow: ", b"x", id="inside-a-header"),
        pytest.param(STREAM_HEAD + b"Transfer-Encoding: chunked\r\n\r\n", b"0", id="inside-a-chunk-size"),
        pytest.param(STREAM_HEAD + b"\r\n", b":\n", id="keep-alive-comments"),
    ],
)
@pytest.mark.parametrize("make", [OpenAIChatProvider, AnthropicMessagesProvider])
def test_a_server_trickling_a_byte_at_a_time_ends_at_the_deadline(raw, prefix, byte, make):
    raw.default = trickle(raw, prefix, byte)
    base = f"{raw.url}/v1" if make is OpenAIChatProvider else raw.url
    provider = make.from_config({"base_url": base, "api_key": API_KEY, "deadline": 1, "timeout": 5}, environ={})
    model = GPT if make is OpenAIChatProvider else CLAUDE
    started = time.monotonic()
    with pytest.raises(HttpError, match=r"did not finish within its 1s deadline"):
        provider.send(ModelRequest("s", model, "Be brief.", (Message("user", "Hi"),)), stream=lambda _t: None)
    assert time.monotonic() - started < 4


def test_a_trickled_session_send_ends_at_its_deadline_and_keeps_the_input(project, raw):
    (project / ".nia" / "project.toml").write_text("[providers.openai-chat]\ndeadline = 1\n")
    raw.default = trickle(raw, STREAM_HEAD + b"\r\ndata: ")
    session = new_session(GPT)
    started = time.monotonic()
    result = nia("session", "send", session, "hello")
    assert result.exit_code == 1 and "within its 1s deadline" in result.output
    assert time.monotonic() - started < 5
    assert kinds(session) == ["user"]


# -- #30.2: a reply cut inside a tool_use block ----------------------------------------

CUT_CALL = "toolu_01EKqbqmZrGRXy18eN7m9kvY"
CUT_INPUT = {
    "filename": "taxes.txt",
    "lines_of_text": ["# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s", "", "## INTRODUCTION", ""],
}


def test_a_reply_cut_by_max_tokens_inside_a_tool_use_block_is_stored_cut_with_its_usage(project, raw):
    session = new_session(CLAUDE)
    raw.then(close_delimited(anthropic("incomplete_partial_json_response")))
    result = nia("session", "send", session, "write my tax guide")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("I'll create a comprehensive tax guide")
    assert "the token limit cut the call to tool 'make_file'" in result.stderr
    assert "450 in" in result.stderr and "124 out" in result.stderr
    data = shown(session)
    reply = data["messages"][-1]
    assert reply["tool_calls"] == [{"id": CUT_CALL, "name": "make_file", "arguments": CUT_INPUT}], "as the SDK reads it"
    assert reply["reply"]["usage"]["input_tokens"] == 450 and reply["reply"]["usage"]["output_tokens"] == 124
    assert reply["reply"]["stop_reason"] == "max_tokens" and reply["reply"]["cut_calls"] == [CUT_CALL]
    assert [(m["kind"], m["tool_call_id"], m["is_error"]) for m in data["pending"]] == [("tool_result", CUT_CALL, True)]
    raw.then(close_delimited(anthropic("basic_response")))
    going_on = nia("session", "send", session, "do it in smaller steps")
    assert going_on.exit_code == 0, going_on.output
    body = sent_bodies(raw)[-1]
    assert sendable(body) == []
    last = body["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"] and last[0]["tool_use_id"] == CUT_CALL


def test_an_openai_reply_cut_by_length_inside_tool_arguments_is_stored_cut(project, raw):
    session = new_session(GPT)
    fragment = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "make_file", "arguments": ""}}
    stream = openai_stream(
        [
            openai_chunk({"role": "assistant", "content": None, "tool_calls": [fragment]}),
            openai_chunk(
                {"tool_calls": [{"index": 0, "function": {"arguments": '{"filename": "a.txt", "text": "ab'}}]}
            ),
            openai_chunk({}, "length"),
            openai_usage(12, 40),
        ]
    )
    raw.then(chunked(stream))
    result = nia("session", "send", session, "write it")
    assert result.exit_code == 0, result.output
    reply = shown(session)["messages"][-1]
    assert reply["tool_calls"][0]["arguments"] == {"filename": "a.txt"}
    assert reply["reply"]["cut_calls"] == ["call_1"] and reply["reply"]["usage"]["output_tokens"] == 40
    raw.then(chunked(OPENAI_WHOLE))
    assert nia("session", "send", session).exit_code == 0
    body = sent_bodies(raw)[-1]
    assert sendable(body) == []
    assert [m["role"] for m in body["messages"][-3:]] == ["user", "assistant", "tool"]


# -- #30.3: a tool call nia never declared never leaves a session stuck ----------------


def test_an_undeclared_anthropic_tool_call_is_answered_and_the_session_goes_on(project, raw):
    session = new_session(CLAUDE)
    raw.then(close_delimited(anthropic("tool_use_response")))
    result = nia("session", "send", session, "weather in Paris?")
    assert result.exit_code == 0, result.output
    assert "Warning: session " in result.stderr
    assert "the model asked for tool 'get_weather' (toolu_01NRLabsLyVHZPKxbKvkfSMn), which nia did not offer" in (
        result.stderr
    )
    assert nia("db", "check").exit_code == 0
    raw.then(close_delimited(anthropic("basic_response")))
    going_on = nia("session", "send", session, "thanks")
    assert going_on.exit_code == 0, going_on.output
    body = sent_bodies(raw)[-1]
    assert sendable(body) == []
    assert [b["type"] for b in body["messages"][-2]["content"]] == ["text", "tool_use"]
    answer = body["messages"][-1]["content"][0]
    assert answer["type"] == "tool_result" and answer["is_error"] is True and "get_weather" in answer["content"]
    assert nia("db", "check").exit_code == 0


def test_an_undeclared_openai_tool_call_is_answered_and_a_bare_send_goes_on(project, raw):
    session = new_session(GPT)
    call = {"index": 0, "id": "call_w", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    raw.then(
        chunked(
            openai_stream(
                [
                    openai_chunk({"role": "assistant", "tool_calls": [call]}),
                    openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Paris"}'}}]}),
                    openai_chunk({}, "tool_calls"),
                    openai_usage(),
                ]
            )
        )
    )
    result = nia("session", "send", session, "weather?")
    assert result.exit_code == 0, result.output
    assert "'get_weather' (call_w), which nia did not offer" in result.stderr
    raw.then(chunked(OPENAI_WHOLE))
    bare = nia("session", "send", session)  # no new input: the answer goes to the model
    assert bare.exit_code == 0, bare.output
    body = sent_bodies(raw)[-1]
    assert sendable(body) == []
    assert body["messages"][-1]["role"] == "tool" and body["messages"][-1]["tool_call_id"] == "call_w"


def test_a_reply_whose_answers_were_lost_is_reported_by_db_check_and_answered_at_the_next_send(project, raw, tmp_path):
    session = new_session(CLAUDE)
    raw.then(close_delimited(anthropic("tool_use_response")))
    assert nia("session", "send", session, "weather?").exit_code == 0
    conn = sqlite3.connect(tmp_path / "nia.db")
    conn.execute("DELETE FROM pending")  # as if the process died between storing the reply and its answers
    conn.commit()
    conn.close()
    check = nia("db", "check")
    assert check.exit_code == 1
    assert "toolu_01NRLabsLyVHZPKxbKvkfSMn cannot be run" in check.output
    raw.then(close_delimited(anthropic("basic_response")))
    going_on = nia("session", "send", session, "and tomorrow?")
    assert going_on.exit_code == 0, going_on.output
    assert sendable(sent_bodies(raw)[-1]) == []
    assert nia("db", "check").exit_code == 0


# -- #30.10: a content filter and a tool call, one line each and in `session show` -----


def test_a_content_filter_stop_is_one_line_and_shown_in_session_show(project, raw):
    session = new_session(GPT)
    partial = '{"value": "example'
    raw.then(
        chunked(
            openai_stream(
                [
                    openai_chunk({"role": "assistant", "content": partial}),
                    openai_chunk({"role": "assistant"}, "content_filter"),
                    openai_usage(5, 2),
                ]
            )
        )
    )
    result = nia("session", "send", session, "hello")
    assert result.exit_code == 0, result.output
    assert result.stdout == partial + "\n"
    filter_lines = [line for line in result.stderr.splitlines() if "content filter" in line]
    assert filter_lines == [
        f"Warning: session {session}: the provider's content filter stopped this reply "
        "(finish_reason content_filter); what arrived before is kept"
    ]
    text = nia("session", "show", session).stdout
    assert "(the provider's content filter stopped this reply" in text
    assert shown(session)["messages"][-1]["reply"]["stop_reason"] == "content_filter"


def test_a_tool_call_is_one_line_and_shown_in_session_show(project, raw):
    session = new_session(CLAUDE)
    raw.then(close_delimited(anthropic("tool_use_response")))
    result = nia("session", "send", session, "weather?")
    lines = [line for line in result.stderr.splitlines() if "get_weather" in line]
    assert len(lines) == 1
    text = nia("session", "show", session).stdout
    assert '-> get_weather({"location": "Paris"}) [toolu_01NRLabsLyVHZPKxbKvkfSMn]' in text
    assert "(the model asked for tool 'get_weather' (toolu_01NRLabsLyVHZPKxbKvkfSMn), which nia did not offer" in (text)
    assert "(pending) tool result [toolu_01NRLabsLyVHZPKxbKvkfSMn]" in text


def test_a_session_stuck_by_an_older_nia_on_an_undeclared_call_goes_on(project, raw, tmp_path):
    """An older nia stored the call with no answer and no mark: every send said "waiting for tool results"."""
    session = new_session(GPT)
    call = {"index": 0, "id": "call_old", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    raw.then(
        chunked(openai_stream([openai_chunk({"tool_calls": [call]}), openai_chunk({}, "tool_calls"), openai_usage()]))
    )
    assert nia("session", "send", session, "read it").exit_code == 0
    conn = sqlite3.connect(tmp_path / "nia.db")
    (record,) = conn.execute("SELECT reply FROM messages WHERE kind = 'assistant'").fetchone()
    old = {k: v for k, v in json.loads(record).items() if k != "undeclared_calls"}
    conn.execute("UPDATE messages SET reply = ? WHERE kind = 'assistant'", (json.dumps(old),))
    conn.execute("DELETE FROM pending")
    conn.commit()
    conn.close()
    check = nia("db", "check")
    assert check.exit_code == 1 and "call_old cannot be run" in check.output
    raw.then(chunked(OPENAI_WHOLE))
    going_on = nia("session", "send", session, "never mind")
    assert going_on.exit_code == 0, going_on.output
    body = sent_bodies(raw)[-1]
    assert sendable(body) == []
    assert [m["role"] for m in body["messages"][-3:]] == ["assistant", "tool", "user"]
    assert nia("db", "check").exit_code == 0


SYNTHETIC = (
    b'data: {"id":"synthetic","object":"chat.completion.chunk","created":0,"model":"synthetic",'
    b'"choices":[{"index":0,"delta":{"content":"hello"}}]}\n\ndata: [DONE]\n\n'
)
"""The OpenAI SDK's own stream in tests/test_streaming.py, whose trailer it then trickles a byte at a time."""


@pytest.mark.parametrize("make", [OpenAIChatProvider, AnthropicMessagesProvider])
def test_a_whole_reply_followed_by_a_trickle_is_the_reply_not_a_deadline(raw, make):
    if make is OpenAIChatProvider:
        body = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        prefix, text = body + b"%x\r\n%s\r\n0\r\nX-Synthetic: " % (len(SYNTHETIC), SYNTHETIC), "hello"
    else:
        prefix, text = STREAM_HEAD + b"\r\n" + anthropic("basic_response") + b"\n\n", BASIC_TEXT
    raw.default = trickle(raw, prefix, b"a" if make is OpenAIChatProvider else b":\n")
    base = f"{raw.url}/v1" if make is OpenAIChatProvider else raw.url
    provider = make.from_config({"base_url": base, "api_key": API_KEY, "deadline": 1}, environ={})
    model = GPT if make is OpenAIChatProvider else CLAUDE
    reply = provider.send(ModelRequest("s", model, "Be brief.", (Message("user", "Hi"),)), stream=lambda _t: None)
    assert reply.text == text, "the trickle after the reply's end is not read: the 1s deadline never comes"
