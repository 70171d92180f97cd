"""``openai-chat``: the OpenAI Chat Completions API (and servers that speak it).

The baseline is the first message (``system``, or ``developer`` for models
that want it); every request of a session carries the same
``prompt_cache_key``, so OpenAI routes it to the machine that holds its
prefix. Mid-conversation system messages use the model's native role where
the capability table says it has one, and the wrapped user-role fallback
otherwise (the safe default for unknown models: many chat templates reject a
system message after the first turn).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from nia_core.model import Message, ModelRequest, ProviderError, Reply, StreamCallback, ToolCall, Usage
from nia_core.providers.lowering import (
    WRAPPED,
    CapabilityTable,
    ModelCapabilities,
    canonical_arguments,
    check_history,
    wrap_summary,
    wrap_update,
)
from nia_core.providers.partial_json import complete_prefix
from nia_core.providers.remote import RemoteProvider, StreamAssembler
from nia_core.providers.settings import HttpDefaults
from nia_core.providers.transport import Endpoint, HttpError, ServerSentEvent, decode_event

NAME = "openai-chat"

MODELS = CapabilityTable(
    [
        ("gpt-5*", ModelCapabilities("developer", "developer")),
        ("o1-mini*", ModelCapabilities("system", WRAPPED)),
        ("o1-preview*", ModelCapabilities("system", WRAPPED)),
        ("o1*", ModelCapabilities("developer", "developer")),
        ("o3*", ModelCapabilities("developer", "developer")),
        ("o4*", ModelCapabilities("developer", "developer")),
        ("gpt-4*", ModelCapabilities("system", "system")),
        ("gpt-3.5*", ModelCapabilities("system", "system")),
        ("chatgpt-*", ModelCapabilities("system", "system")),
    ]
)
"""Built-in capabilities. Anything unmatched: baseline as ``system``, updates wrapped."""


def prompt_cache_key(session_id: str) -> str:
    """Stable per session, opaque, and short: the session id never leaves as itself."""
    return "nia-" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]


def lower_chat(
    request: ModelRequest, model: str, capabilities: ModelCapabilities, *, max_tokens: int | None
) -> dict[str, Any]:
    """The Chat Completions request body for ``request`` (pure; same input, same dict)."""
    check_history(request.messages)
    messages: list[dict[str, Any]] = []
    if request.baseline:
        messages.append({"role": capabilities.baseline_role, "content": request.baseline})
    first_turn = len(messages)
    for message in request.messages:
        lowered = _lower_message(message, capabilities)
        if lowered is None:
            continue
        previous = messages[-1] if len(messages) > first_turn else None
        if message.kind == "system_update" and previous is not None:
            if not capabilities.native_updates and previous["role"] == "user":
                previous["content"] = [*_parts(previous["content"]), {"type": "text", "text": lowered["content"]}]
                continue
            if capabilities.native_updates and previous.get("update"):
                # Two updates in a row (a failed send, then another change): one system turn, never two.
                previous["content"] = f"{previous['content']}\n\n{lowered['content']}"
                continue
            if capabilities.native_updates:
                lowered["update"] = True
        messages.append(lowered)
    for lowered_message in messages:
        lowered_message.pop("update", None)
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "prompt_cache_key": prompt_cache_key(request.session_id),
    }
    if max_tokens is not None:
        body["max_completion_tokens"] = max_tokens
    return body


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": content}]


def _lower_message(message: Message, capabilities: ModelCapabilities) -> dict[str, Any] | None:
    kind = message.kind
    if kind == "user":
        return {"role": "user", "content": message.text}
    if kind == "summary":
        return {"role": "user", "content": wrap_summary(message.text)}
    if kind == "system_update":
        if capabilities.native_updates:
            return {"role": capabilities.update_role, "content": message.text}
        return {"role": "user", "content": wrap_update(message.text)}
    if kind == "tool_result":
        text = f"Error: {message.text}" if message.is_error else message.text
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}
    if kind == "assistant":
        if not message.text and not message.tool_calls:
            return None
        lowered: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            lowered["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": canonical_arguments(call.arguments)},
                }
                for call in message.tool_calls
            ]
        return lowered
    raise ProviderError(f"cannot lower a message of kind {kind!r}")


class OpenAIChatProvider(RemoteProvider):
    name = NAME
    defaults = HttpDefaults(
        base_url="https://api.openai.com/v1", base_url_env="OPENAI_BASE_URL", api_key_env="OPENAI_API_KEY"
    )
    builtin_models = MODELS

    def lower(self, request: ModelRequest) -> dict[str, Any]:
        model = self.model_name(request)
        return lower_chat(request, model, self.capabilities(model), max_tokens=self.settings.max_tokens)

    def endpoint(self) -> Endpoint:
        headers = {}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        hint = f"set {self.settings.api_key_env}" if not self.settings.api_key else f"check {self.settings.api_key_env}"
        return Endpoint(f"{self.settings.base_url}/chat/completions", headers, self.name, hint)

    def streaming_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "stream": True, "stream_options": {"include_usage": True}}

    def parse_reply(self, endpoint: Endpoint, obj: dict[str, Any]) -> Reply:
        if obj.get("error"):
            # Some servers (and OpenAI on occasion) answer 200 with an error object: it is that error.
            raise HttpError(f"{endpoint.label}: {endpoint.shown} answered with an error: {_error_text(obj['error'])}")
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _invalid(endpoint, "no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise _invalid(endpoint, "choices[0] has no message")
        text = message.get("content")
        refusal = message.get("refusal")
        if text is None:
            text = refusal if isinstance(refusal, str) else ""
        if not isinstance(text, str):
            raise _invalid(endpoint, "choices[0].message.content is not text")
        finish = choices[0].get("finish_reason")
        stop = finish if isinstance(finish, str) else None
        calls: list[ToolCall] = []
        cut: list[str] = []
        for raw in message.get("tool_calls") or []:
            function = raw.get("function") if isinstance(raw, dict) else None
            if not isinstance(function, dict):
                raise _invalid(endpoint, "a tool call without a function")
            call, whole = _tool_call(endpoint, raw.get("id"), function.get("name"), function.get("arguments"), stop)
            calls.append(call)
            if not whole:
                cut.append(call.id)
        return Reply(
            text=text,
            tool_calls=tuple(calls),
            usage=_usage(obj.get("usage")),
            raw=obj,
            stop_reason=stop,
            refusal=isinstance(refusal, str) and bool(refusal),
            cut_calls=tuple(cut),
        )

    def assembler(self, endpoint: Endpoint, stream: StreamCallback) -> StreamAssembler:
        return _ChatStream(endpoint, stream)


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        kind = error.get("type") or error.get("code")
        message = error.get("message")
        return f"{kind}: {message}" if kind else str(message)
    return str(error)


def _invalid(endpoint: Endpoint, why: str) -> HttpError:
    return HttpError(f"{endpoint.label}: invalid response from {endpoint.shown}: {why}")


LENGTH = "length"
"""``finish_reason`` when the output token limit (``max_completion_tokens``) cut the reply."""
CONTENT_FILTER = "content_filter"
"""``finish_reason`` when the provider's content filter withheld the rest of the reply."""
CHUNK_OBJECT = "chat.completion.chunk"


