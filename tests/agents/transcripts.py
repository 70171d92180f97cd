"""The transcript lines each host writes for a hook's output, as the real binaries wrote them (trimmed).

tests/real_agents checks these shapes against Claude Code 2.1.328, Codex
0.169.0, Gemini CLI 0.61.0 and Qwen Code 0.24.4; the tests here write them to
play a host's transcript. Gemini CLI and Qwen Code escape ``<`` and ``>`` in
a hook's text before they record it.
"""

from __future__ import annotations

import json
from typing import Any


def escaped(text: str) -> str:
    return text.replace("<", "&lt;").replace(">", "&gt;")


def gemini_message(parts: list[str], kind: str = "user") -> dict[str, Any]:
    """One message line of a Gemini CLI session file."""
    return {
        "id": "4e7dfd65-c5c8-4993-8da8-90ee3092e7a3",
        "timestamp": "2026-12-01T21:53:46.794Z",
        "type": kind,
        "content": [{"text": part} for part in parts],
    }


def gemini_snapshot(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Gemini CLI's history snapshot: the whole history from here on (written at a resumed start, a compression)."""
    return {"$set": {"messages": messages, "lastUpdated": "2026-12-01T21:54:18.303Z"}}


def qwen_prompt(prompt: str, context: str | None) -> dict[str, Any]:
    """One prompt line of a Qwen Code session file (``context``: the hook's text, as Qwen records it)."""
    parts = [{"text": prompt}]
    payload: dict[str, Any] = {"displayText": prompt}
    if context is not None:
        parts.append({"text": f"<qwen:user-prompt-submit-context>\n{context}\n</qwen:user-prompt-submit-context>"})
        payload["hookContext"] = context
    return {
        "uuid": "80b778d7-402b-493a-9d84-b366f4a8f189",
        "parentUuid": None,
        "sessionId": "42ab4928-bf9b-48b5-a390-6be42c200c48",
        "timestamp": "2026-12-01T21:54:52.948Z",
        "type": "user",
        "provenance": "real_user",
        "cwd": "/tmp/shop",
        "version": "0.24.4",
        "message": {"role": "user", "parts": parts},
        "systemPayload": payload,
    }


def qwen_compression(history: list[dict[str, Any]]) -> dict[str, Any]:
    """Qwen Code's compression record: ``compressedHistory`` is the model's history from here on."""
    return {
        "uuid": "8670ee78-ae9b-4128-ae27-dedbc9a16012",
        "parentUuid": "70652003-c937-4714-ba10-9568e70ca6c5",
        "sessionId": "42ab4928-bf9b-48b5-a390-6be42c200c48",
        "timestamp": "2026-12-01T22:04:26.645Z",
        "type": "system",
        "provenance": "system",
        "cwd": "/tmp/shop",
        "version": "0.24.4",
        "subtype": "chat_compression",
        "systemPayload": {
            "info": {"originalTokenCount": 170010, "newTokenCount": 40, "compressionStatus": 1},
            "compressedHistory": history,
        },
    }


def hook_record(host: str, text: str, event: str = "UserPromptSubmit") -> dict[str, Any]:
    """The line ``host`` appends to its transcript when a hook's ``additionalContext`` reached the model."""
    if host == "gemini":
        return gemini_message(["the prompt", f"<hook_context>{escaped(text)}</hook_context>"])
    if host == "qwen-code":
        return qwen_prompt("the prompt", escaped(text))
    if host == "claude-code":
        return {
            "parentUuid": "31a213b4-561e-41dd-bf4b-2c1e04963a24",
            "isSidechain": False,
            "attachment": {
                "type": "hook_additional_context",
                "content": [text],
                "hookName": event,
                "toolUseID": event,
                "hookEvent": event,
            },
            "type": "attachment",
            "uuid": "c3a2a807-9d25-433c-9bf3-6c426b363e4b",
            "version": "2.1.328",
        }
    return {
        "timestamp": "2026-12-01T20:54:27.866Z",
        "ordinal": 7,
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": text}],
            "internal_chat_message_metadata_passthrough": {
                "content_item_kinds": ["hooks.additional_context"],
                "content_item_metadata": [{"provenance": {"type": "harness", "hook": True}}],
            },
        },
    }


def tool_result(host: str, text: str) -> dict[str, Any]:
    """A tool's result holding ``text`` (the repository controls what a tool reads)."""
    if host == "gemini":  # a file's text is a part before the end of the prompt's message, a result a tool call's
        return gemini_message(["@notes.md", f"<hook_context>{escaped(text)}</hook_context>", "--- End of content ---"])
    if host == "qwen-code":
        return {
            "type": "tool_result",
            "message": {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": text}}]},
            "systemPayload": {"hookContext": text},
        }
    if host == "claude-code":
        return {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}]},
            "toolUseResult": {"stdout": text, "attachment": {"type": "hook_additional_context", "content": [text]}},
        }
    return {
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "c1", "output": text},
    }


def line(record: dict[str, Any]) -> str:
    """One transcript line as the hosts write them: compact JSON (JavaScript's ``JSON.stringify``, serde's)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
