"""A ``nia`` process starts and ends on nia's terms, whatever its plugins do.

Plugins run in-process. Three things they can do would otherwise decide how
the process behaves:

* print to stdout: :func:`run` points fd 1 at stderr first (see :mod:`nia_core.stdio`);
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
from typing import Any

_interrupted = threading.Event()
_lingering: set[threading.Thread] = set()
"""Threads nia abandoned (plugin imports past their deadline)."""
_quick_exit = False


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


def abandoned_threads() -> list[threading.Thread]:
    """Threads nia gave up waiting for that are still running (a resident process ends after such a hook)."""
    return [thread for thread in list(_lingering) if thread.is_alive()]


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

    with contextlib.suppress(ValueError):  # not the main thread: keep Python's handler
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)
    redirect_fd()
    global _quick_exit
    _quick_exit = False  # only the command run here may ask
    code: Any = 0
    try:
        command(*args, **kwargs)
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        code = 130
    stray = _stray_threads()
    if stray or _quick_exit:
        if code is not None and not isinstance(code, int):
            with contextlib.suppress(Exception):
                print(code, file=sys.stderr)
            code = 1
        if not stray:  # as Python's own exit would, short of tearing every module down
            import atexit

            atexit._run_exitfuncs()
        _flush()
        os._exit(code or 0)
    _flush()
    sys.exit(code)
