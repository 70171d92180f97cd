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

from nia_core.model import Message, ModelRequest, ProviderError, Reply, StreamCallback, ToolCall, Usage
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
from nia_core.providers.partial_json import complete_prefix
from nia_core.providers.remote import RemoteProvider, StreamAssembler
from nia_core.providers.settings import HttpDefaults
from nia_core.providers.transport import Endpoint, HttpError, ServerSentEvent, decode_event

NAME = "anthropic-messages"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
MAX_BREAKPOINTS = 4
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

MODELS = CapabilityTable(
    [
        ("claude-opus-4-8*", ModelCapabilities("system", "system")),
        ("claude-opus-5*", ModelCapabilities("system", "system")),
        ("claude-sonnet-5*", ModelCapabilities("system", "system")),
        ("claude-haiku-5*", ModelCapabilities("system", "system")),
    ]
)
"""Models with a native mid-conversation ``role: "system"`` turn (Claude Opus 4.8 and later; the SDK's
``SystemMessageParam``). Every other model takes the wrapped fallback; config may add entries."""

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
        after = turns[-1]["role"] if turns else None
        role, blocks = _lower_message(index, message, capabilities, after)
        if not blocks:
            last_block.append(None)
            continue
        if turns and turns[-1]["role"] == role:
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


def _lower_message(
    index: int, message: Message, capabilities: ModelCapabilities, after: str | None
) -> tuple[str, list[Block]]:
    """The role and blocks of one history message; ``after`` is the role of the turn before it."""
    kind = message.kind
    if kind == "user":
        if not message.text.strip():
            raise LoweringError(f"message #{index} (user): empty text, which the Messages API rejects")
        return "user", [{"type": "text", "text": message.text}]
    if kind == "summary":
        return "user", [{"type": "text", "text": wrap_summary(message.text)}]
    if kind == "system_update":
        # The placement rule: a system turn only right after a user turn (or another system
        # turn, merged into it); anywhere else the wrapped fallback keeps the request valid.
        if capabilities.native_updates and after in ("user", "system"):
            return "system", [{"type": "text", "text": message.text}]
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
        max_server_wait=None,  # the Anthropic SDK waits as long as the server asks
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
            raise HttpError(f"{endpoint.label}: {endpoint.shown} answered with an error: {_error_text(obj)}")
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
        return _reply("".join(text), tuple(calls), _usage(obj.get("usage")), obj, obj.get("stop_reason"))

    def assembler(self, endpoint: Endpoint, stream: StreamCallback) -> StreamAssembler:
        return _MessagesStream(endpoint, stream)


REFUSAL = "refusal"
"""``stop_reason`` when the model declined; the docs say to reset the refused turn before going on."""
MAX_TOKENS = "max_tokens"
"""``stop_reason`` when the output token limit cut the reply (possibly inside a ``tool_use`` block)."""


def _reply(
    text: str,
    calls: tuple[ToolCall, ...],
    usage: Usage | None,
    raw: dict[str, Any],
    stop: Any,
    cut: tuple[str, ...] = (),
) -> Reply:
    stop_reason = stop if isinstance(stop, str) else None
    refused = stop_reason == REFUSAL
    return Reply(
        text=text,
        tool_calls=calls,
        usage=usage,
        raw=raw,
        stop_reason=stop_reason,
        refusal=refused,
        resets_turn=refused,
        cut_calls=cut,
    )


def _invalid(endpoint: Endpoint, why: str) -> HttpError:
    return HttpError(f"{endpoint.label}: invalid response from {endpoint.shown}: {why}")


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


def _usage(raw: Any) -> Usage | None:
    """Anthropic counts uncached, cache-read and cache-written input apart; nia's ``input_tokens`` is their sum.

    ``None`` when the reply carried no usage (it is then unpriced)."""
    if not isinstance(raw, dict) or not raw:
        return None
    uncached = _count(raw.get("input_tokens"))
    read = _count(raw.get("cache_read_input_tokens"))
    written = _count(raw.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=uncached + read + written,
        output_tokens=_count(raw.get("output_tokens")),
        cached_input_tokens=read,
        cache_write_tokens=written,
    )


def _count(value: Any) -> int:
    """A token count as reported; anything that is not a non-negative integer counts as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class _MessagesStream(StreamAssembler):
    """``message_start`` … ``content_block_*`` … ``message_delta`` … ``message_stop``.

    The stream is whole at ``message_stop``. A ``tool_use`` block the output
    token limit cut (``stop_reason: "max_tokens"`` before its
    ``content_block_stop``, or input that does not parse) keeps the input
    that arrived, read as the SDK reads it (partial JSON), and is marked cut.
    """

    def __init__(self, endpoint: Endpoint, stream: StreamCallback) -> None:
        super().__init__(endpoint, stream)
        self.blocks: dict[int, dict[str, Any]] = {}
        self.closed: set[int] = set()
        self.usage: dict[str, Any] = {}
        self.stopped = False
        self.message: dict[str, Any] = {}
        self.stop_reason: Any = None

    def feed(self, event: ServerSentEvent) -> None:
        data = decode_event(self.endpoint, event)
        kind = data.get("type", event.event)
        if kind == "error":
            raise HttpError(
                f"{self.endpoint.label}: the stream from {self.endpoint.shown} reported an error: {_error_text(data)}"
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
        elif kind == "content_block_stop":
            self.closed.add(int(data.get("index", 0)))
        elif kind == "message_delta":
            self.usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
            delta = data.get("delta") or {}
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self.stop_reason = delta["stop_reason"]
        elif kind == "message_stop":
            self.stopped = True

    def whole(self) -> bool:
        return self.incomplete() is None

    def incomplete(self) -> str | None:
        return None if self.stopped else "the stream ended before message_stop"

    def reply(self) -> Reply:
        why = self.incomplete()
        if why is not None:
            raise _invalid(self.endpoint, why)
        stop = self.stop_reason or self.message.get("stop_reason")
        text: list[str] = []
        calls: list[ToolCall] = []
        cut: list[str] = []
        content: list[dict[str, Any]] = []
        for index, block in sorted(self.blocks.items()):
            if block.get("type") == "text":
                text.append(block.get("text", ""))
                content.append({"type": "text", "text": block.get("text", "")})
            elif block.get("type") == "tool_use":
                arguments, whole = self._input(index, block, stop)
                call = _tool_call(self.endpoint, block.get("id"), block.get("name"), arguments)
                calls.append(call)
                if not whole:
                    cut.append(call.id)
                content.append(
                    {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": arguments}
                )
        raw = {**self.message, "content": content, "usage": self.usage, "streamed": True}
        raw["stop_reason"] = stop
        return _reply("".join(text), tuple(calls), _usage(self.usage), raw, stop, tuple(cut))

    def _input(self, index: int, block: dict[str, Any], stop: Any) -> tuple[Any, bool]:
        """A tool_use block's input, and whether it arrived whole."""
        partial = block.get("partial_json") or ""
        cut_here = stop == MAX_TOKENS and index not in self.closed
        try:
            arguments = json.loads(partial) if partial else block.get("input") or {}
        except ValueError:
            if stop != MAX_TOKENS:
                raise _invalid(self.endpoint, f"tool_use {block.get('id')} streamed input that is not JSON") from None
            read = complete_prefix(partial)
            return (read if isinstance(read, dict) else {}), False
        return arguments, not cut_here
