"""The value a JSON text cut short stands for: what a model streamed before its output token limit.

A tool call cut by ``max_tokens`` (Anthropic) or ``finish_reason: "length"``
(OpenAI) arrives as the start of a JSON object. The official SDKs read it in
partial mode (the Anthropic SDK's ``jiter.from_json(..., partial_mode=True)``):
every container still open is closed, and a member that did not finish (a
string without its closing quote, a key without a value, a number or literal
the text ends inside) is left out. :func:`complete_prefix` does the same with
one scan, so even megabytes of input cost one pass and one ``json.loads``.
"""

from __future__ import annotations

import json
from typing import Any

_WHITESPACE = " \t\r\n"
_SCALAR = set("+-0123456789.eEtruefalsn")


def complete_prefix(text: str) -> Any:
    """The longest complete reading of ``text``; ``None`` when not even one container was opened."""
    stack: list[str] = []
    safe: tuple[int, str] | None = None
    """(end of the prefix, the closers it needs): the last point where every open member was whole."""
    expect = "value"  # value | key | colon | next | value_or_end | key_or_end
    i, n = 0, len(text)

    def closers() -> str:
        return "".join("}" if opener == "{" else "]" for opener in reversed(stack))

    while i < n:
        char = text[i]
        if char in _WHITESPACE:
            i += 1
            continue
        if expect in ("value", "value_or_end") and char in "{[":
            stack.append(char)
            i += 1
            expect = "key_or_end" if char == "{" else "value_or_end"
            safe = (i, closers())
            continue
        if (expect == "key_or_end" and char == "}") or (expect in ("value_or_end", "next") and char == "]"):
            if not stack or (stack[-1] == "{") != (char == "}"):
                break
            stack.pop()
            i += 1
        elif expect == "next" and char == "}":
            if not stack or stack[-1] != "{":
                break
            stack.pop()
            i += 1
        elif expect == "next" and char == ",":
            i += 1
            expect = "key" if stack and stack[-1] == "{" else "value"
            continue
        elif expect == "colon" and char == ":":
            i += 1
            expect = "value"
            continue
        elif char == '"' and expect in ("value", "value_or_end", "key", "key_or_end"):
            end = _string_end(text, i)
            if end is None:
                break  # the text ends inside the string: the member is left out
            i = end
            if expect in ("key", "key_or_end"):
                expect = "colon"
                continue
        elif expect in ("value", "value_or_end") and char in _SCALAR:
            end = i
            while end < n and text[end] in _SCALAR:
                end += 1
            if end == n and text[i:end] not in ("true", "false", "null"):
                break  # a number (or literal) the text ends inside may be longer: left out
            try:
                json.loads(text[i:end])
            except ValueError:
                break
            i = end
        else:
            break  # not JSON from here on: keep what was whole before it
        # A whole value ended at i.
        if not stack:
            return _loads(text[:i])
        safe = (i, closers())
        expect = "next"
    if safe is None:
        return None
    end, close = safe
    return _loads(text[:end] + close)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # a bad escape inside a string, say: nothing usable
        return None


def _string_end(text: str, start: int) -> int | None:
    """The index after the closing quote of the string opening at ``start``, ``None`` if it never closes."""
    i = start + 1
    n = len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == '"':
            return i + 1
        i += 1
    return None