def _tool_call(endpoint: Endpoint, call_id: Any, name: Any, arguments: Any, stop: str | None) -> tuple[ToolCall, bool]:
    """The call, and whether its arguments arrived whole.

    Arguments that are not JSON are an error, except in a reply the token
    limit cut (``finish_reason: "length"``): there they are read as far as
    they go, as the SDKs read a cut stream, and the call is marked cut.
    """
    if not isinstance(call_id, str) or not isinstance(name, str) or not name:
        raise _invalid(endpoint, "a tool call without id or name")
    text = arguments or "{}"
    try:
        parsed = json.loads(text)
    except (TypeError, ValueError):
        if stop != LENGTH or not isinstance(text, str):
            raise _invalid(endpoint, f"tool call {call_id} ({name}) has arguments that are not JSON") from None
        partial = complete_prefix(text)
        return ToolCall(call_id, name, partial if isinstance(partial, dict) else {}), False
    if not isinstance(parsed, dict):
        raise _invalid(endpoint, f"tool call {call_id} ({name}) has arguments that are not a JSON object")
    return ToolCall(call_id, name, parsed), True


def _usage(raw: Any) -> Usage | None:
    """The reply's usage; ``None`` when the server reported none (the reply is then unpriced)."""
    if not isinstance(raw, dict):
        return None
    details = raw.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    return Usage(
        input_tokens=_count(raw.get("prompt_tokens")),
        output_tokens=_count(raw.get("completion_tokens")),
        cached_input_tokens=_count(details.get("cached_tokens")),
        cache_write_tokens=_count(details.get("cache_write_tokens")),
    )


