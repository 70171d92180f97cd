"""Text from a project (test ids, file names, tool messages) made safe for one line of a prompt.

Everything these plugins show comes from files a cloned repository may have
written, so no character of it may start a line of its own, end a code span
or drive a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TypeVar

from nia_core import escape_name

T = TypeVar("T")

MAX_NAME = 300
"""Characters of one name (a test id, a path) shown; longer ones are shortened in the middle."""
MAX_TEXT = 200
"""Characters of one message shown."""
VALUE_BUDGET = 256 * 1024
"""Bytes of JSON the names in one value may take, whatever they hold (nia refuses a value over 1 MiB)."""


def shorten(text: str, limit: int) -> str:
    """``text`` cut in the middle to ``limit`` characters, so both ends stay readable."""
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return text[:half] + "…" + text[len(text) - half :]


def plain(text: str, limit: int = MAX_TEXT) -> str:
    """One line of text, escaped as nia names files (``\\x0a``, ``\\x1b``, ``\\u2028``; a backslash doubled)."""
    return shorten(escape_name(text), limit)


def code(name: str, limit: int = MAX_NAME) -> str:
    """A name in a code span: as it is when harmless, else C-quoted, so nothing in it ends the span or the line."""
    if name and all(ch.isprintable() and ch != "`" for ch in name):
        return f"`{shorten(name, limit)}`"
    return '`"' + shorten(escape_name(name).replace('"', '\\"').replace("`", "\\x60"), limit) + '"`'


def listing(names: Sequence[str], total: int, show: int, label: Callable[[str], str] = code) -> str:
    """``a, b, c`` in code spans, at most ``show`` of them, then ``and N more`` for the rest of ``total``."""
    shown = [label(name) for name in names[:show]]
    rest = total - len(shown)
    if rest > 0:
        shown.append(f"and {rest:,} more")
    return ", ".join(shown)


def within(items: Sequence[T], budget: int = VALUE_BUDGET) -> list[T]:
    """The first ``items`` whose JSON together stays within ``budget`` bytes (a value nia stores stays small)."""
    kept: list[T] = []
    used = 0
    for item in items:
        used += len(json.dumps(item))
        if used > budget:
            break
        kept.append(item)
    return kept


def plural(count: int, one: str, many: str | None = None) -> str:
    """``1 test``, ``3 tests``."""
    return f"{count:,} {one if count == 1 else (many or one + 's')}"
