"""What ``nia mcp`` accepts from a client, and how much of it an error may quote back.

A client is a program nia does not control: a message of any size, a flood of
requests it never reads the answers to, or an argument of 16 MiB must cost the
server a bounded amount of memory, and an error must never hand the input back
at full size (a host puts tool results into the model's context).
"""

from __future__ import annotations

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest JSON-RPC message read (one stdio line, one HTTP body); a larger one is refused unparsed."""

QUEUED_BYTES = MAX_MESSAGE_BYTES
"""Bytes read from stdin but not yet parsed: past this the reader stops reading (one large message at most)."""

QUEUED_LINES = 256
"""Lines read from stdin but not yet parsed (many small ones)."""

IN_FLIGHT = 64
"""Requests handed to the server and not yet answered: past this no more are read until one is answered."""

IN_FLIGHT_BYTES = 2 * MAX_MESSAGE_BYTES
"""The size of the requests in flight together (one request is always let through)."""

MAX_ID_CHARS = 256
"""The longest string id a request may have: every answer repeats its id whole."""

QUOTE_CHARS = 60
"""The most of a client's value an error message repeats."""

ERROR_CHARS = 500
"""The longest error text the server sends (its own and the SDK's): longer ones are cut."""


def quoted(value: object, limit: int = QUOTE_CHARS) -> str:
    """``repr`` of at most ``limit`` characters of ``value``, saying how long it was when cut."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


def clipped(text: str, limit: int = ERROR_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"
