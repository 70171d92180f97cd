"""The transcript lines each host writes for a hook's output, as the real binaries wrote them (trimmed).

tests/real_agents checks these shapes against Claude Code 2.1.328, Codex
0.169.0, Gemini CLI 0.61.0, Qwen Code 0.24.4, GitHub Copilot CLI 1.0.102 and
OpenCode 1.18.33 (whose conversation is rows of a SQLite database:
:class:`OpenCodeStore`); the tests here write them to play a host's
transcript. Gemini CLI and Qwen Code escape ``<`` and ``>`` in a hook's text
before they record it.
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


def copilot_prompt(prompt: str, context: str | None, agent: str | None = None) -> dict[str, Any]:
    """GitHub Copilot CLI's ``user.message`` event: ``transformedContent`` is what its model got."""
    sent = f"<current_datetime>2026-12-01T22:24:50.816+00:00</current_datetime>\n\n{prompt}"
    if context is not None:
        sent += f"\n\n<system_reminder>\n{context}\n</system_reminder>"
    event: dict[str, Any] = {
        "type": "user.message",
        "data": {
            "content": prompt,
            "transformedContent": sent,
            "messageId": "758c412f-158b-44bd-8b37-5279527f5c59",
            "supportedNativeDocumentMimeTypes": [],
            "delivery": "idle",
            "interactionId": "47727e95-c412-414d-972d-44e5cf1b8019",
            "turnId": "0",
        },
        "id": "ae9680cf-8837-464f-925b-f7dd178edc9e",
        "timestamp": "2026-12-01T22:24:50.816Z",
        "parentId": "e014c550-d099-42a1-8a24-2749babe9561",
    }
    if agent is not None:
        event["agentId"] = agent
    return event


def copilot_compaction(success: bool = True) -> dict[str, Any]:
    """GitHub Copilot CLI's compaction record (``/compact``, or automatic)."""
    return {
        "type": "session.compaction_complete",
        "data": {
            "success": success,
            "outcome": "applied" if success else "failed",
            "messagesRemoved": 3,
            "summaryContent": "SUMMARY",
            "trigger": "manual",
        },
        "id": "1e0b5ed4-d2a7-4be7-8a0c-c6cbc6a5d5f4",
        "timestamp": "2026-12-01T22:25:45.900Z",
        "parentId": "91c6705d-746b-45e2-a4cd-591f98e06a4c",
    }


def copilot_tool_result(text: str) -> dict[str, Any]:
    """A tool's result in Copilot's event log (the repository controls what a tool reads)."""
    return {
        "type": "tool.execution_complete",
        "data": {
            "toolCallId": "call_1",
            "success": True,
            "result": {"content": text},
            "toolTelemetry": {"type": "session.compaction_complete", "data": {"success": True}},
        },
        "id": "5c7b0f0e-34a4-4b0e-9d43-7a5f0f1f6d61",
        "timestamp": "2026-12-01T22:25:47.000Z",
    }