def _count(value: Any) -> int:
    """A token count as reported; anything that is not a non-negative integer counts as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class _ChatStream(StreamAssembler):
    """``chat.completion.chunk`` events: choice 0's content deltas and tool-call fragments by index, usage last.

    As the SDK's stream helper: an event whose ``object`` is not
    ``chat.completion.chunk`` (an Azure content-filter notice) is skipped
    whole, its ``usage`` included; only
    choice 0 is assembled when a server sends several (``n > 1``). The stream
    is whole at ``[DONE]``, or once both the finish chunk and the usage chunk
    (which ``stream_options.include_usage`` promises) arrived.
    """

    def __init__(self, endpoint: Endpoint, stream: StreamCallback) -> None:
        super().__init__(endpoint, stream)
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.usage: Usage | None = None
        self.done = False
        self.finished = False
        self.refused = False
        self.stop_reason: str | None = None

    def feed(self, event: ServerSentEvent) -> None:
        if event.data.strip() == "[DONE]":
            self.done = True
            return
        chunk = decode_event(self.endpoint, event)
        if chunk.get("error"):
            raise HttpError(
                f"{self.endpoint.label}: the stream from {self.endpoint.shown} reported an error: "
                f"{_error_text(chunk['error'])}"
            )
        if chunk.get("object") != CHUNK_OBJECT:
            return  # the SDK's _is_valid_chat_completion_chunk_weak: not a chunk (an Azure filter notice, say)
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finished = True
                self.stop_reason = str(choice["finish_reason"])
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                self.text.append(content)
                self.stream(content)
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                # A refusal streams like text: the user sees it, and it is what the assistant said.
                self.refused = True
                self.text.append(refusal)
                self.stream(refusal)
            for fragment in delta.get("tool_calls") or []:
                call = self.calls.setdefault(int(fragment.get("index", 0)), {"id": "", "name": "", "arguments": ""})
                if fragment.get("id"):
                    call["id"] = fragment["id"]
                function = fragment.get("function") or {}
                if function.get("name"):
                    call["name"] = function["name"]
                call["arguments"] += function.get("arguments") or ""

    def whole(self) -> bool:
        return self.incomplete() is None

    def incomplete(self) -> str | None:
        if self.done or (self.finished and self.usage is not None):
            return None
        if self.finished:
            return "the stream ended after the finish chunk, before the usage chunk it promised"
        return "the stream ended before the reply was complete"

    def reply(self) -> Reply:
        why = self.incomplete()
        if why is not None:
            raise _invalid(self.endpoint, why)
        calls: list[ToolCall] = []
        cut: list[str] = []
        for _, c in sorted(self.calls.items()):
            call, whole = _tool_call(self.endpoint, c["id"], c["name"], c["arguments"], self.stop_reason)
            calls.append(call)
            if not whole:
                cut.append(call.id)
        text = "".join(self.text)
        usage = self.usage.__dict__ if self.usage is not None else None
        raw = {"streamed": True, "text": text, "usage": usage}
        return Reply(
            text=text,
            tool_calls=tuple(calls),
            usage=self.usage,
            raw=raw,
            stop_reason=self.stop_reason,
            refusal=self.refused,
            cut_calls=tuple(cut),
        )
