"""``anthropic-messages``: the Anthropic Messages API.

The baseline is the top-level ``system``; the Messages API has only ``user``
and ``assistant`` turns, so a mid-conversation system message takes the
wrapped fallback, as a text block after the user turn's own blocks (after
tool results, which must come first), or as a user turn of its own after an
assistant turn. Consecutive same-role turns are merged, as the API itself
would.

Prompt caching needs explicit ``cache_control`` breakpoints (at most 4). nia
sets at most three: on the baseline; on the last stable block, the last one
before a trailing mid-conversation system message (a breakpoint on that
block would cache a prefix the next request may not share, and providers do
not reuse breakpoints on system turns); and where the previous request put
its own last breakpoint, so its cache entry is read even when the new turn
adds many blocks.
"""

from __future__ import annotations

import json
from typing import Any

from nia_core.providers.base import ProviderError, StreamCallback
from nia_core.providers.http import Endpoint, HttpError, ServerSentEvent, decode_event
from nia_core.providers.lowering import (
    CapabilityTable,
    LoweringError,
    ModelCapabilities,
    check_history,
    previous_request_end,
    trailing_updates_start,
    wrap_summary,
    wrap_update,
)
from nia_core.providers.remote import RemoteProvider, StreamAssembler
from nia_core.providers.settings import HttpDefaults
from nia_core.sessions.messages import Message, ModelRequest, Reply, ToolCall, Usage

NAME = "anthropic-messages"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
MAX_BREAKPOINTS = 4
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

MODELS = CapabilityTable([])
"""No Anthropic model has a native mid-conversation system role; config may add one for compatible servers."""

Block = dict[str, Any]


def lower_messages(
    request: ModelRequest, model: str, capabilities: ModelCapabilities, *, max_tokens: int
) -> dict[str, Any]:
    """The Messages API request body for ``request`` (pure; same input, same dict)."""
    history = request.messages
    check_history(history)
    turns: list[dict[str, Any]] = []
    last_block: list[tuple[int, int] | None] = []
    """Per history message: (turn, block) of the last block it produced."""
    for index, message in enumerate(history):
        role, blocks = _lower_message(index, message, capabilities)
        if not blocks:
            last_block.append(None)
            continue
        if turns and turns[-1]["role"] == role and role in ("user", "assistant"):
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
        last_block.append((len(turns) - 1, len(turns[-1]["content"]) - 1))

    marks: list[tuple[int, int]] = []
    for end in (previous_request_end(history), len(history)):
        if end is None:
            continue
        position = _last_stable_block(history[:end], last_block)
        if position is not None and position not in marks:
            marks.append(position)
    for turn, block in marks:
        turns[turn]["content"][block]["cache_control"] = dict(EPHEMERAL)

    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": turns}
    if request.baseline:
        body["system"] = [{"type": "text", "text": request.baseline, "cache_control": dict(EPHEMERAL)}]
    if count_breakpoints(body) > MAX_BREAKPOINTS:  # pragma: no cover - guarded by construction
        raise LoweringError(f"{count_breakpoints(body)} cache breakpoints, the API allows {MAX_BREAKPOINTS}")
    return body


def _last_stable_block(history: Any, last_block: list[tuple[int, int] | None]) -> tuple[int, int] | None:
    """The last block of ``history`` that no trailing mid-conversation system message produced."""
    for index in range(trailing_updates_start(history) - 1, -1, -1):
        if history[index].kind == "system_update":
            continue
        position = last_block[index]
        if position is not None:
            return position
    return None


def count_breakpoints(body: dict[str, Any]) -> int:
    blocks = [b for b in body.get("system") or [] if isinstance(b, dict)]
    blocks += [t for t in body.get("tools") or [] if isinstance(t, dict)]
    for turn in body.get("messages") or []:
        if isinstance(turn.get("content"), list):
            blocks.extend(b for b in turn["content"] if isinstance(b, dict))
    return sum(1 for block in blocks if "cache_control" in block)


def _lower_message(index: int, message: Message, capabilities: ModelCapabilities) -> tuple[str, list[Block]]:
    kind = message.kind
    if kind == "user":
        if not message.text.strip():
            raise LoweringError(f"message #{index} (user): empty text, which the Messages API rejects")
        return "user", [{"type": "text", "text": message.text}]
    if kind == "summary":
        return "user", [{"type": "text", "text": wrap_summary(message.text)}]
    if kind == "system_update":
        if capabilities.native_updates:
            return capabilities.update_role, [{"type": "text", "text": message.text}]
        return "user", [{"type": "text", "text": wrap_update(message.text)}]
    if kind == "tool_result":
        block: Block = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if message.text:
            block["content"] = message.text
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    if kind == "assistant":
        blocks: list[Block] = []
        if message.text.strip():
            blocks.append({"type": "text", "text": message.text})
        for call in message.tool_calls:
            blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)})
        return "assistant", blocks
    raise ProviderError(f"cannot lower a message of kind {kind!r}")


