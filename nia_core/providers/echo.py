"""``echo/echo``: the offline default provider.

It answers with a short summary of the request it received (baseline size and
hash, message counts, the last input), so every session command works on a
fresh machine with no network, and a test can read back exactly what a
provider was sent.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from nia_core.context import canonical_json
from nia_core.model import Message, ModelRequest, Reply, StreamCallback, Usage, split_model

ROLES = {
    "user": "user",
    "assistant": "assistant",
    "tool_result": "tool",
    "system_update": "system",
    "summary": "system",
}
SNIPPET = 80


def lower_message(message: Message) -> dict[str, Any]:
    """One message in echo's wire format; system updates keep a native chronological ``system`` role."""
    item: dict[str, Any] = {"role": ROLES[message.kind], "content": message.text}
    if message.kind == "summary":
        item["content"] = "Summary of the earlier conversation:\n" + message.text
    if message.tool_calls:
        item["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    if message.tool_call_id is not None:
        item["tool_call_id"] = message.tool_call_id
    if message.is_error:
        item["is_error"] = True
    return item


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET else flat[: SNIPPET - 1] + "…"


class EchoProvider:
    """Echoes a summary of each request; no network, deterministic."""

    name = "echo"

    def lower(self, request: ModelRequest) -> dict[str, Any]:
        _provider, model = split_model(request.model)
        return {
            "model": model,
            "system": request.baseline,
            "messages": [lower_message(m) for m in request.messages],
        }

    def send(self, request: ModelRequest, *, stream: StreamCallback | None = None) -> Reply:
        body = self.lower(request)
        baseline = request.baseline.encode("utf-8")
        counts = Counter(m.kind for m in request.messages)
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "none"
        last = next((m for m in reversed(request.messages) if m.kind in ("user", "tool_result")), None)
        lines = [
            f"[{request.model}] baseline {len(baseline)} bytes, sha256 {hashlib.sha256(baseline).hexdigest()[:16]}",
            f"messages: {len(request.messages)} ({kinds})",
        ]
        updates = [m for m in request.messages if m.kind == "system_update"]
        if updates:
            lines.append(f"latest system update: {_snippet(updates[-1].text)}")
        if last is not None:
            lines.append(f"you said: {_snippet(last.text)}")
        text = "\n".join(lines)
        if stream is not None:
            stream(text)
        size = len(canonical_json(body))
        return Reply(text=text, usage=Usage(input_tokens=size // 4, output_tokens=len(text) // 4))
