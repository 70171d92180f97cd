"""Editing a JSON file's text in place: each change touches only its own span.

A user's settings file is theirs: its indentation, key order, spacing and
line breaks must survive nia's install, and an uninstall must give back the
bytes that were there before. So nia never re-serialises the file. It parses
the text into spans (where each value, member and element starts and ends),
and each edit is one splice:

- appending to an array or an object puts ``,`` + the whitespace the container
  already uses before its first item + the new item right after the last one
  (an empty container gets the file's indentation); removing the last item
  takes exactly that back, so install then uninstall is byte for byte the
  original;
- removing any other item takes it and the separator after it;
- replacing a value replaces its span only.

The text must already be valid JSON nested at most
:data:`nia_core.agents.settings_file.MAX_NESTING` levels (the caller checks).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_TOKEN = re.compile(
    r'(?P<ws>\s+)|(?P<str>"(?:[^"\\]|\\.)*")|(?P<punct>[{}\[\]:,])|(?P<lit>[^\s{}\[\]:,"]+)',
    re.DOTALL,
)

Where = tuple[str | int, ...]
"""Where a value is: member names and element indexes from the top."""


@dataclass
class Node:
    """A value's span, and for a container its items' spans."""

    start: int
    end: int
    kind: str
    """``object``, ``array`` or ``scalar``."""
    items: list[tuple[str | None, int, Node]] = field(default_factory=list)
    """``(name or None, item start, value)``: a member starts at its name, an element at its value."""


def parse(text: str) -> Node:
    """The span tree of ``text`` (valid JSON); ``ValueError`` when it is not."""
    tokens = [(m.lastgroup, m.start(), m.end()) for m in _TOKEN.finditer(text) if m.lastgroup != "ws"]
    position = 0

    def value() -> Node:
        nonlocal position
        kind, start, end = tokens[position]
        position += 1
        if kind in ("str", "lit"):
            return Node(start, end, "scalar")
        char = text[start]
        if char not in "{[":
            raise ValueError(f"unexpected {char!r} at offset {start}")
        closing = "}" if char == "{" else "]"
        node = Node(start, end, "object" if char == "{" else "array")
        if text[tokens[position][1]] == closing and tokens[position][0] == "punct":
            node.end = tokens[position][2]
            position += 1
            return node
        while True:
            name = None
            item_start = tokens[position][1]
            if node.kind == "object":
                name = json.loads(text[tokens[position][1] : tokens[position][2]])
                position += 2  # the name and the colon
            node.items.append((name, item_start, value()))
            kind, start, end = tokens[position]
            position += 1
            if text[start] == closing:
                node.end = end
                return node

    root = value()
    return root


def find(root: Node, path: Where) -> Node:
    """The node at ``path``; ``KeyError`` when it is not there."""
    node = root
    for step in path:
        if isinstance(step, int):
            node = node.items[step][2]
        else:
            node = next(item for name, _, item in node.items if name == step)
    return node


def indent_unit(text: str) -> str:
    """The file's indentation step (two spaces when it has none to copy)."""
    match = re.search(r"\n([ \t]+)[\"\[{]", text)
    return match.group(1) if match else "  "


def _line_indent(text: str, offset: int) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    return re.match(r"[ \t]*", text[line_start:]).group()  # type: ignore[union-attr]


def _render(value: Any, lead: str, unit: str, pretty: bool) -> str:
    if not pretty:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, indent=unit).replace("\n", "\n" + lead)


def append(text: str, path: Where, item: Any, name: str | None = None) -> str:
    """``text`` with ``item`` appended to the array at ``path`` (or, with ``name``, to the object as a member)."""
    container = find(parse(text), path)
    unit = indent_unit(text)
    if container.items:
        first_start = container.items[0][1]
        gap = text[container.start + 1 : first_start]  # the whitespace before the first item: copied
        pretty = "\n" in gap
        lead = gap[gap.rfind("\n") + 1 :] if pretty else ""
        rendered = _render(item, lead, unit, pretty)
        if name is not None:
            rendered = f"{json.dumps(name, ensure_ascii=False)}: {rendered}"
        at = container.items[-1][2].end
        return f"{text[:at]},{gap or ' '}{rendered}{text[at:]}"
    base = _line_indent(text, container.start)
    pretty = "\n" in text
    lead = base + unit
    rendered = _render(item, lead, unit, pretty)
    if name is not None:
        rendered = f"{json.dumps(name, ensure_ascii=False)}: {rendered}"
    inner = f"\n{lead}{rendered}\n{base}" if pretty else rendered
    return f"{text[: container.start + 1]}{inner}{text[container.end - 1 :]}"


def remove(text: str, path: Where) -> str:
    """``text`` without the item (member or element) at ``path``, and without the separator it brought."""
    *outer, step = path
    container = find(parse(text), tuple(outer))
    index = step if isinstance(step, int) else next(i for i, (n, _, _) in enumerate(container.items) if n == step)
    items = container.items
    if len(items) == 1:
        return f"{text[: container.start + 1]}{text[container.end - 1 :]}"
    if index == len(items) - 1:
        return f"{text[: items[index - 1][2].end]}{text[items[index][2].end :]}"
    return f"{text[: items[index][1]]}{text[items[index + 1][1] :]}"


def replace(text: str, path: Where, value: Any) -> str:
    """``text`` with the value at ``path`` replaced (a scalar, written compactly)."""
    node = find(parse(text), path)
    return f"{text[: node.start]}{json.dumps(value, ensure_ascii=False)}{text[node.end :]}"
