"""The official SDKs' own stream fixtures, and ways to serve their exact bytes from a :class:`RawServer`.

Anthropic's come from the files its sdist ships (``recorded/sdk/``, see the
README there); OpenAI's SDK builds its chat streams inline in its tests, and
:func:`openai_stream` builds them the same way (``data: {json.dumps(event)}``
per event, a blank line after each, ``data: [DONE]`` last).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

SDK = Path(__file__).parent / "recorded" / "sdk"

Answer = Callable[[BaseHTTPRequestHandler], None]


def anthropic(name: str) -> bytes:
    """An Anthropic SDK fixture, byte for byte (``basic_response``, ``tool_use_response``, ...)."""
    return (SDK / f"anthropic_{name}.txt").read_bytes()


def openai_stream(events: Iterable[dict[str, Any]], *, done: bool = True) -> bytes:
    """Chat chunks as the OpenAI SDK's tests write them (tests/lib/chat/test_content_filter.py)."""
    text = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


def openai_chunk(
    delta: dict[str, Any],
    finish: str | None = None,
    *,
    index: int = 0,
    usage: dict[str, Any] | None = None,
    obj: str = "chat.completion.chunk",
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` as the SDK's tests build it (``chatcmpl-example``, ``gpt-4o-2024-08-06``)."""
    event: dict[str, Any] = {
        "id": "chatcmpl-example",
        "object": obj,
        "created": 0,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        event["usage"] = usage
    return event


def openai_usage(prompt: int = 5, completion: int = 3, cached: int = 0) -> dict[str, Any]:
    """The last chunk ``stream_options.include_usage`` promises: no choices, the usage of the whole reply."""
    return {
        "id": "chatcmpl-example",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "gpt-4o-2024-08-06",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def _headers(handler: BaseHTTPRequestHandler, extra: dict[str, str]) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    for key, value in extra.items():
        handler.send_header(key, value)
    handler.end_headers()


def chunked(body: bytes, *, cut_after: int | None = None, size: int = 97) -> Answer:
    """Serve ``body`` with chunked framing; ``cut_after``: close after that many body bytes, mid-chunk."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        _headers(handler, {"Transfer-Encoding": "chunked"})
        sent = 0
        for start in range(0, len(body), size):
            piece = body[start : start + size]
            handler.wfile.write(b"%x\r\n" % len(piece))
            if cut_after is not None and sent + len(piece) > cut_after:
                handler.wfile.write(piece[: cut_after - sent])
                handler.wfile.flush()
                handler.close_connection = True
                return
            handler.wfile.write(piece + b"\r\n")
            sent += len(piece)
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    return answer


def close_delimited(body: bytes, *, cut_after: int | None = None) -> Answer:
    """Serve ``body`` with neither a length nor chunks: the end of the connection is the end of the body."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        _headers(handler, {})
        handler.wfile.write(body if cut_after is None else body[:cut_after])
        handler.wfile.flush()
        handler.close_connection = True

    return answer


def with_length(body: bytes, *, declared: int | None = None) -> Answer:
    """Serve ``body`` with a ``Content-Length`` (``declared``: a larger one, so the body falls short)."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        _headers(handler, {"Content-Length": str(len(body) if declared is None else declared)})
        handler.wfile.write(body)
        handler.wfile.flush()
        handler.close_connection = True

    return answer