class OpenCodeStore:
    """OpenCode 1.18.33's database, its ``session``-keyed ``message`` and ``part`` tables as the binary creates them.

    :meth:`prompt` stores a user message the way OpenCode stores one after
    nia's plugin added its part (a synthetic text part whose id is the
    prompt part's id + ``nia``, with ``metadata: {"nia": true}``).
    """

    SCHEMA = """
        CREATE TABLE IF NOT EXISTS session (id text PRIMARY KEY, directory text NOT NULL, title text NOT NULL,
                                            time_created integer NOT NULL, time_updated integer NOT NULL);
        CREATE TABLE IF NOT EXISTS message (id text PRIMARY KEY, session_id text NOT NULL,
                              time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
        CREATE TABLE IF NOT EXISTS part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
                           time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
    """

    def __init__(self, path: Any, session: str) -> None:
        import sqlite3

        self.path, self.session, self.clock = path, session, 1796163635058
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.executescript(self.SCHEMA)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("INSERT INTO session VALUES (?, '/tmp/shop', 'PONG', ?, ?)", (session, self.clock, self.clock))
        self.db.commit()

    def _id(self, kind: str) -> str:
        self.clock += 1000
        return f"{kind}_{self.clock:013x}{self.session[-12:]}"

    def message(self, data: dict[str, Any], parts: list[tuple[str, dict[str, Any]]]) -> str:
        message_id = self._id("msg")
        self.db.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (message_id, self.session, self.clock, self.clock, json.dumps(data, separators=(",", ":"))),
        )
        for part_id, part in parts:
            self.db.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                (part_id, message_id, self.session, self.clock, self.clock, json.dumps(part, separators=(",", ":"))),
            )
        self.db.commit()
        return message_id

    def prompt(self, text: str, context: str | None, *, mark: bool = True) -> str:
        """A user message: the prompt's part, then nia's part when ``context`` is given."""
        first = self._id("prt")
        parts: list[tuple[str, dict[str, Any]]] = [(first, {"type": "text", "text": text})]
        if context is not None:
            part: dict[str, Any] = {"type": "text", "text": context, "synthetic": True}
            if mark:
                part["metadata"] = {"nia": True}
            parts.append((first + "nia", part))
        user = {
            "role": "user",
            "time": {"created": self.clock},
            "agent": "build",
            "model": {"providerID": "fake", "modelID": "fake-model"},
            "summary": {"diffs": []},
        }
        message_id = self.message(user, parts)
        self.reply(message_id)
        return message_id

    def reply(self, parent: str, *, summary: bool = False, text: str = "PONG") -> str:
        data = {
            "parentID": parent,
            "role": "assistant",
            "mode": "compaction" if summary else "build",
            "agent": "compaction" if summary else "build",
            "modelID": "fake-model",
            "providerID": "fake",
            "time": {"created": self.clock, "completed": self.clock + 5},
            "finish": "stop",
        }
        if summary:
            data["summary"] = True
        return self.message(data, [(self._id("prt"), {"type": "text", "text": text})])

    def tool_result(self, text: str) -> None:
        """An assistant message whose tool read ``text`` (the repository controls it)."""
        data = {"role": "assistant", "agent": "build", "time": {"created": self.clock}, "finish": "tool-calls"}
        part = {
            "type": "tool",
            "tool": "read",
            "callID": "c1",
            "state": {"status": "completed", "output": text, "metadata": {"nia": True}},
        }
        self.message(data, [(self._id("prt"), part)])

    def compaction(self, tail: str | None = None, *, finished: bool = True) -> None:
        """``/compact`` or an automatic compaction: the compaction message and its summary."""
        part: dict[str, Any] = {"type": "compaction", "auto": True, "overflow": False}
        if tail is not None:
            part["tail_start_id"] = tail
        user = {
            "role": "user",
            "agent": "build",
            "time": {"created": self.clock},
            "model": {"providerID": "fake", "modelID": "fake-model"},
            "summary": {"diffs": []},
        }
        message_id = self.message(user, [(self._id("prt"), part)])
        if finished:
            self.reply(message_id, summary=True, text="SUMMARY")

    def fork(self, session: str) -> OpenCodeStore:
        """``opencode run --fork``: every message and part copied into a new session, new ids, the same times."""
        self.clock += 10_000
        self.db.execute(
            "INSERT INTO session VALUES (?, '/tmp/shop', 'PONG (fork #1)', ?, ?)", (session, self.clock, self.clock)
        )
        rows = self.db.execute(
            "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id", (self.session,)
        ).fetchall()
        for number, (message_id, created, data) in enumerate(rows):
            copy = f"msg_{self.clock:013x}{number:04d}fork"
            self.db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (copy, session, created, created, data))
            for part_number, (part_data,) in enumerate(
                self.db.execute("SELECT data FROM part WHERE message_id = ? ORDER BY id", (message_id,)).fetchall()
            ):
                self.db.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (f"prt_{self.clock:013x}{number:04d}{part_number:02d}", copy, session, created, created, part_data),
                )
        self.db.commit()
        forked = OpenCodeStore.__new__(OpenCodeStore)
        forked.path, forked.session, forked.clock, forked.db = self.path, session, self.clock, self.db
        return forked
