"""Text from a repository (paths, ref names, subjects) made safe for one line of a prompt."""

from __future__ import annotations

MAX_PATH = 300


MAX_TEXT = 200


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if ch in named:
        return named[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return text[:half] + "…" + text[-half:]


def plain(text: str, limit: int = MAX_TEXT) -> str:
    """One line of text from the repository: anything that is not printable is escaped."""
    return _shorten("".join(ch if ch.isprintable() else _escape_char(ch) for ch in text), limit)


def quoted(name: str, limit: int = MAX_PATH) -> str:
    """A path or ref name for a code span: as is when harmless, else C-quoted like git does.

    No character of the result can end the code span or the line it is on.
    """
    if name and all(ch.isprintable() and ch not in '`"\\' for ch in name):
        return _shorten(name, limit)
    out = []
    for ch in name:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "`":
            out.append("\\x60")
        else:
            out.append(ch if ch.isprintable() else _escape_char(ch))
    return '"' + _shorten("".join(out), limit) + '"'
