"""Errors nia reports to users.

Every error a user can cause derives from :class:`NiaError`; the CLI prints its
message on one line and exits with ``exit_code`` instead of showing a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

CALLERS = frozenset({"nia_core", "nia_plugins", "pluggy"})
"""Top-level packages whose frames call plugin code, beside Python's standard library: never the plugin's line."""


def raised_at(exc: BaseException) -> tuple[str, int] | None:
    """``(file, line)`` where ``exc`` was raised: in the plugin's own code (:func:`plugin_frame`) when it ran,
    else the traceback's last frame (nia's own error). A refused ``os._exit`` is raised by nia's guard:
    where it was called is what names the plugin's line."""
    if isinstance(exc, ExitRefused):
        return exc.at
    return plugin_frame(exc) or _last_frame(exc)


def plugin_frame(exc: BaseException) -> tuple[str, int] | None:
    """``(file, line)`` in the code nia called where ``exc`` was raised, ``None`` when none of it ran.

    The first frame of the traceback that is neither nia's (:data:`CALLERS`)
    nor the standard library's is the code nia called (a plugin's hook,
    loader, renderer); the answer is the deepest frame of that same top-level
    package, so a loader whose ``json.loads`` fails, or whose HTTP library
    does, is named at its own line, not inside the library. Frames are read
    from the traceback's code objects: no source file is opened.
    """
    if isinstance(exc, ExitRefused):
        return exc.at
    import traceback  # on a failure only: not part of every start

    frames = [
        (frame.f_code.co_filename, line, _top_package(frame.f_globals))
        for frame, line in traceback.walk_tb(exc.__traceback__)
        if not frame.f_code.co_filename.startswith("<frozen")
    ]
    called = next((top for _, _, top in frames if not _is_caller(top)), None)
    if called is None:
        return None
    file, line, _ = next(frame for frame in reversed(frames) if frame[2] == called)
    return file, line


def where_raised(exc: BaseException | None) -> str:
    """`` (file:line)`` of :func:`plugin_frame`, the file named as messages name files (:func:`shown_path`);
    empty when only nia's own code or Python's ran."""
    at = plugin_frame(exc) if exc is not None else None
    return f" ({shown_path(at[0])}:{at[1]})" if at else ""


def _last_frame(exc: BaseException) -> tuple[str, int] | None:
    import traceback

    frames = [
        (frame.f_code.co_filename, line)
        for frame, line in traceback.walk_tb(exc.__traceback__)
        if not frame.f_code.co_filename.startswith("<frozen")
    ]
    return frames[-1] if frames else None


def _top_package(namespace: dict[str, object]) -> str:
    name = namespace.get("__name__")
    return name.partition(".")[0] if isinstance(name, str) else ""


def _is_caller(top: str) -> bool:
    return top in CALLERS or top in sys.stdlib_module_names


