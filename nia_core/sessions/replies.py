"""What a session keeps about each reply besides its text: the model, the token usage, how it stopped.

Stored as one JSON text in the ``reply`` column of the reply's history row
(schema version 2 in both stores; rows written before have none). Both stores
encode and decode it here, so they agree byte for byte.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from nia_core.model import Message, Reply, Usage
from nia_core.records import record
from nia_core.sessions.store_errors import CorruptRecord

USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")


@record(frozen=True)
class ReplyRecord:
    model: str
    """``PROVIDER/MODEL`` that answered (a session may switch models; prices follow the reply)."""
    usage: Usage
    stop_reason: str | None = None
    refusal: bool = False
    resets_turn: bool = False
    """The provider requires the refused turn to be left out of later requests (see the projection)."""

    @classmethod
    def of(cls, model: str, reply: Reply) -> ReplyRecord:
        return cls(model, reply.usage, reply.stop_reason, reply.refusal, reply.resets_turn)


def encode_reply(record: ReplyRecord) -> str:
    data: dict[str, Any] = {
        "model": record.model,
        "usage": {name: getattr(record.usage, name) for name in USAGE_FIELDS},
    }
    if record.stop_reason is not None:
        data["stop_reason"] = record.stop_reason
    if record.refusal:
        data["refusal"] = True
    if record.resets_turn:
        data["resets_turn"] = True
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
        usage = data.get("usage")
        if not isinstance(usage, dict):
            raise ValueError("no usage object")
        counts = {name: usage.get(name, 0) for name in USAGE_FIELDS}
        for name, value in counts.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"usage.{name} is not a count")
        stop = data.get("stop_reason")
        if stop is not None and not isinstance(stop, str):
            raise ValueError("stop_reason is not text")
        return ReplyRecord(
            data["model"],
            Usage(**counts),
            stop,
            data.get("refusal") is True,
            data.get("resets_turn") is True,
        )
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptRecord(f"{where} has a damaged reply record ({exc})", session_id) from None


def with_record(message: Message, record: ReplyRecord | None) -> Message:
    """``message`` marked as refused when its record says the turn must be reset."""
    if record is not None and record.resets_turn and message.kind == "assistant" and not message.refused:
        return dataclasses.replace(message, refused=True)
    return message
