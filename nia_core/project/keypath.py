"""Key paths in TOML files: how errors name a key, and on which line it sits.

:mod:`tomllib` gives values but no positions, so a small line scanner maps each
table header and key assignment to its line. Messages then read like
``.nia/commands.toml:14: [[workflows]][1].operations[0].context[2].path ...``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Segment = str | int


@dataclass(frozen=True)
class KeyPath:
    """A path into a TOML document: its segments, and how a user would write it."""

    segments: tuple[Segment, ...] = ()
    text: str = ""
    header: bool = False
    """Whether ``text`` is a bare table header (``[project]``), so a child array of tables joins it."""

    def table(self, name: str) -> KeyPath:
        """A child table (``[project]``, or ``.name`` below a key)."""
        if not self.segments:
            return KeyPath((name,), f"[{name}]", header=True)
        if self.header:
            return KeyPath((*self.segments, name), f"[{self.text[1:-1]}.{name}]", header=True)
        return self.key(name)

    def key(self, name: str) -> KeyPath:
        if not self.segments:
            return KeyPath((name,), name)
        return KeyPath((*self.segments, name), f"{self.text}.{name}")

    def element(self, name: str, index: int) -> KeyPath:
        """Element ``index`` of the array of tables ``name`` (``[[workflows]][1]``)."""
        segments = (*self.segments, name, index)
        if not self.segments:
            return KeyPath(segments, f"[[{name}]][{index}]")
        if self.header:
            return KeyPath(segments, f"[[{self.text[1:-1]}.{name}]][{index}]")
        return KeyPath(segments, f"{self.text}.{name}[{index}]")

    def item(self, index: int) -> KeyPath:
        """Item ``index`` of a plain array (``[commit].types[2]``)."""
        return KeyPath((*self.segments, index), f"{self.text}[{index}]")

    def __str__(self) -> str:
        return self.text


# Patterns compiled on first use (re caches them): a process that reads no TOML file never compiles them.
_HEADER = r"^\s*(\[\[?)\s*(.+?)\s*(\]\]?)\s*(?:#.*)?$"
_KEY = r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*="""
_PART = r"""\s*([A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*(?:\.|$)"""


_STRING = r""""(?:[^"\\]|\\.)*"|'[^']*'|#.*$"""


def _brackets(line: str) -> int:
    """Opened minus closed square brackets, outside strings and comments."""
    bare = re.sub(_STRING, "", line)
    return bare.count("[") - bare.count("]")


def _dotted(text: str) -> tuple[str, ...]:
    return tuple(part.strip("\"'") for part in re.findall(_PART, text))


class KeyLines:
    """Line numbers of the headers and keys of one TOML text (1-based)."""

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[Segment, ...], int] = {}
        counts: dict[tuple[Segment, ...], int] = {}
        current: tuple[Segment, ...] = ()
        in_string: str | None = None
        depth = 0
        for number, line in enumerate(text.splitlines(), start=1):
            if in_string is not None:
                if line.count(in_string) % 2 == 1:
                    in_string = None
                continue
            if depth > 0:  # inside a multi-line array
                depth += _brackets(line)
                continue
            header = re.match(_HEADER, line)
            if header and header.group(1) == header.group(3)[::-1].replace("]", "["):
                names = _dotted(header.group(2))
                parent = self._resolve(names[:-1], counts)
                full = (*parent, names[-1])
                if header.group(1) == "[[":
                    index = counts.get(full, 0)
                    counts[full] = index + 1
                    current = (*full, index)
                    self.lines.setdefault(full, number)
                else:
                    current = full
                self.lines.setdefault(current, number)
                continue
            key = re.match(_KEY, line)
            if key:
                self.lines.setdefault((*current, *_dotted(key.group(1))), number)
                rest = line[key.end() :]
                for quote in ('"""', "'''"):
                    if rest.count(quote) % 2 == 1:
                        in_string = quote
                        break
                else:
                    depth = max(0, _brackets(rest))

    @staticmethod
    def _resolve(names: tuple[str, ...], counts: dict[tuple[Segment, ...], int]) -> tuple[Segment, ...]:
        path: tuple[Segment, ...] = ()
        for name in names:
            path = (*path, name)
            if path in counts:
                path = (*path, counts[path] - 1)
        return path

    def line_of(self, path: KeyPath | tuple[Segment, ...]) -> int | None:
        """The line of ``path``, or of its nearest enclosing key or table that has one."""
        segments = path.segments if isinstance(path, KeyPath) else path
        while segments:
            line = self.lines.get(segments)
            if line is not None:
                return line
            segments = segments[:-1]
        return None
