r"""A terminal shows control characters nia prints; it never obeys them.

Much of what nia prints comes from outside: a file's content (``nia context
show``), a ``commands.toml`` description (``nia --help``), a key of
``project.toml`` quoted in a warning, a plugin's name or error message, a
model's reply. A terminal obeys control characters in it: ``ESC ] 0;…`` sets
the window title, ``ESC ] 52;…`` writes the clipboard, cursor moves and a bare
``\r`` overwrite what was printed. The one place that sees all of it is the
stream, so a real process wraps ``sys.stdout`` and ``sys.stderr`` in
:class:`Terminal` when they are terminals (:func:`guard_terminals`): every C0
and C1 control character but newline and tab is shown as ``\xNN``. Pipes and
files are never wrapped, so ``--json``, prompts and protocol streams reach them
byte for byte. What a hook's plugins wrote to the descriptors themselves is
passed on through :func:`written_to`.

nia's own styling (``nia dev``'s colours) escapes its text with :func:`shown`
first and then writes under :data:`OWN_STYLING`, which the wrapper lets pass.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from functools import cache
from typing import IO, Any

from nia_core.stdio import real_stdout

_C0_C1 = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\udc80-\udc9f]|\r(?!\n)"
"""Also an undecodable byte of the C1 range in a file name (``surrogateescape``), which would reach the terminal
as that raw byte: ``0x9b`` is CSI on an 8-bit terminal."""
_C0_C1_BYTES = rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|\xc2[\x80-\x9f]"
_own = threading.local()


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[bytes]]:
    """Compiled on first use: the agent hook imports this module, and only a terminal needs them."""
    return re.compile(_C0_C1), re.compile(_C0_C1_BYTES)


def terminal_safe(text: str) -> str:
    r"""``text`` with every C0/C1 control character but newline and tab shown as ``\xNN``, never obeyed.

    A carriage return is kept only before a newline (a CRLF line end), where
    it overwrites nothing. ``ESC ] 0;…`` (a window title), ``ESC ] 52;…`` (a
    clipboard write), cursor moves and a bare ``\r`` then print as text.
    """
    return _patterns()[0].sub(lambda m: f"\\x{ord(m.group()) & 0xFF:02x}", text)


def written_to(fd: int, data: bytes) -> bytes:
    """``data`` as it may be written straight to descriptor ``fd``: made :func:`terminal_safe` when ``fd`` is a
    terminal (what a hook's plugins wrote to its fds 1 and 2, passed on at its end), else unchanged."""
    try:
        tty = os.isatty(fd)
    except OSError:
        tty = False
    if not tty:
        return data
    return terminal_safe(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def _terminal_safe_bytes(data: bytes) -> bytes:
    return _patterns()[1].sub(lambda m: b"\\x%02x" % (m.group()[-1] if len(m.group()) == 2 else m.group()[0]), data)


class own_styling:
    """nia's own styling (``nia dev``'s colours): its text went through :func:`terminal_safe` before it was styled."""

    __slots__ = ()

    def __enter__(self) -> None:
        _own.depth = getattr(_own, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        _own.depth -= 1


OWN_STYLING = own_styling()


class Terminal:
    """Stands in for a stream that is a terminal: control characters written to it are shown, not obeyed.

    Everything nia prints can carry text from outside (a file, a plugin's name
    or error, a ``commands.toml`` description, a key in a warning), so the one
    place that sees all of it is the stream. Pipes and files are never wrapped:
    ``--json``, prompts and protocol streams reach them byte for byte.
    """

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # as a text stream does (click probes with write(b""))
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.stream.write(text if getattr(_own, "depth", 0) else terminal_safe(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    @property
    def buffer(self) -> Any:
        return _BinaryTerminal(self.stream.buffer)  # type: ignore[attr-defined]

    def isatty(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:  # encoding, errors, flush, fileno, closed...
        return getattr(self.stream, name)


class _BinaryTerminal:
    """The binary side of a :class:`Terminal` (``click.echo`` of bytes, a stream re-wrapped for its encoding)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def write(self, data: bytes) -> int:
        self.raw.write(bytes(data) if getattr(_own, "depth", 0) else _terminal_safe_bytes(bytes(data)))
        return len(data)

    def isatty(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def guard_terminals() -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` in :class:`Terminal` where they are terminals (real processes only)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            tty = stream is not None and not isinstance(stream, Terminal) and stream.isatty()
        except (OSError, ValueError, AttributeError):
            tty = False
        if tty:
            setattr(sys, name, Terminal(stream))


def on_a_terminal(*, err: bool = False) -> bool:
    """Whether nia's own output (``err``: its stderr) goes to a :class:`Terminal`: where its own styling may go."""
    return isinstance(sys.stderr if err else real_stdout(), Terminal)
