"""Errors nia reports to users.

Every error a user can cause derives from :class:`NiaError`; the CLI prints its
message on one line and exits with ``exit_code`` instead of showing a traceback.
"""

from __future__ import annotations

from collections.abc import Callable


def raised_at(exc: BaseException) -> tuple[str, int] | None:
    """``(file, line)`` an exception was raised at: its last frame outside Python's frozen import machinery.

    A refused ``os._exit`` is raised by nia's guard: where it was called is what names the plugin's line.
    """
    if isinstance(exc, ExitRefused):
        return exc.at
    import traceback  # on a failure only: not part of every start

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<frozen")]
    return (frames[-1].filename, frames[-1].lineno or 0) if frames else None


def message_of(exc: BaseException | None) -> str:
    """``str(exc)``, or what went wrong making it: a plugin's exception words itself with its own code."""
    try:
        return str(exc)
    except Exception as failed:  # noqa: BLE001 - a report must never fail for its wording
        return f"(its message raised {type(failed).__name__})"


def one_line(exc: BaseException, *, where: bool = True, show_path: Callable[[str], str] = str) -> str:
    """``Type: message`` on one line, for a report naming what failed; the one way nia words an exception.

    ``where`` adds the file and line it was raised at (the last frame outside
    Python's frozen import machinery), written by ``show_path``; a syntax
    error says where it is instead.
    """
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
