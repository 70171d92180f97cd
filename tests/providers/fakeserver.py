"""A fake OpenAI + Anthropic API on 127.0.0.1, started by the tests.

It checks each request's headers and body against the provider's documented
schema (:mod:`tests.providers.schemas`), answers with recorded responses
(``recorded/``: JSON bodies and server-sent-event streams in the shapes the API
references document), and fills in usage with cached-token counts from the
longest common prefix with the previous request, under each provider's cache
rules (:mod:`bench.prompt_cache`). Faults are scripted per request:
an HTTP status, a delay (for timeouts), a body that is not JSON, a dropped
connection, a stream cut short.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.prompt_cache import AnthropicCache, Prompt, anthropic_prompt, chat_cached_tokens, chat_prompt
from tests.providers.schemas import validate_chat, validate_messages

RECORDED = Path(__file__).parent / "recorded"
API_KEY = "test-key"
CHAT_PATH = "/v1/chat/completions"
MESSAGES_PATH = "/v1/messages"
CHAT_MODELS = {"gpt-4.1", "gpt-5", "o3", "llama-3.1-8b"}
MESSAGES_MODELS = {"claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-8"}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    problems: list[str]
    status: int = 0
    usage: dict[str, Any] | None = None


@dataclass
class Fault:
    kind: str  # status | delay | garbage | drop | cut
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    seconds: float = 0.0


def recorded(name: str) -> str:
    return (RECORDED / name).read_text(encoding="utf-8")


class FakeProviderServer:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.faults: deque[Fault] = deque()
        self.replies: deque[str] = deque()
        """Recorded reply kinds for the next requests: ``text`` (default) or ``tool``."""
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._chat_previous: Prompt | None = None
        self._anthropic_cache = AnthropicCache()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> FakeProviderServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- scripting ---------------------------------------------------------------------

    def fail(self, status: int, *, times: int = 1, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        for _ in range(times):
            self.faults.append(Fault("status", status=status, headers=headers or {}, body=body))

    def delay(self, seconds: float, *, times: int = 1) -> None:
        for _ in range(times):
            self.faults.append(Fault("delay", seconds=seconds))

    def garbage(self, body: bytes, *, content_type: str = "text/html") -> None:
        self.faults.append(Fault("garbage", body=body, headers={"Content-Type": content_type}))

    def drop(self, *, times: int = 1) -> None:
        for _ in range(times):
            self.faults.append(Fault("drop"))

    def cut_stream(self) -> None:
        self.faults.append(Fault("cut"))

    def reply_with(self, *kinds: str) -> None:
        self.replies.extend(kinds)

    @property
    def problems(self) -> list[str]:
        return [p for r in self.received for p in r.problems]

    def last(self) -> Received:
        return self.received[-1]

    # -- answering ---------------------------------------------------------------------

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        received = Received(handler.path, headers, raw, body, [])
        with self._lock:
            self.received.append(received)
            fault = self.faults.popleft() if self.faults else None
            reply_kind = self.replies.popleft() if self.replies else "text"
        if fault is not None and fault.kind == "delay":
            self.release.wait(fault.seconds)
            fault = None
        if fault is not None and fault.kind == "drop":
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        if fault is not None and fault.kind == "status":
            body_bytes = fault.body or _error_body(handler.path, fault.status, f"scripted HTTP {fault.status}")
            return self._send(handler, received, fault.status, body_bytes, fault.headers)
        if fault is not None and fault.kind == "garbage":
            return self._send(handler, received, 200, fault.body, fault.headers)

        if handler.path == CHAT_PATH:
            self._answer_chat(handler, received, reply_kind, cut=fault is not None and fault.kind == "cut")
        elif handler.path == MESSAGES_PATH:
            self._answer_messages(handler, received, reply_kind, cut=fault is not None and fault.kind == "cut")
        else:
            self._send(handler, received, 404, _error_body(handler.path, 404, f"Invalid URL (POST {handler.path})"))

    def _send(
        self,
        handler: BaseHTTPRequestHandler,
        received: Received,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
    ) -> None:
        received.status = status
        handler.send_response(status)
        sent = {"Content-Type": "application/json", **(headers or {})}
        for key, value in sent.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _stream(self, handler: BaseHTTPRequestHandler, received: Received, events: list[str], *, cut: bool) -> None:
        received.status = 200
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        if cut:
            events = events[: max(1, len(events) // 2)]
        for event in events:
            handler.wfile.write(event.encode("utf-8") + b"\n\n")
            handler.wfile.flush()
        handler.close_connection = True

    def _answer_chat(self, handler: BaseHTTPRequestHandler, received: Received, kind: str, *, cut: bool) -> None:
        auth = received.headers.get("authorization")
        if auth != f"Bearer {API_KEY}":
            message = "You didn't provide an API key." if auth is None else "Incorrect API key provided."
            error = {"error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}}
            return self._send(handler, received, 401, json.dumps(error).encode())
        received.problems = validate_chat(received.body)
        if received.problems:
            error = {"error": {"message": "; ".join(received.problems), "type": "invalid_request_error"}}
            return self._send(handler, received, 400, json.dumps(error).encode())
        body = received.body
        if body["model"] not in CHAT_MODELS:
            message = f"The model `{body['model']}` does not exist or you do not have access to it."
            error = {"error": {"message": message, "type": "invalid_request_error", "code": "model_not_found"}}
            return self._send(handler, received, 404, json.dumps(error).encode())
        with self._lock:
            prompt = chat_prompt(body)
            cached = chat_cached_tokens(self._chat_previous, prompt)
            self._chat_previous = prompt
        usage = {"prompt_tokens": prompt.tokens, "prompt_tokens_details": {"cached_tokens": cached}}
        received.usage = usage
        if body.get("stream"):
            name = "chat_stream_tool_call.sse" if kind == "tool" else "chat_stream.sse"
            events = []
            for block in recorded(name).strip().split("\n\n"):
                data = block.removeprefix("data: ")
                if data != "[DONE]":
                    chunk = json.loads(data)
                    chunk["model"] = body["model"]
                    if chunk.get("usage"):
                        chunk["usage"] = {**chunk["usage"], **usage}
                    data = json.dumps(chunk)
                events.append(f"data: {data}")
            return self._stream(handler, received, events, cut=cut)
        name = "chat_completion_tool_call.json" if kind == "tool" else "chat_completion.json"
        reply = json.loads(recorded(name))
        reply["model"] = body["model"]
        reply["usage"].update(usage)
        self._send(handler, received, 200, json.dumps(reply).encode())

    def _answer_messages(self, handler: BaseHTTPRequestHandler, received: Received, kind: str, *, cut: bool) -> None:
        key = received.headers.get("x-api-key")
        if key != API_KEY:
            error = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
            return self._send(handler, received, 401, json.dumps(error).encode())
        if not received.headers.get("anthropic-version"):
            message = "anthropic-version: header is required"
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
            return self._send(handler, received, 400, json.dumps(error).encode())
        received.problems = validate_messages(received.body)
        if received.problems:
            message = "; ".join(received.problems)
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
            return self._send(handler, received, 400, json.dumps(error).encode())
        body = received.body
        if body["model"] not in MESSAGES_MODELS:
            error = {"type": "error", "error": {"type": "not_found_error", "message": f"model: {body['model']}"}}
            return self._send(handler, received, 404, json.dumps(error).encode())
        with self._lock:
            served = self._anthropic_cache.serve(anthropic_prompt(body))
        usage = {
            "input_tokens": served.uncached,
            "cache_read_input_tokens": served.read,
            "cache_creation_input_tokens": served.written,
        }
        received.usage = usage
        if body.get("stream"):
            name = "messages_stream_tool_use.sse" if kind == "tool" else "messages_stream.sse"
            events = []
            for block in recorded(name).strip().split("\n\n"):
                event_line, data_line = block.split("\n", 1)
                data = json.loads(data_line.removeprefix("data: "))
                if data.get("type") == "message_start":
                    data["message"]["model"] = body["model"]
                    data["message"]["usage"] = {**data["message"]["usage"], **usage}
                events.append(f"{event_line}\ndata: {json.dumps(data)}")
            return self._stream(handler, received, events, cut=cut)
        name = "messages_tool_use.json" if kind == "tool" else "messages.json"
        reply = json.loads(recorded(name))
        reply["model"] = body["model"]
        reply["usage"].update(usage)
        self._send(handler, received, 200, json.dumps(reply).encode())


def _error_body(path: str, status: int, message: str) -> bytes:
    if path == MESSAGES_PATH:
        kinds = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error", 404: "not_found_error"}
        return json.dumps(
            {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}
        ).encode()
    return json.dumps({"error": {"message": message, "type": "server_error" if status >= 500 else "requests"}}).encode()


def _handler(server: FakeProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            try:
                server.handle(self)
            except (BrokenPipeError, ConnectionResetError):
                pass  # a client that timed out and left is part of the tests

        def do_GET(self) -> None:
            self.send_error(405)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
