"""The transcript lines each host writes for a hook's output, as the real binaries wrote them (trimmed).

tests/real_agents checks these shapes against Claude Code 2.1.328 and Codex
0.169.0; the tests here write them to play a host's transcript.
"""

from __future__ import annotations

import json
from typing import Any


def hook_record(host: str, text: str, event: str = "UserPromptSubmit") -> dict[str, Any]:
    """The line ``host`` appends to its transcript when a hook's ``additionalContext`` reached the model."""
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
    return json.dumps(record, ensure_ascii=False) + "\n"
