"""A loopback model server that records every request and answers in the provider's real wire format.

It speaks Anthropic Messages (``POST /v1/messages``, SSE when ``"stream": true``,
and ``/v1/messages/count_tokens``) for Claude Code, OpenAI Responses
(``POST /v1/responses``, SSE) for Codex, OpenAI chat completions
(``POST /v1/chat/completions``, SSE when ``"stream": true``) for Qwen Code, OpenCode
and GitHub Copilot CLI, and
the Gemini API (``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse``,
``:generateContent``, ``:countTokens``) for Gemini CLI. Every request body is
kept in :attr:`FakeModel.requests`, so a test asserts on what an agent actually sent.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """A function call the model asks the agent to run (the agent then sends its output back: a follow-up)."""

    name: str
    arguments: str = "{}"
    namespace: str | None = None
    """The tool namespace the agent offered the function in (Codex groups an MCP server's tools: ``mcp__nia``)."""


@dataclass(frozen=True)
class Reply:
    """One scripted answer to a conversation request: text or a call, and the usage it reports."""

    text: str = "OK"
    call: Call | None = None
    input_tokens: int = 10
    """A figure above the agent's auto-compaction limit makes it compact."""


COMPACTION_PROMPTS = (
    "CONTEXT CHECKPOINT COMPACTION",
    "CRITICAL: Respond with TEXT ONLY",
    "<state_snapshot>",
    "Do not mention the summary process or that context was compacted",
    "The history is being compacted",
)
"""How the agents' summarisation requests end: Codex's (codex-rs ``templates/compact/prompt.md``),
Claude Code 2.1.328's (it wants an ``<analysis>`` and a ``<summary>`` block back), and Gemini CLI's and
Qwen Code's (both ask for a ``<state_snapshot>``; Gemini then asks to check it, in a second request), OpenCode
1.18.33's and GitHub Copilot CLI 1.0.102's."""

SUMMARY = "SUMMARY-OF-EARLIER-WORK"
"""The fake model's summary, so a test can find the compacted history."""


def is_compaction(body: dict[str, Any]) -> bool:
    """Whether a recorded request is an agent asking for a summary of its conversation."""
    items = body.get("input") or body.get("messages") or body.get("contents") or []
    last = items[-1] if items and isinstance(items[-1], dict) else {}
    text = json.dumps(last.get("content", last.get("parts", "")))
    return any(prompt in text for prompt in COMPACTION_PROMPTS)


SIDE_CALLS = ("You are a title generator",)
"""How an agent's side requests begin, which are not a conversation turn: OpenCode's title generation."""


def is_side_call(body: dict[str, Any]) -> bool:
    """Whether a recorded request is an agent's side request (its system message says so)."""
    messages = body.get("messages") or []
    first = messages[0] if messages and isinstance(messages[0], dict) else {}
    system = first.get("content") if first.get("role") == "system" else ""
    return isinstance(system, str) and system.startswith(SIDE_CALLS)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_stream(text: str, model: str, input_tokens: int = 10) -> bytes:
    msg_id = "msg_" + uuid.uuid4().hex[:24]
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    parts = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        ),
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        _sse("ping", {"type": "ping"}),
        _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        ),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(parts)


def anthropic_message(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }


def responses_stream(text: str, model: str, input_tokens: int = 10, call: Call | None = None) -> bytes:
    """One Responses SSE answer: an assistant message, or (``call``) a function call the agent must run."""
    resp_id = "resp_" + uuid.uuid4().hex[:24]
    item_id = "msg_" + uuid.uuid4().hex[:24]
    base = {"id": resp_id, "object": "response", "model": model, "status": "in_progress", "output": []}
    item = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    done_part = {"type": "output_text", "text": text, "annotations": []}
    done_item = {**item, "status": "completed", "content": [done_part]}
    usage = {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + 1,
    }
    if call is not None:
        fc = {
            "id": "fc_" + uuid.uuid4().hex[:24],
            "type": "function_call",
            "status": "completed",
            "call_id": "call_" + uuid.uuid4().hex[:24],
            "name": call.name,
            "arguments": call.arguments,
        }
        if call.namespace is not None:
            fc["namespace"] = call.namespace
        done = {**base, "status": "completed", "output": [fc], "usage": usage}
        calls = [
            ("response.created", {"type": "response.created", "response": base}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": fc}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": fc}),
            ("response.completed", {"type": "response.completed", "response": done}),
        ]
        return b"".join(_sse(name, data) for name, data in calls)
    events = [
        ("response.created", {"type": "response.created", "response": base}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        (
            "response.content_part.added",
            {
                "type": "response.content_part.added",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "part": part,
            },
        ),
        (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            },
        ),
        (
            "response.output_text.done",
            {
                "type": "response.output_text.done",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "text": text,
            },
        ),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": done_item}),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {**base, "status": "completed", "output": [done_item], "usage": usage},
            },
        ),
    ]
    return b"".join(_sse(name, data) for name, data in events)


def chat_stream(text: str, model: str, input_tokens: int = 10, call: Call | None = None) -> bytes:
    """One OpenAI chat-completions SSE answer: role, text (or a ``call``), finish, a usage chunk, ``[DONE]``."""
    base = {"id": "chatcmpl-" + uuid.uuid4().hex[:24], "object": "chat.completion.chunk", "created": 0, "model": model}
    usage = {"prompt_tokens": input_tokens, "completion_tokens": 1, "total_tokens": input_tokens + 1}
    delta: dict[str, Any] = {"content": text}
    finish = "stop"
    if call is not None:
        function = {"name": call.name, "arguments": call.arguments}
        delta = {
            "tool_calls": [
                {"index": 0, "id": "call_" + uuid.uuid4().hex[:24], "type": "function", "function": function}
            ]
        }
        finish = "tool_calls"
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": usage},
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def chat_message(text: str, model: str, input_tokens: int = 10) -> dict[str, Any]:
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": input_tokens, "completion_tokens": 1, "total_tokens": input_tokens + 1},
    }


