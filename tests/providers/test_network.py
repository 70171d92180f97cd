"""Provider HTTP under hostile servers: redirects and credentials, deadlines, lying sizes, bad bytes, redaction."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from nia_core.http import Deadline, HttpFailure, Limits, redact_url, request
from nia_core.providers.anthropic_messages import AnthropicMessagesProvider
from nia_core.providers.lowering import ProviderConfigError
from nia_core.providers.openai_chat import OpenAIChatProvider
from nia_core.providers.remote import RemoteProvider
from nia_core.providers.transport import HttpClient, HttpError
from nia_core.sessions.messages import Message, ModelRequest
from tests.providers.fakeserver import API_KEY, CHAT_PATH, MESSAGES_PATH, FakeProviderServer
from tests.providers.rawserver import RawServer, respond, start_stream

CHAT = "openai-chat/gpt-4.1"
CLAUDE = "anthropic-messages/claude-sonnet-4-5"
SECRET = "sk-live-0123456789abcdef"


@pytest.fixture
def other() -> Iterator[FakeProviderServer]:
    """A second origin (another port on 127.0.0.1) that would answer like the real API."""
    server = FakeProviderServer().start()
    try:
        yield server
    finally:
        server.stop()


def chat(base: str, **table: Any) -> RemoteProvider:
    return OpenAIChatProvider.from_config({"base_url": f"{base}/v1", "api_key": API_KEY, "backoff": 0, **table})


def claude(base: str, **table: Any) -> RemoteProvider:
    return AnthropicMessagesProvider.from_config({"base_url": base, "api_key": API_KEY, "backoff": 0, **table})


def req(model: str) -> ModelRequest:
    return ModelRequest("s-1", model, "Be brief.", (Message("user", "Hello"),))


PROVIDERS = [
    pytest.param(chat, CHAT, CHAT_PATH, id="openai-chat"),
    pytest.param(claude, CLAUDE, MESSAGES_PATH, id="anthropic-messages"),
]
STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
ALL_REDIRECTS = pytest.mark.parametrize("status", [301, 302, 303, 307, 308])


def send(provider: RemoteProvider, model: str, streamed: bool) -> Any:
    return provider.send(req(model), stream=(lambda _t: None) if streamed else None)


def credentials(headers: dict[str, str]) -> set[str]:
    return {name for name in headers if name in ("authorization", "x-api-key")}


# -- #19: redirects never carry credentials to another origin ---------------------------


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
@STREAMED
@ALL_REDIRECTS
def test_a_redirect_to_another_origin_is_refused_and_the_other_origin_gets_nothing(
    raw, other, make, model, path, streamed, status
):
    raw.then(lambda h: respond(h, status, b"", {"Location": f"{other.url}{path}"}))
    with pytest.raises(HttpError) as caught:
        send(make(raw.url), model, streamed)
    message = str(caught.value)
    assert f"from {raw.url} to {other.url}" in message
    assert "\n" not in message and API_KEY not in message
    assert other.received == [], "the second origin never sees the request, let alone the key"
    assert len(raw.seen) == 1, "a refused redirect is not retried within the call"
    assert credentials(raw.seen[0].headers), "the configured origin did get the key"


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
@STREAMED
@pytest.mark.parametrize("status", [307, 308])
def test_a_same_origin_307_or_308_is_followed_with_method_and_body(server, make, model, path, streamed, status):
    server.fail(status, headers={"Location": path})
    reply = send(make(server.url), model, streamed)
    assert reply.text
    first, second = server.received
    assert first.status == status and second.status == 200
    assert second.raw == first.raw, "same body, and the fake answers POST only"
    assert credentials(second.headers), "same origin: the key may go along"


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
@STREAMED
@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_same_origin_redirect_that_would_drop_the_body_is_an_error(server, make, model, path, streamed, status):
    server.fail(status, headers={"Location": path})
    with pytest.raises(HttpError, match=rf"refused a redirect \(HTTP {status}\) .* would turn the POST into a GET"):
        send(make(server.url), model, streamed)
    assert len(server.received) == 1


@ALL_REDIRECTS
def test_the_client_strips_credentials_when_a_caller_allows_cross_origin_redirects(raw, status):
    second = RawServer().start()
    try:
        second.then(lambda h: respond(h, 200, b"{}"))
        raw.then(lambda h: respond(h, status, b"", {"Location": f"{second.url}/file"}))
        headers = {"Authorization": f"Bearer {SECRET}", "X-Api-Key": SECRET, "Cookie": "a=b", "Accept": "x/y"}
        with request("GET", f"{raw.url}/start", headers=headers, cross_origin_redirects=True) as response:
            assert response.status == 200
        (seen,) = second.seen
        assert seen.method == "GET"
        assert "authorization" not in seen.headers and "x-api-key" not in seen.headers
        assert "cookie" not in seen.headers
        assert seen.headers["accept"] == "x/y"
        assert SECRET not in json.dumps(seen.headers)
    finally:
        second.stop()


def test_a_refused_redirect_keeps_the_input_and_the_next_send_retries(tmp_path, monkeypatch, server, other):
    root = tmp_path / "project"
    root.mkdir()
    (root / "AGENTS.md").write_text("Be brief.\n")
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.chdir(root)
    runner = CliRunner()
    session = runner.invoke(cli, ["session", "new", "--model", CLAUDE]).output.strip()
    server.fail(302, headers={"Location": f"{other.url}{MESSAGES_PATH}"})
    failed = runner.invoke(cli, ["session", "send", session, "hello"])
    assert failed.exit_code != 0
    (line,) = failed.output.strip().splitlines()
    assert f"refused a redirect (HTTP 302) from {server.url} to {other.url}" in line
    assert "the input is kept" in line
    retried = runner.invoke(cli, ["session", "send", session])
    assert retried.exit_code == 0, retried.output
    assert other.received == []
    assert server.received[0].raw == server.received[1].raw


# -- #11.6: an overall deadline --------------------------------------------------------


def keepalive_forever(server: RawServer) -> Any:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        start_stream(handler)
        while not server.stop_event.is_set():
            handler.wfile.write(b": ping\n\n")
            handler.wfile.flush()
            time.sleep(0.05)

    return answer


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
def test_a_stream_of_keepalives_ends_at_the_deadline(raw, make, model, path):
    raw.default = keepalive_forever(raw)
    with pytest.raises(HttpError, match=r"did not finish within its 0\.5s deadline"):
        send(make(raw.url, deadline=0.5, timeout=5), model, True)


def test_the_deadline_error_says_the_input_is_kept(tmp_path, monkeypatch, raw):
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    (root / ".nia" / "project.toml").write_text("[providers.anthropic-messages]\ndeadline = 0.5\n")
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", raw.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.chdir(root)
    raw.default = keepalive_forever(raw)
    runner = CliRunner()
    session = runner.invoke(cli, ["session", "new", "--model", CLAUDE]).output.strip()
    result = runner.invoke(cli, ["session", "send", session, "hello"])
    assert result.exit_code == 1
    assert "0.5s deadline" in result.output
    assert "the input is kept" in result.output
    shown = runner.invoke(cli, ["session", "show", session, "--json"])
    assert [m["text"] for m in json.loads(shown.output)["messages"] if m["kind"] == "user"] == ["hello"]


def test_a_bad_deadline_setting_names_the_key():
    with pytest.raises(ProviderConfigError, match=r"providers\.openai-chat\.deadline must be a number"):
        OpenAIChatProvider.from_config({"deadline": "soon"}, environ={})


def test_retries_stop_when_the_deadline_would_pass(raw):
    for _ in range(3):
        raw.then(lambda h: respond(h, 503, b'{"error": {"message": "busy"}}', {"Retry-After": "30"}))
    waits: list[float] = []
    provider = OpenAIChatProvider.from_config(
        {"base_url": f"{raw.url}/v1", "api_key": API_KEY, "deadline": 5}, environ={}, sleep=waits.append
    )
    with pytest.raises(HttpError, match=r"HTTP 503 .* busy.*the call's 5s deadline would pass first"):
        provider.send(req(CHAT))
    assert waits == [] and len(raw.seen) == 1


# -- #11.11: sizes and lies ------------------------------------------------------------


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
def test_a_declared_length_of_2_gb_is_refused_without_reading_it(raw, make, model, path):
    raw.default = lambda h: respond(h, 200, b'{"short": true}', length=2_000_000_000)
    with pytest.raises(HttpError, match=r"declares 2,000,000,000 bytes, more than the [\d,]+-byte limit"):
        send(make(raw.url), model, False)
    assert len(raw.seen) == 1, "a body too large is not retried"


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
def test_a_body_shorter_than_declared_is_retried_then_reported(raw, make, model, path):
    raw.default = lambda h: respond(h, 200, b'{"choices": [', length=1000)
    with pytest.raises(HttpError, match=r"ended after 13 of 1,000 bytes \(after 2 attempts\)"):
        send(make(raw.url, max_retries=1), model, False)
    assert len(raw.seen) == 2


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
def test_a_held_connection_times_out_per_read(raw, make, model, path):
    def hold(handler: BaseHTTPRequestHandler) -> None:
        respond(handler, 200, b'{"choices": [', length=1000)
        raw.stop_event.wait(10)

    raw.default = hold
    with pytest.raises(HttpError, match=r"broke off: timed out after 0\.3s \(after 2 attempts\)"):
        send(make(raw.url, max_retries=1, timeout=0.3), model, False)


def test_a_body_larger_than_the_limit_is_refused_while_read(raw):
    def chunked(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        piece = b"x" * 65536
        for _ in range(40):
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")

    raw.default = chunked
    with request("GET", raw.url) as response, pytest.raises(HttpFailure, match="larger than the 1,048,576-byte"):
        response.read(1024 * 1024)


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
def test_a_stream_line_without_end_is_bounded_and_memory_stays_small(raw, make, model, path):
    def flood(handler: BaseHTTPRequestHandler) -> None:
        start_stream(handler)
        handler.wfile.write(b"data: ")
        piece = b"A" * 65536
        for _ in range(1024):  # 64 MiB, never a newline
            if raw.stop_event.is_set():
                return
            handler.wfile.write(piece)

    raw.default = flood
    tracemalloc.start()
    try:
        with pytest.raises(HttpError, match=r"sent a line longer than the 4,194,304-byte limit"):
            send(make(raw.url), model, True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 1024 * 1024, f"peak {peak:,} bytes"


def test_the_line_and_event_limits_apply_to_events(raw):
    raw.default = lambda h: (start_stream(h), h.wfile.write(b"data: 1\n" * 100 + b"\n"))
    client = HttpClient(limits=Limits(event=50))
    endpoint = chat(raw.url).endpoint()  # type: ignore[attr-defined]
    with pytest.raises(HttpError, match="an event larger than the 50-byte limit"):
        client.post_stream(endpoint, b"{}", lambda _e: None)


# -- #11.10: invalid UTF-8 in a stream event ------------------------------------------


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
def test_a_stream_event_with_invalid_utf8_is_an_error_and_nothing_is_stored(raw, make, model, path):
    event = b'data: {"choices": [{"index": 0, "delta": {"content": "caf\xe9"}}]}\n\n'
    if path == MESSAGES_PATH:
        event = (
            b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
            b'"delta": {"type": "text_delta", "text": "caf\xe9"}}\n\n'
        )
    raw.default = lambda h: (start_stream(h), h.wfile.write(event))
    with pytest.raises(HttpError, match=r"sent bytes that are not UTF-8 \(line \d, byte \d+\)"):
        send(make(raw.url), model, True)


# -- #11.14 + #11.15: redaction, malformed base URLs -------------------------------------


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
@STREAMED
def test_urls_in_errors_never_show_a_password_or_a_query_value(raw, make, model, path, streamed):
    raw.default = lambda h: respond(h, 500, b'{"error": {"message": "down"}}')
    host = raw.url.removeprefix("http://")
    base = f"http://alice:{SECRET}@{host}"
    provider = make(base, max_retries=0)
    provider.endpoint = _with_query(provider.endpoint, f"?key={SECRET}&api-version=2024")  # type: ignore[method-assign]
    with pytest.raises(HttpError) as caught:
        send(provider, model, streamed)
    message = str(caught.value)
    assert "HTTP 500" in message and "alice:***@" in message and "key=***" in message
    assert SECRET not in message
    assert SECRET not in repr(provider)


def _with_query(endpoint_of: Any, query: str) -> Any:
    def endpoint() -> Any:
        original = endpoint_of()
        return type(original)(original.url + query, original.headers, original.label, original.auth_hint)

    return endpoint


@pytest.mark.parametrize("key", [f"{SECRET}\n", f"{SECRET}\r\nX-Evil: 1", f"sk\x1b{SECRET}"])
def test_a_key_with_a_line_break_is_refused_without_showing_it(key, monkeypatch, tmp_path):
    with pytest.raises(ProviderConfigError, match=r"\$OPENAI_API_KEY holds a key with a line break") as caught:
        OpenAIChatProvider.from_config({}, environ={"OPENAI_API_KEY": key})
    assert SECRET not in str(caught.value)
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.chdir(root)
    for debug in ([], ["--debug"]):
        result = CliRunner().invoke(cli, [*debug, "session", "new", "--model", CHAT])
        assert result.exit_code != 0
        assert SECRET not in result.output
        assert "Invalid header value" not in result.output


def test_a_header_with_a_control_character_is_refused_by_the_client_naming_only_the_header(raw):
    with pytest.raises(HttpFailure, match=r"the x-api-key header holds a credential with a line break") as caught:
        request("POST", raw.url, headers={"x-api-key": f"{SECRET}\n"})
    assert SECRET not in str(caught.value)
    assert raw.seen == []


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.com", "another scheme"),
        ("http://", "no host"),
        ("http://example.com:99999/v1", "invalid port"),
        ("http://example.com:abc/v1", "invalid port"),
        ("https://exa mple.com/v1", "a space or a control character"),
        ("https://example.com/v1\n", "a space or a control character"),
        ("http://[::1/v1", "Invalid IPv6 URL"),
        ("example.com/v1", "another scheme"),
    ],
)
def test_a_malformed_base_url_is_one_clear_line(url, why):
    with pytest.raises(ProviderConfigError) as caught:
        AnthropicMessagesProvider.from_config({"base_url": url}, environ={})
    message = str(caught.value)
    assert message.startswith("config: providers.anthropic-messages.base_url must be an http:// or https:// URL")
    assert why in message and "\n" not in message


def test_a_malformed_base_url_from_the_environment_names_the_variable_and_hides_the_password():
    with pytest.raises(ProviderConfigError) as caught:
        OpenAIChatProvider.from_config({}, environ={"OPENAI_BASE_URL": f"http://u:{SECRET}@host:port/v1"})
    assert str(caught.value).startswith("$OPENAI_BASE_URL must be an http:// or https:// URL (invalid port)")
    assert SECRET not in str(caught.value)


def test_redact_url_hides_secrets_and_control_characters():
    assert redact_url(f"https://u:{SECRET}@h:8/p?key={SECRET}&x#frag") == "https://u:***@h:8/p?key=***&***"
    assert redact_url(f"https://{SECRET}@h/p") == "https://***@h/p"
    assert "\n" not in redact_url("https://h/p\nq") and "\n" not in redact_url("https://h\n/p")


def test_deadline_counts_from_its_creation():
    ticks = iter([0.0, 1.0, 2.5])
    deadline = Deadline(2.0, clock=lambda: next(ticks))
    assert deadline.remaining() == 1.0
    assert deadline.expired()


SHAPES = [
    b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "x"}]}}]}\n\n',
    b'data: {"choices": ["not an object"]}\n\n',
    b'data: {"choices": 7}\n\n',
    b'event: message_start\ndata: {"type": "message_start", "message": "x"}\n\n',
    b'event: content_block_start\ndata: {"type": "content_block_start", "index": [], "content_block": {}}\n\n',
    b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", '
    b'"text": 5}}\n\n',
]


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
@pytest.mark.parametrize("event", SHAPES)
def test_events_of_an_unexpected_shape_are_one_clear_error(raw, make, model, path, event):
    raw.default = lambda h: (start_stream(h), h.wfile.write(event))
    with pytest.raises(HttpError, match=r"invalid response|the stream ended before|invalid event"):
        send(make(raw.url), model, True)


@pytest.mark.parametrize(("make", "model", "path"), PROVIDERS)
@pytest.mark.parametrize(
    "body",
    [
        b'{"choices": [{"message": {"content": "x", "tool_calls": [7]}}]}',
        b'{"content": [{"type": "tool_use"}], "x": 1}',
        b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens_details": 5}}',
        b'{"content": [], "usage": []}',
    ],
)
def test_replies_of_an_unexpected_shape_are_one_clear_error_or_read(raw, make, model, path, body):
    raw.default = lambda h: respond(h, 200, body)
    try:
        send(make(raw.url), model, False)
    except HttpError as exc:
        assert "\n" not in str(exc)


@pytest.mark.parametrize("location", ["http://127.0.0.1:99999/x", "http://[::1/x", "javascript:alert(1)", "//"])
def test_a_redirect_to_an_invalid_url_is_refused(raw, location):
    raw.default = lambda h: respond(h, 307, b"", {"Location": location})
    with pytest.raises(HttpError, match=r"refused a redirect \(HTTP 307\)|invalid URL|more than 5 redirects"):
        send(chat(raw.url), CHAT, False)


@pytest.mark.parametrize("debug", [[], ["--debug"]], ids=["plain", "debug"])
def test_no_secret_of_a_base_url_reaches_the_terminal_with_or_without_debug(tmp_path, monkeypatch, raw, debug):
    raw.default = lambda h: respond(h, 500, b'{"error": {"message": "down"}}')
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    (root / ".nia" / "project.toml").write_text("[providers.openai-chat]\nmax_retries = 0\n")
    host = raw.url.removeprefix("http://")
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://alice:{SECRET}@{host}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.chdir(root)
    nia = [sys.executable, "-c", "from nia_core.cli import main; main()"]
    made = subprocess.run([*nia, "session", "new", "--model", CHAT], capture_output=True, text=True, timeout=60)
    session = made.stdout.strip()
    result = subprocess.run(
        [*nia, *debug, "session", "send", session, "hello"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    shown = result.stdout + result.stderr
    assert "HTTP 500" in shown and "alice:***@" in shown
    assert SECRET not in shown
    assert raw.seen[0].headers["authorization"] == f"Bearer {SECRET}", "the key itself still goes to its origin"


def test_an_http_proxy_gets_the_absolute_url_and_an_https_proxy_only_a_tunnel(raw, monkeypatch):
    raw.then(lambda h: respond(h, 200, json.dumps({"content": [{"type": "text", "text": "via proxy"}]}).encode()))
    raw.then(lambda h: respond(h, 403, b""))
    monkeypatch.setenv("http_proxy", f"http://bob:pw@{raw.url.removeprefix('http://')}")
    monkeypatch.setenv("https_proxy", raw.url)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    reply = claude("http://api.example.invalid").send(req(CLAUDE))
    assert reply.text == "via proxy"
    plain = raw.seen[0]
    assert plain.path == "http://api.example.invalid/v1/messages"
    assert plain.headers["proxy-authorization"] == "Basic Ym9iOnB3"
    with pytest.raises(HttpError, match=r"cannot reach https://api\.example\.invalid/v1/messages"):
        claude("https://api.example.invalid", max_retries=0).send(req(CLAUDE))
    tunnel = raw.seen[1]
    assert tunnel.method == "CONNECT" and tunnel.path == "api.example.invalid:443"
    assert credentials(tunnel.headers) == set(), "the key travels inside the tunnel, never to the proxy"
