"""Request checks written from each provider's API reference, used by the fake server.

Each function returns a list of problems (empty when the body is valid), each
naming the JSON path, like the providers' own 400 messages do.

- Chat Completions: https://platform.openai.com/docs/api-reference/chat/create
- Messages: https://docs.anthropic.com/en/api/messages (and the prompt-caching
  and tool-use guides for ``cache_control`` and ``tool_result`` rules)
"""

from __future__ import annotations

import json
from typing import Any

CHAT_TOP_LEVEL = {
    "model",
    "messages",
    "prompt_cache_key",
    "prompt_cache_retention",
    "stream",
    "stream_options",
    "max_completion_tokens",
    "max_tokens",
    "temperature",
    "top_p",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "n",
    "stop",
    "seed",
    "user",
    "safety_identifier",
    "response_format",
    "reasoning_effort",
    "metadata",
    "store",
    "service_tier",
    "logprobs",
    "top_logprobs",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "modalities",
    "prediction",
    "verbosity",
}
CHAT_ROLES = {"system", "developer", "user", "assistant", "tool"}
CHAT_MESSAGE_KEYS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio"},
    "tool": {"role", "content", "tool_call_id"},
}

MESSAGES_TOP_LEVEL = {
    "model",
    "messages",
    "max_tokens",
    "system",
    "metadata",
    "stop_sequences",
    "stream",
    "temperature",
    "top_k",
    "top_p",
    "tools",
    "tool_choice",
    "thinking",
    "service_tier",
}
MAX_CACHE_BREAKPOINTS = 4


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _text_parts(path: str, content: Any, problems: list[str], *, allow_none: bool = False) -> None:
    if content is None and allow_none:
        return
    if isinstance(content, str):
        return
    if not isinstance(content, list) or not content:
        problems.append(f"{path}: must be a string or a non-empty array of content parts")
        return
    for index, part in enumerate(content):
        where = f"{path}[{index}]"
        if not isinstance(part, dict) or part.get("type") != "text":
            problems.append(f"{where}: only text parts are valid here")
        elif not isinstance(part.get("text"), str):
            problems.append(f"{where}.text: must be a string")
        elif set(part) - {"type", "text"}:
            problems.append(f"{where}: unknown keys {sorted(set(part) - {'type', 'text'})}")


def validate_chat(body: Any) -> list[str]:
    """Problems with a Chat Completions request body."""
    problems: list[str] = []
    if not isinstance(body, dict):
        return ["body: must be a JSON object"]
    for key in sorted(set(body) - CHAT_TOP_LEVEL):
        problems.append(f"{key}: unrecognized request argument")
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: required string")
    if "prompt_cache_key" in body and not isinstance(body["prompt_cache_key"], str):
        problems.append("prompt_cache_key: must be a string")
    if "stream" in body and not isinstance(body["stream"], bool):
        problems.append("stream: must be a boolean")
    if "stream_options" in body and body.get("stream") is not True:
        problems.append("stream_options: only allowed when stream is true")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("messages: required non-empty array")
        return problems
    awaiting: set[str] = set()
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        if not isinstance(message, dict):
            problems.append(f"{path}: must be an object")
            continue
        role = message.get("role")
        if role not in CHAT_ROLES:
            problems.append(f"{path}.role: must be one of {sorted(CHAT_ROLES)}, got {role!r}")
            continue
        extra = set(message) - CHAT_MESSAGE_KEYS[role]
        if extra:
            problems.append(f"{path}: unknown keys {sorted(extra)} for role {role}")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                problems.append(f"{path}.tool_call_id: required string")
            elif call_id not in awaiting:
                problems.append(f"{path}: messages with role 'tool' must be a response to a preceding 'tool_calls'")
            else:
                awaiting.discard(call_id)
            _text_parts(f"{path}.content", message.get("content"), problems)
            continue
        if awaiting:
            problems.append(
                f"{path}: an assistant message with 'tool_calls' must be followed by tool messages responding "
                f"to each 'tool_call_id' (missing {sorted(awaiting)})"
            )
            awaiting = set()
        if role == "assistant":
            calls = message.get("tool_calls")
            _text_parts(f"{path}.content", message.get("content"), problems, allow_none=True)
            if message.get("content") is None and not calls:
                problems.append(f"{path}: an assistant message needs content or tool_calls")
            if calls is not None:
                if not isinstance(calls, list) or not calls:
                    problems.append(f"{path}.tool_calls: must be a non-empty array")
                    continue
                for c, call in enumerate(calls):
                    where = f"{path}.tool_calls[{c}]"
                    function = call.get("function") if isinstance(call, dict) else None
                    if not isinstance(call, dict) or call.get("type") != "function" or not isinstance(function, dict):
                        problems.append(f"{where}: must be {{id, type: function, function}}")
                        continue
                    if not isinstance(call.get("id"), str) or not isinstance(function.get("name"), str):
                        problems.append(f"{where}: id and function.name are required strings")
                        continue
                    try:
                        json.loads(function.get("arguments"))
                    except (TypeError, ValueError):
                        problems.append(f"{where}.function.arguments: must be a JSON string")
                    awaiting.add(call["id"])
        else:
            _text_parts(f"{path}.content", message.get("content"), problems)
    if awaiting:
        problems.append(f"messages: tool calls {sorted(awaiting)} have no tool message")
    return problems