def message_of(exc: BaseException | None) -> str:
    """``str(exc)``, or what went wrong making it: a plugin's exception words itself with its own code."""
    try:
        return str(exc)
    except BaseException as failed:  # a report must never fail for its wording
        # A __str__ raising SystemExit or KeyboardInterrupt is the plugin's own (on a loader's worker it ended the
        # worker, and the boundary waited out the loader's timeout); the user's Ctrl-C reaches the main thread.
        import threading

        if isinstance(failed, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
            raise
        return f"(its message raised {type(failed).__name__})"


def one_line(exc: BaseException, *, where: bool = True, show_path: Callable[[str], str] | None = None) -> str:
    """``Type: message`` on one line, for a report naming what failed; the one way nia words an exception.

    ``where`` adds the file and line it was raised at (:func:`raised_at`: in
    the plugin's own code when that ran), written by ``show_path`` (default
    :func:`shown_path`); a syntax error says where it is instead.
    """
    show_path = show_path or shown_path
    if isinstance(exc, SyntaxError) and where:
        place = f"{show_path(exc.filename)}:{exc.lineno}" if exc.filename else f"line {exc.lineno}"
        return f"syntax error at {place}: {exc.msg}"
    try:  # a plugin's exception words itself with its own code, which may raise
        if isinstance(exc, SystemExit):  # its "message" is an exit code: sys.exit(3) reads SystemExit(3)
            text = f"SystemExit({exc.code!r})" if exc.code is not None else "SystemExit()"
        else:
            message = " ".join(str(exc).split())
            text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    except Exception as failed:  # noqa: BLE001 - a report must never fail for its wording
        text = f"{type(exc).__name__} (its message raised {type(failed).__name__})"
    if not where:
        return text
    at = raised_at(exc)
    return text + (f" ({show_path(at[0])}:{at[1]})" if at else "")


def _escape(ch: str) -> str:
    if ch == "\\":
        return "\\\\"
    if ch.isprintable():
        return ch
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of the file name (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_name(name: str) -> str:
    """``name`` on one line with nothing invisible: how a file name appears in a prompt or a message.

    Every character Python does not call printable (control characters — a
    newline could forge a heading —, line and paragraph separators,
    bidirectional overrides, zero-width characters, lone surrogates from
    undecodable bytes) becomes ``\\xNN``/``\\uNNNN``, and a backslash is
    doubled so the escaping stays unambiguous. Ordinary names come back as
    they are.
    """
    if name.isprintable() and "\\" not in name:
        return name
    return "".join(map(_escape, name))


def shown_path(path: str | os.PathLike[str]) -> str:
    """How a message names a file: relative to the working directory, on one line.

    ``.nia/project.toml`` in the project root, ``../.nia/project.toml`` one
    folder below it. A file reached only by climbing more than two folders, or
    by climbing and then going down more than three (somewhere else on the
    machine, not the project you are in), is named by its absolute path, which
    reads better there; so is any file when the working directory is gone.
    """
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except (OSError, ValueError):  # no working directory any more, or another drive
        return escape_name(absolute)
    parts = relative.split(os.sep)
    ups = len(parts) - len([p for p in parts if p != os.pardir])
    if ups > 2 or (ups and len(parts) - ups > 3):
        return escape_name(absolute)
    return escape_name(relative)


class ExitRefused(BaseException):
    """``os._exit`` called by code nia runs (a plugin), raised where it was called instead of ending the process.

    See :func:`nia_core.process.guard_exit`. A ``BaseException``, as
    ``SystemExit`` is, so a plugin's ``except Exception`` does not swallow it.
    ``at`` is the file and line that called ``os._exit``.
    """

    def __init__(self, status: object, at: tuple[str, int] | None) -> None:
        super().__init__(f"called os._exit({status!r}), which would end nia's process; refused")
        self.status = status
        self.at = at


class NiaError(Exception):
    """An error with a message fit for a user; the CLI prints it without a traceback."""

    exit_code: int = 1


class UsageError(NiaError):
    """Bad input from the user: a file, a flag or a config value."""

    exit_code = 2


class InvalidSourceKey(NiaError, ValueError):
    """A context source key that is not ``owner/name`` in lowercase."""


class DuplicateSourceKey(NiaError):
    """Two sources in one composition share a key."""

    def __init__(self, key: str, first: str | None = None, second: str | None = None) -> None:
        self.key = key
        self.first = first
        self.second = second
        if first and second:
            message = f"duplicate context source key {key!r}: contributed by {first} and by {second}"
        else:
            message = f"duplicate context source key {key!r}"
        super().__init__(message)


class DuplicateContribution(NiaError):
    """Two producers registered under one contribution key."""


class RenderError(NiaError):
    """A renderer raised or returned empty text; names the source key."""

    def __init__(self, key: str, renderer: str, reason: str) -> None:
        self.key = key
        self.renderer = renderer
        self.reason = f"{renderer} renderer {reason}"
        """What went wrong, without the key (the key is data: :attr:`key`)."""
        super().__init__(f"context source {key!r}: {self.reason}")


class InitializationBlocked(NiaError):
    """A baseline cannot be rendered because sources are unavailable."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        super().__init__("context blocked on: " + ", ".join(keys))