class AnthropicMessagesProvider(RemoteProvider):
    name = NAME
    defaults = HttpDefaults(
        base_url="https://api.anthropic.com",
        base_url_env="ANTHROPIC_BASE_URL",
        api_key_env="ANTHROPIC_API_KEY",
        max_tokens=DEFAULT_MAX_TOKENS,
    )
    builtin_models = MODELS

    def lower(self, request: ModelRequest) -> dict[str, Any]:
        model = self.model_name(request)
        max_tokens = self.settings.max_tokens or DEFAULT_MAX_TOKENS
        return lower_messages(request, model, self.capabilities(model), max_tokens=max_tokens)

    def endpoint(self) -> Endpoint:
        headers = {"anthropic-version": API_VERSION}
        if self.settings.api_key:
            headers["x-api-key"] = self.settings.api_key
        hint = f"set {self.settings.api_key_env}" if not self.settings.api_key else f"check {self.settings.api_key_env}"
        base = self.settings.base_url
        url = f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"
        return Endpoint(url, headers, self.name, hint)

    def streaming_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "stream": True}

    def parse_reply(self, endpoint: Endpoint, obj: dict[str, Any]) -> Reply:
        if obj.get("type") == "error":
            raise HttpError(f"{endpoint.label}: {endpoint.url} answered with an error: {_error_text(obj)}")
        content = obj.get("content")
        if not isinstance(content, list):
            raise _invalid(endpoint, "no content list")
        text: list[str] = []
        calls: list[ToolCall] = []
        for block in content:
            if not isinstance(block, dict):
                raise _invalid(endpoint, "a content block that is not an object")
            if block.get("type") == "text":
                text.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                calls.append(_tool_call(endpoint, block.get("id"), block.get("name"), block.get("input")))
        return Reply(text="".join(text), tool_calls=tuple(calls), usage=_usage(obj.get("usage")), raw=obj)

    def assembler(self, endpoint: Endpoint, stream: StreamCallback) -> StreamAssembler:
        return _MessagesStream(endpoint, stream)


def _invalid(endpoint: Endpoint, why: str) -> HttpError:
    return HttpError(f"{endpoint.label}: invalid response from {endpoint.url}: {why}")


def _error_text(obj: dict[str, Any]) -> str:
    error = obj.get("error")
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('message', '')}"
    return str(error)


def _tool_call(endpoint: Endpoint, call_id: Any, name: Any, arguments: Any) -> ToolCall:
    if not isinstance(call_id, str) or not isinstance(name, str) or not name:
        raise _invalid(endpoint, "a tool_use block without id or name")
    if not isinstance(arguments, dict):
        raise _invalid(endpoint, f"tool_use {call_id} ({name}) has an input that is not an object")
    return ToolCall(call_id, name, arguments)


def _usage(raw: Any) -> Usage:
    """Anthropic counts uncached, cache-read and cache-written input apart; nia's ``input_tokens`` is their sum."""
    if not isinstance(raw, dict):
        return Usage()
    uncached = int(raw.get("input_tokens") or 0)
    read = int(raw.get("cache_read_input_tokens") or 0)
    written = int(raw.get("cache_creation_input_tokens") or 0)
    return Usage(
        input_tokens=uncached + read + written,
        output_tokens=int(raw.get("output_tokens") or 0),
        cached_input_tokens=read,
        cache_write_tokens=written,
    )


class _MessagesStream(StreamAssembler):
    """``message_start`` … ``content_block_*`` … ``message_delta`` … ``message_stop``."""

    def __init__(self, endpoint: Endpoint, stream: StreamCallback) -> None:
        super().__init__(endpoint, stream)
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] = {}
        self.stopped = False
        self.message: dict[str, Any] = {}

    def feed(self, event: ServerSentEvent) -> None:
        data = decode_event(self.endpoint, event)
        kind = data.get("type", event.event)
        if kind == "error":
            raise HttpError(
                f"{self.endpoint.label}: the stream from {self.endpoint.url} reported an error: {_error_text(data)}"
            )
        if kind == "message_start":
            self.message = data.get("message") or {}
            self.usage.update(self.message.get("usage") or {})
        elif kind == "content_block_start":
            block = dict(data.get("content_block") or {})
            if block.get("type") == "tool_use":
                block["partial_json"] = ""
            self.blocks[int(data.get("index", len(self.blocks)))] = block
            if block.get("type") == "text" and block.get("text"):
                self.stream(block["text"])
        elif kind == "content_block_delta":
            block = self.blocks.setdefault(int(data.get("index", 0)), {"type": "text", "text": ""})
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
                if delta.get("text"):
                    self.stream(delta["text"])
            elif delta.get("type") == "input_json_delta":
                block["partial_json"] = block.get("partial_json", "") + delta.get("partial_json", "")
        elif kind == "message_delta":
            self.usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            self.stopped = True

    def reply(self) -> Reply:
        if not self.stopped:
            raise _invalid(self.endpoint, "the stream ended before message_stop")
        text: list[str] = []
        calls: list[ToolCall] = []
        content: list[dict[str, Any]] = []
        for _, block in sorted(self.blocks.items()):
            if block.get("type") == "text":
                text.append(block.get("text", ""))
                content.append({"type": "text", "text": block.get("text", "")})
            elif block.get("type") == "tool_use":
                partial = block.get("partial_json") or ""
                try:
                    arguments = json.loads(partial) if partial else block.get("input") or {}
                except ValueError:
                    raise _invalid(
                        self.endpoint, f"tool_use {block.get('id')} streamed input that is not JSON"
                    ) from None
                calls.append(_tool_call(self.endpoint, block.get("id"), block.get("name"), arguments))
                content.append(
                    {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": arguments}
                )
        raw = {**self.message, "content": content, "usage": self.usage, "streamed": True}
        return Reply(text="".join(text), tool_calls=tuple(calls), usage=_usage(self.usage), raw=raw)
