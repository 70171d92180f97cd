"""Messages from an MCP client over stdio: parsed within bounds, refused with an error that quotes little.

The SDK's stdio transport drops a line that is not JSON-RPC without a word,
takes a request whose ``id`` is ``null`` (or ``true``, or ``1.5``) for a
notification and never answers it, and starts a handler for every request it
reads however many are waiting for their answers to be read. Here every line
that is not a JSON-RPC message gets a JSON-RPC error (``-32700`` not JSON,
``-32600`` not a valid message), and :class:`InFlight` stops reading once
:data:`~nia_core.mcp.limits.IN_FLIGHT` requests are unanswered, so a client
that writes and never reads is held back by its own pipe.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

import anyio
import mcp_types as types
import pydantic_core
from pydantic import ValidationError

from nia_core.mcp.limits import IN_FLIGHT, IN_FLIGHT_BYTES, MAX_ID_CHARS, MAX_MESSAGE_BYTES
from nia_core.mcp.stdio import Oversize

_ID_VALUE = r'(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")'
_LEADING_ID = re.compile(rb'^\s*\{(?:[^{}\[\]"]|"(?:[^"\\]|\\.)*")*?"id"\s*:\s*' + _ID_VALUE.encode())
"""An ``id`` member before any nested value (``{"jsonrpc": "2.0", "id": 7, "method": ...``)."""
_TRAILING_ID = re.compile(rb'[{,]\s*"id"\s*:\s*' + _ID_VALUE.encode() + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')
"""An ``id`` member at the very end (``..., "jsonrpc": "2.0", "id": 7}``, as the TypeScript SDK writes)."""


def error(ident: types.RequestId | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message))


def valid_id(value: object) -> bool:
    """MCP request ids are strings or integers (never ``null``, booleans or fractions).

    Every answer repeats its id, so an id is also bounded: a string of at most
    :data:`MAX_ID_CHARS` characters, a 64-bit integer.
    """
    if isinstance(value, str):
        return len(value) <= MAX_ID_CHARS
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


BAD_ID = f"Invalid request: 'id' must be a string (at most {MAX_ID_CHARS} characters) or a 64-bit integer"


def bad_id(data: object) -> bool:
    """A request whose ``id`` is there but not an id (the SDK would take it for a notification and never answer)."""
    return isinstance(data, dict) and "method" in data and "id" in data and not valid_id(data["id"])


def parse(line: bytes) -> tuple[types.JSONRPCMessage | None, types.JSONRPCError | None]:
    """The message on ``line``, or the error that answers it."""
    try:
        data: Any = pydantic_core.from_json(line)
    except ValueError as exc:
        return None, error(None, types.PARSE_ERROR, f"Parse error: not JSON ({exc})")
    if not isinstance(data, dict):
        return None, error(None, types.INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object")
    if bad_id(data):
        return None, error(None, types.INVALID_REQUEST, BAD_ID)
    ident = data.get("id")
    try:
        message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError:
        shown = ident if valid_id(ident) else None
        return None, error(shown, types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message")
    return message, None


def oversize(line: Oversize) -> types.JSONRPCError:
    """The answer to a line too long to read: its ``id`` when one end of the line shows it."""
    found = _LEADING_ID.match(line.head) or _TRAILING_ID.search(line.tail)
    ident: types.RequestId | None = None
    if found is not None:
        try:
            value = pydantic_core.from_json(found.group(1))
        except ValueError:
            value = None
        ident = value if valid_id(value) else None
    return error(ident, types.INVALID_REQUEST, _too_large(line.size, "message"))


class InFlight:
    """Requests read and not yet answered: :meth:`admit` waits while there are too many, or too large."""

    def __init__(self, count: int = IN_FLIGHT, size: int = IN_FLIGHT_BYTES) -> None:
        self.count = count
        self.size = size
        self._open: dict[Hashable, list[int]] = {}
        self._waiting = 0
        self._bytes = 0
        self._changed = anyio.Event()

    def __len__(self) -> int:
        return self._waiting

    async def admit(self, ident: types.RequestId, size: int) -> None:
        """Wait for room (one request is always let in), then count ``ident`` as unanswered."""
        while self._waiting and (self._waiting >= self.count or self._bytes + size > self.size):
            await self._changed.wait()
        self._open.setdefault(_key(ident), []).append(size)
        self._waiting += 1
        self._bytes += size

    def answered(self, ident: types.RequestId) -> None:
        sizes = self._open.get(_key(ident))
        if not sizes:
            return
        self._bytes -= sizes.pop()
        self._waiting -= 1
        if not sizes:
            del self._open[_key(ident)]
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def cancelled(self, params: object) -> None:
        """A request the client cancelled may never be answered (the protocol says not to)."""
        ident = params.get("requestId") if isinstance(params, dict) else None
        if valid_id(ident):
            self.answered(ident)  # type: ignore[arg-type]


def _key(ident: types.RequestId) -> Hashable:
    return (type(ident).__name__, ident)


class ScreenHttp:
    """ASGI middleware before the SDK's streamable HTTP app: a body over the limit is refused (413) unread,
    and a request whose ``id`` is not an id gets ``-32600`` (the SDK would accept it as a notification)."""

    def __init__(self, app: Any, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > self.limit:
                await _answer(send, 413, error(None, types.INVALID_REQUEST, _too_large(len(body), "body", more=True)))
                return
            if not message.get("more_body", False):
                break
        data = bytes(body)
        del body
        if b'"id"' in data:
            try:
                parsed = pydantic_core.from_json(data)
            except ValueError:
                parsed = None  # the SDK answers -32700
            if bad_id(parsed):
                await _answer(send, 400, error(None, types.INVALID_REQUEST, BAD_ID))
                return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": data, "more_body": False}

        await self.app(scope, replay, send)


async def _answer(send: Any, status: int, refusal: types.JSONRPCError) -> None:
    payload = refusal.model_dump_json(by_alias=True, exclude_unset=True).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _too_large(size: int, what: str, *, more: bool = False) -> str:
    return (
        f"Invalid request: the {what} is {'over ' if more else ''}{size:,} bytes; nia mcp reads messages of at most "
        f"{MAX_MESSAGE_BYTES // (1024 * 1024)} MiB"
    )
