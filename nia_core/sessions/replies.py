"""What a session keeps about each reply besides its text: the model, the token usage, how it stopped.

Stored as one JSON text in the ``reply`` column of the reply's history row
(schema version 2 in both stores; rows written before have none). Both stores
encode and decode it here, so they agree byte for byte.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nia_core.message import Message
from nia_core.sessions.store_errors import CorruptRecord

if TYPE_CHECKING:  # a model call's types: a door that reads no stored reply (an agent hook) never loads them
    from nia_core.model import Reply, Usage

USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")


@dataclass(frozen=True)
class ReplyRecord:
    model: str
    """``PROVIDER/MODEL`` that answered (a session may switch models; prices follow the reply)."""
    usage: Usage | None
    """``None``: the provider reported no usage, so the reply is unpriced."""
    stop_reason: str | None = None
    refusal: bool = False
    resets_turn: bool = False
    """The provider requires the refused turn to be left out of later requests (see the projection)."""
    undeclared_calls: tuple[str, ...] = ()
    """Tool calls naming a tool the request did not declare: the session answers them as not run."""
    cut_calls: tuple[str, ...] = ()
    """Tool calls the output token limit cut before their input was whole: answered as not run."""

    @classmethod
    def of(cls, model: str, reply: Reply) -> ReplyRecord:
        return cls(
            model,
            reply.usage,
            reply.stop_reason,
            reply.refusal,
            reply.resets_turn,
            tuple(reply.undeclared_calls),
            tuple(reply.cut_calls),
        )


def encode_reply(record: ReplyRecord) -> str:
    usage = record.usage
    data: dict[str, Any] = {
        "model": record.model,
        "usage": {name: getattr(usage, name) for name in USAGE_FIELDS} if usage is not None else None,
    }
    if record.stop_reason is not None:
        data["stop_reason"] = record.stop_reason
    if record.refusal:
        data["refusal"] = True
    if record.resets_turn:
        data["resets_turn"] = True
    if record.undeclared_calls:
        data["undeclared_calls"] = list(record.undeclared_calls)
    if record.cut_calls:
        data["cut_calls"] = list(record.cut_calls)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def decode_reply(session_id: str, where: str, text: Any) -> ReplyRecord | None:
    """The stored record, ``None`` for a row without one, :class:`CorruptRecord` naming the row if damaged."""
    if text is None:
        return None
    try:
        if isinstance(text, bytes | memoryview):
            text = bytes(text).decode("utf-8")
        if not isinstance(text, str):
            raise ValueError(f"stored as {type(text).__name__}")
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("model"), str):
            raise ValueError("not an object with a model")
        stored = data.get("usage")
        if stored is not None and not isinstance(stored, dict):
            raise ValueError("usage is neither an object nor null")
        usage = None
        if stored is not None:
            from nia_core.model import Usage

            counts = {name: stored.get(name, 0) for name in USAGE_FIELDS}
            for name, value in counts.items():
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"usage.{name} is not a count")
            usage = Usage(**counts)
        stop = data.get("stop_reason")
        if stop is not None and not isinstance(stop, str):
            raise ValueError("stop_reason is not text")
        return ReplyRecord(
            data["model"],
            usage,
            stop,
            data.get("refusal") is True,
            data.get("resets_turn") is True,
            _ids(data, "undeclared_calls"),
            _ids(data, "cut_calls"),
        )
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptRecord(f"{where} has a damaged reply record ({exc})", session_id) from None


def _ids(data: dict[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{key} is not a list of tool call ids")
    return tuple(value)


def with_record(message: Message, record: ReplyRecord | None) -> Message:
    """``message`` marked as refused when its record says the turn must be reset."""
    if record is not None and record.resets_turn and message.kind == "assistant" and not message.refused:
        return dataclasses.replace(message, refused=True)
    return message
