"""Text a user hands nia (stdin, arguments), decoded strictly: undecodable bytes are refused, never stored.

The policy (docs/security.md, "Undecodable input"): input that nia stores in a
session or sends to a model must be UTF-8. A byte that does not decode is
refused with one line naming where it is and at which offset, before anything
is stored; nia never guesses an encoding or replaces bytes behind the user's
back, since the replaced text would be what the model sees and what is kept.
On POSIX, Python hands undecodable argument bytes over as lone surrogates
(``surrogateescape``); those are refused the same way.
"""

from __future__ import annotations

import sys

from nia_core.errors import UsageError


class UndecodableInput(UsageError):
    """Input that is not UTF-8 text; nothing was stored."""


def decode_input(data: bytes, where: str) -> str:
    """``data`` as UTF-8, else :class:`UndecodableInput` naming ``where`` and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UndecodableInput(
            f"{where} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); nothing was stored. "
            "Convert it first, e.g. with: iconv -f latin1 -t utf-8"
        ) from None


def read_stdin(where: str = "stdin") -> str:
    """All of stdin, decoded strictly (the text stream's own decoding depends on the locale)."""
    stream = sys.stdin.buffer if sys.stdin is not None else None
    return decode_input(stream.read() if stream is not None else b"", where)


def stdin_is_terminal() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def check_text(value: str, where: str) -> str:
    """``value`` if it encodes as UTF-8, else :class:`UndecodableInput` (a lone surrogate, an undecodable byte)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(value[exc.start])
        what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"a lone surrogate U+{code:04X}"
        raise UndecodableInput(
            f"{where} is not valid UTF-8 ({what} at offset {exc.start}); nothing was stored"
        ) from None
    return value