def sample(schema: Any) -> Any:
    """A small value that fits a JSON schema: Gemini CLI's utility calls (its model router) want JSON back."""
    if not isinstance(schema, dict):
        return "fake"
    if "enum" in schema:
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: sample(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "fake"


def gemini_response(text: str, input_tokens: int = 10) -> dict[str, Any]:
    """A ``GenerateContentResponse``: one candidate, finished, with its usage."""
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": input_tokens,
            "candidatesTokenCount": 1,
            "totalTokenCount": input_tokens + 1,
        },
        "modelVersion": "fake",
    }


class FakeModel:
    """``with FakeModel() as server:`` serves on ``server.url`` until the block ends."""

    def __init__(self, reply: str = "OK", input_tokens: int = 10) -> None:
        self.reply = reply
        self.input_tokens = input_tokens
        """Reported as the usage of every answer (a large figure makes an agent compact)."""
        self.script: list[Reply] = []
        """Answers for the next Responses conversation requests, in order; then ``reply``."""
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def model_requests(self) -> list[Recorded]:
        """The conversation requests (not token counts, not Gemini CLI's utility calls such as its router)."""
        with self._lock:
            return [r for r in self.requests if _conversation(r.path.split("?")[0])]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def _responses(self, body: dict[str, Any], model: str) -> bytes:
        if is_compaction(body):
            return responses_stream(SUMMARY, model)
        with self._lock:
            reply = self.script.pop(0) if self.script else Reply(self.reply, None, self.input_tokens)
        return responses_stream(reply.text, model, reply.input_tokens, reply.call)

    def _next(self, body: dict[str, Any]) -> Reply:
        """The next conversation answer (a summary for a summarisation request; a side call takes no script)."""
        if is_compaction(body):
            return Reply(f"<state_snapshot>{SUMMARY}</state_snapshot>")
        if is_side_call(body):
            return Reply("A title")
        with self._lock:
            return self.script.pop(0) if self.script else Reply(self.reply, None, self.input_tokens)

    def _gemini(self, path: str, body: dict[str, Any]) -> bytes:
        """Gemini API answers: JSON for a request that asks for it (with its schema), else the next reply."""
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            return json.dumps(gemini_response(json.dumps(sample(schema)))).encode()
        if not path.endswith(":streamGenerateContent"):  # a utility call: Gemini CLI's summaries, its checks
            text = f"<state_snapshot>{SUMMARY}</state_snapshot>" if is_compaction(body) else self.reply
            return json.dumps(gemini_response(text)).encode()
        reply = self._next(body)
        answer = gemini_response(reply.text, reply.input_tokens)
        if reply.call is not None:
            call = {"name": reply.call.name, "args": json.loads(reply.call.arguments)}
            answer["candidates"][0]["content"]["parts"] = [{"functionCall": call}]
        return f"data: {json.dumps(answer)}\n\n".encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self._send(200, b"", "text/plain")

            def do_GET(self) -> None:
                self._send(200, b"{}", "application/json")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                path = self.path
                with fake._lock:
                    fake.requests.append(Recorded(path, body, dict(self.headers.items())))
                bare = path.split("?")[0]
                model = str(body.get("model", "fake-model"))
                if bare.endswith("/count_tokens"):
                    self._send(200, json.dumps({"input_tokens": 10}).encode(), "application/json")
                elif bare == "/v1/messages":
                    if body.get("stream") and is_compaction(body):
                        summary = f"<analysis>none</analysis>\n<summary>{SUMMARY}</summary>"
                        self._send(200, anthropic_stream(summary, model), "text/event-stream")
                    elif body.get("stream"):
                        self._send(200, anthropic_stream(fake.reply, model, fake.input_tokens), "text/event-stream")
                    else:
                        self._send(200, json.dumps(anthropic_message(fake.reply, model)).encode(), "application/json")
                elif bare == "/v1/responses":
                    self._send(200, fake._responses(body, model), "text/event-stream")
                elif bare.endswith("/chat/completions"):
                    reply = fake._next(body)
                    if body.get("stream"):
                        answer = chat_stream(reply.text, model, reply.input_tokens, reply.call)
                        self._send(200, answer, "text/event-stream")
                    else:
                        answer = chat_message(reply.text, model, reply.input_tokens)
                        self._send(200, json.dumps(answer).encode(), "application/json")
                elif bare.endswith(":countTokens"):
                    self._send(200, b'{"totalTokens": 10}', "application/json")
                elif bare.endswith(":streamGenerateContent"):
                    self._send(200, fake._gemini(bare, body), "text/event-stream")
                elif bare.endswith(":generateContent"):
                    self._send(200, fake._gemini(bare, body), "application/json")
                else:
                    self._send(404, b'{"error": "not found"}', "application/json")

            def _send(self, status: int, data: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _conversation(path: str) -> bool:
    """Whether a request path is an agent's conversation turn (Gemini CLI streams its turns)."""
    return path in ("/v1/messages", "/v1/responses") or path.endswith(("/chat/completions", ":streamGenerateContent"))
