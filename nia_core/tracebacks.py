"""Tracebacks shown with ``--debug`` (and ``NIA_DEBUG=1``), their source lines read through the checked reader.

Python's own formatting reads each frame's line with ``linecache``, which opens
whatever file a code object names: plugin code can be compiled under any file
name, so a FIFO named so would freeze the process that formats the traceback
(``nia dev`` reporting a plugin's error), and a device or a huge file would be
read. Here a frame's line comes from a regular file, read through
:func:`nia_core.files.read_checked` up to :data:`SOURCE_LIMIT` bytes, or is left out.
"""

from __future__ import annotations

import logging
import sys
import traceback
from types import TracebackType

from nia_core.files import read_checked

SOURCE_LIMIT = 16 * 1024 * 1024
"""The most bytes read of one source file to show its lines (as much as nia compiles of a plugin module)."""


def traceback_text(exc: BaseException) -> str:
    """``exc``'s traceback as Python prints it (causes, contexts and groups included), lines read checked."""
    sources: dict[str, list[str]] = {}

    def line(filename: str, number: int | None) -> str:
        if number is None or not filename or filename.startswith("<"):
            return ""
        if filename not in sources:
            try:
                content = read_checked(filename, None, SOURCE_LIMIT)
            except OSError:  # Refused too: a FIFO, a device, a folder
                sources[filename] = []
            else:
                sources[filename] = content.data.decode("utf-8", "replace").splitlines()
        lines = sources[filename]
        return lines[number - 1] if 0 < number <= len(lines) else ""

    seen: set[int] = set()
    pending = [traceback.TracebackException(type(exc), exc, exc.__traceback__, lookup_lines=False)]
    first = pending[0]
    while pending:
        each = pending.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        each.stack = traceback.StackSummary.from_list(
            [
                # ``line`` given (even empty): the summary never looks the line up in linecache itself
                traceback.FrameSummary(
                    frame.filename, frame.lineno, frame.name, lookup_line=False, line=line(frame.filename, frame.lineno)
                )
                for frame in each.stack
            ]
        )
        pending.extend(nested for nested in (each.__cause__, each.__context__) if nested is not None)
        pending.extend(getattr(each, "exceptions", None) or ())
    return "".join(first.format())


class CheckedFormatter(logging.Formatter):
    """A ``logging`` formatter whose ``exc_info`` tracebacks are :func:`traceback_text`."""

    def formatException(
        self, ei: tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]
    ) -> str:
        exc = ei[1]
        return "" if exc is None else traceback_text(exc).rstrip("\n")


def print_uncaught(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """A ``sys.excepthook`` printing :func:`traceback_text` (what ``--debug`` lets through)."""
    if exc.__traceback__ is None:
        exc = exc.with_traceback(tb)
    sys.stderr.write(traceback_text(exc))
