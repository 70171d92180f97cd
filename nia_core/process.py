"""A ``nia`` process starts and ends on nia's terms, whatever its plugins do.

Plugins run in-process. Three things they can do would otherwise decide how
the process behaves:

* print to stdout: :func:`run` points fd 1 at stderr first (see :mod:`nia_core.stdio`);
* hand nia text holding control characters that a terminal would obey:
  :func:`run` wraps the streams that are terminals (see :mod:`nia_core.terminal`);
* leave threads behind: a non-daemon thread that never ends would keep Python
  waiting at exit, and a plugin import stuck past its deadline keeps running
  on a daemon thread (a thread cannot be killed) that may hold the import lock
  of its module. A command that has finished its work exits: when such threads
  remain, :func:`run` flushes stdout and stderr and ends the process with
  ``os._exit`` and the command's exit code;
* raise ``KeyboardInterrupt`` themselves: nia tells it from a real Ctrl-C with
  a SIGINT handler that notes the signal (:func:`user_interrupted`), so a
  plugin's ``KeyboardInterrupt`` is reported like any failure while the user's
  still stops nia.

* call ``os._exit`` (at import, in a hook, from a thread): that would end the
  process at once with the plugin's status, 0 included, so nia would seem to
  succeed having said nothing. :func:`guard_exit` makes ``os._exit`` raise
  :class:`~nia_core.errors.ExitRefused` in the code that called it instead, which nia reports
  like any exception a plugin raises, and goes on. nia ends its own process
  with :func:`end`. A forked child (``multiprocessing``) still exits as it
  asks, and once the command is done a plugin's ``os._exit`` (from an
  ``atexit`` handler) ends the process with the command's status, not its own.
  A plugin can still end the process by means no Python code can intercept (a
  signal to itself, ``ctypes`` calling libc's ``_exit``).

A command that holds nothing Python's teardown would close (no store, no
file being written: ``nia context show``) may call :func:`exit_quickly`.
When it is done, :func:`run` then runs the ``atexit`` handlers (logging's
flush, ``weakref.finalize`` callbacks, a plugin's own), flushes stdout and
stderr, and ends with ``os._exit``: tearing down a few hundred modules would
only free memory, and costs such a command a tenth of its start-up.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn

_real_exit = os._exit
"""The real ``os._exit``, which :func:`end` calls whatever :func:`guard_exit` put in its place."""
_guarded_pid: int | None = None
_final_status: int | None = None
"""The command's exit status once it is known: from then on an ``os._exit`` anywhere ends the process with it."""
_interrupted = threading.Event()
_lingering: set[threading.Thread] = set()
"""Threads nia abandoned (plugin imports past their deadline)."""
_quick_exit = False


def end(status: int) -> NoReturn:
    """End this process now with ``status`` (nia's own ``os._exit``: never refused)."""
    _real_exit(status)


def _caller() -> tuple[str, int] | None:
    import traceback  # only when a plugin calls os._exit

    frames = traceback.extract_stack(limit=3)
    return (frames[0].filename, frames[0].lineno or 0) if len(frames) == 3 else None


def _guarded_exit(status: int) -> NoReturn:
    if os.getpid() != _guarded_pid:  # a forked child (multiprocessing, a pre-exec hook) ends as it asked
        _real_exit(status)
    if _final_status is not None:  # the command is done: its status stands
        _flush()
        _real_exit(_final_status)
    from nia_core.errors import ExitRefused

    raise ExitRefused(status, _caller())


def guard_exit() -> None:
    """Make ``os._exit`` raise :class:`~nia_core.errors.ExitRefused` here (see the module docstring); idempotent.

    Only a process's own entry point calls this (the console script, the agent
    hook): a program that embeds nia keeps its ``os._exit``.
    """
    global _guarded_pid
    _guarded_pid = os.getpid()
    os._exit = _guarded_exit
    posix = sys.modules.get("posix")
    if posix is not None:
        posix._exit = _guarded_exit  # type: ignore[attr-defined]
    if threading.excepthook is threading.__excepthook__:
        threading.excepthook = _thread_excepthook


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    """A thread (a plugin's own) whose ``os._exit`` was refused: one line, not Python's traceback."""
    from nia_core.errors import ExitRefused, one_line

    if isinstance(args.exc_value, ExitRefused):
        name = args.thread.name if args.thread is not None else "?"
        with contextlib.suppress(Exception):
            sys.stderr.write(f"Warning: thread {name!r}: {one_line(args.exc_value)} (nia goes on)\n")
        return
    threading.__excepthook__(args)


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


def user_interrupted() -> bool:
    """Whether the user pressed Ctrl-C (a real SIGINT) during this process."""
    return _interrupted.is_set()


def is_user_interrupt(exc: BaseException) -> bool:
    """A ``KeyboardInterrupt`` that came from the user, not from a plugin's ``raise``."""
    return isinstance(exc, KeyboardInterrupt) and _interrupted.is_set()


def abandon(thread: threading.Thread) -> None:
    """Note a thread nia gave up waiting for; the process will not wait for it at exit."""
    _lingering.add(thread)


def exit_quickly() -> None:
    """This command holds nothing that needs Python's teardown: :func:`run` may skip it (see the module doc)."""
    global _quick_exit
    _quick_exit = True


def _stray_threads() -> list[threading.Thread]:
    main = threading.main_thread()
    alive = [t for t in threading.enumerate() if t is not main and t.is_alive()]
    return [t for t in alive if not t.daemon or t in _lingering]


def _flush() -> None:
    from nia_core.stdio import finish

    finish()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()


def run(command: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Run a console command (a click command in standalone mode) as a whole process."""
    import signal  # here, not at import: the agent hooks import this module but never run() it

    from nia_core.stdio import redirect_fd
    from nia_core.terminal import guard_terminals

    with contextlib.suppress(ValueError):  # not the main thread: keep Python's handler
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)
    redirect_fd()
    guard_terminals()
    guard_exit()
    global _quick_exit, _final_status
    _quick_exit = False  # only the command run here may ask
    code: Any = 0
    try:
        command(*args, **kwargs)
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        code = 130
    if code is not None and not isinstance(code, int):
        with contextlib.suppress(Exception):
            print(code, file=sys.stderr)
        code = 1
    _final_status = code or 0
    stray = _stray_threads()
    if stray or _quick_exit:
        if not stray:  # as Python's own exit would, short of tearing every module down
            import atexit

            atexit._run_exitfuncs()
        _flush()
        end(_final_status)
    _flush()
    sys.exit(code)