def _cache_control(path: str, block: dict[str, Any], problems: list[str]) -> int:
    if "cache_control" not in block:
        return 0
    control = block["cache_control"]
    if not isinstance(control, dict) or control.get("type") != "ephemeral" or set(control) - {"type", "ttl"}:
        problems.append(f"{path}.cache_control: must be {{type: ephemeral[, ttl]}}")
    elif "ttl" in control and control["ttl"] not in ("5m", "1h"):
        problems.append(f"{path}.cache_control.ttl: must be 5m or 1h")
    return 1


def _text_block(path: str, block: dict[str, Any], problems: list[str]) -> None:
    extra = set(block) - {"type", "text", "cache_control", "citations"}
    if extra:
        problems.append(f"{path}: unknown keys {sorted(extra)}")
    if not _is_text(block.get("text")):
        problems.append(f"{path}.text: text content blocks must contain non-whitespace text")


def validate_messages(body: Any) -> list[str]:
    """Problems with a Messages API request body."""
    problems: list[str] = []
    if not isinstance(body, dict):
        return ["body: must be a JSON object"]
    for key in sorted(set(body) - MESSAGES_TOP_LEVEL):
        problems.append(f"{key}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: Field required")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        problems.append("max_tokens: Field required (an integer >= 1)")
    if "stream" in body and not isinstance(body["stream"], bool):
        problems.append("stream: must be a boolean")
    breakpoints = 0
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        if not isinstance(system, list):
            problems.append("system: must be a string or an array of text blocks")
        else:
            for index, block in enumerate(system):
                path = f"system[{index}]"
                if not isinstance(block, dict) or block.get("type") != "text":
                    problems.append(f"{path}: only text blocks are valid in system")
                    continue
                _text_block(path, block, problems)
                breakpoints += _cache_control(path, block, problems)
    for index, tool in enumerate(body.get("tools") or []):
        if isinstance(tool, dict):
            breakpoints += _cache_control(f"tools[{index}]", tool, problems)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("messages: Field required (a non-empty array)")
        return problems
    pending: list[str] = []
    for index, message in enumerate(messages):
        path = f"messages.{index}"
        if not isinstance(message, dict):
            problems.append(f"{path}: must be an object")
            continue
        extra = set(message) - {"role", "content"}
        if extra:
            problems.append(f"{path}: Extra inputs are not permitted: {sorted(extra)}")
        role = message.get("role")
        if role == "system":
            _system_turn(path, body.get("model"), messages, index, problems)
            continue
        if role not in ("user", "assistant"):
            problems.append(f"{path}.role: Input should be 'user' or 'assistant', got {role!r}")
            continue
        content = message.get("content")
        if isinstance(content, str):
            if not content.strip() and not (role == "assistant" and index == len(messages) - 1):
                problems.append(f"{path}.content: messages must have non-empty content")
            blocks: list[Any] = []
        elif isinstance(content, list) and content:
            blocks = content
        else:
            problems.append(f"{path}.content: must be a string or a non-empty array of content blocks")
            continue
        results_done = False
        answered: list[str] = []
        uses: list[str] = []
        for b, block in enumerate(blocks):
            where = f"{path}.content.{b}"
            if not isinstance(block, dict):
                problems.append(f"{where}: must be an object")
                continue
            kind = block.get("type")
            breakpoints += _cache_control(where, block, problems)
            if kind == "text":
                _text_block(where, block, problems)
                results_done = True
            elif kind == "tool_use":
                if role != "assistant":
                    problems.append(f"{where}: tool_use blocks are only valid in assistant messages")
                extra = set(block) - {"type", "id", "name", "input", "cache_control"}
                if extra or not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                    problems.append(f"{where}: tool_use needs id, name and input only")
                if not isinstance(block.get("input"), dict):
                    problems.append(f"{where}.input: must be an object")
                uses.append(str(block.get("id")))
            elif kind == "tool_result":
                if role != "user":
                    problems.append(f"{where}: tool_result blocks are only valid in user messages")
                if results_done:
                    problems.append(f"{where}: tool_result blocks must come first in the content array")
                extra = set(block) - {"type", "tool_use_id", "content", "is_error", "cache_control"}
                if extra or not isinstance(block.get("tool_use_id"), str):
                    problems.append(f"{where}: tool_result needs tool_use_id (and optional content, is_error)")
                if "is_error" in block and not isinstance(block["is_error"], bool):
                    problems.append(f"{where}.is_error: must be a boolean")
                if "content" in block:
                    _text_parts(f"{where}.content", block["content"], problems)
                answered.append(str(block.get("tool_use_id")))
            else:
                problems.append(f"{where}.type: unsupported content block type {kind!r}")
        if pending:
            if role != "user" or sorted(answered) != sorted(pending):
                problems.append(
                    f"{path}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(sorted(set(pending) - set(answered)))}"
                )
        elif answered:
            problems.append(f"{path}: unexpected `tool_use_id` found in `tool_result` blocks: {', '.join(answered)}")
        pending = uses
    if pending:
        problems.append(f"messages: `tool_use` ids were found without `tool_result` blocks: {', '.join(pending)}")
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        problems.append(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        )
    return problems


MID_CONVERSATION_SYSTEM_MODELS = ("claude-opus-4-8", "claude-opus-5", "claude-sonnet-5")
"""Models that accept ``role: "system"`` turns in ``messages`` (Claude Opus 4.8 and later)."""


def _system_turn(path: str, model: Any, messages: list[Any], index: int, problems: list[str]) -> None:
    """The placement rules: a supporting model, right after a user turn, text blocks without cache_control."""
    if not isinstance(model, str) or not model.startswith(MID_CONVERSATION_SYSTEM_MODELS):
        problems.append(f"{path}.role: 'system' is not supported on this model")
        return
    previous = messages[index - 1] if index > 0 else None
    if not isinstance(previous, dict) or previous.get("role") != "user":
        problems.append(f"{path}: a system message must immediately follow a user turn")
    content = previous and messages[index].get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list) or not blocks:
        problems.append(f"{path}.content: must be a string or a non-empty array of text blocks")
        return
    for b, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "text":
            problems.append(f"{path}.content.{b}: only text blocks are valid in a system message")
            continue
        _text_block(f"{path}.content.{b}", block, problems)
        if "cache_control" in block:
            problems.append(f"{path}.content.{b}: cache_control is not reused on a system message")
