"""One entry of a session's durable history: a message, and the tool calls an ``assistant`` message asks for.

Every door that stores a conversation speaks these, the agent hooks too (an
admitted update is a ``system_update`` message). The model call's own types
(request, reply, usage, the provider) live in :mod:`nia_core.model`, which a
hook never imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

MessageKind = Literal["user", "assistant", "tool_result", "system_update", "summary"]
MESSAGE_KINDS: tuple[MessageKind, ...] = ("user", "assistant", "tool_result", "system_update", "summary")


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Message:
    """One entry of the durable history.

    - ``user``: user input (``text``).
    - ``assistant``: the model's reply; ``tool_calls`` when it asked for tools.
    - ``tool_result``: the settled result of one tool call (``tool_call_id``).
    - ``system_update``: a mid-conversation system message (the combined text).
    - ``summary``: a compaction summary that stands for earlier history.
    """

    kind: MessageKind
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    seq: int | None = None
    """Position in the session's durable history (assigned by the store)."""
    epoch: int | None = None
    """The context epoch it was appended in (assigned by the store)."""
    refused: bool = False
    """An ``assistant`` reply the provider marked as a refusal that resets the turn: the projection
    leaves it, and the user input it answered, out of every later request."""


def tool_calls_json(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]


def message_content(message: Message) -> dict[str, Any]:
    """A message's content as JSON-ready data, the one way: what the store keeps and ``--json`` shows.

    ``text`` always; ``tool_calls``, ``tool_call_id`` and ``is_error`` only when set.
    """
    content: dict[str, Any] = {"text": message.text}
    if message.tool_calls:
        content["tool_calls"] = tool_calls_json(message.tool_calls)
    if message.tool_call_id is not None:
        content["tool_call_id"] = message.tool_call_id
    if message.is_error:
        content["is_error"] = True
    return content
