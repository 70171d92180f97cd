"""A ``nia`` process starts and ends on nia's terms, whatever its plugins do.

Plugins run in-process. These things they can do would otherwise decide how
the process behaves:

* print to stdout: :func:`run` points fd 1 at stderr first (see :mod:`nia_core.stdio`);
* hand nia text holding control characters that a terminal would obey:
  :func:`run` wraps the streams that are terminals (see :mod:`nia_core.terminal`);
* leave threads behind: a non-daemon thread that never ends would keep Python
  waiting at exit, before any ``atexit`` handler runs. A command that has
  finished its work exits: when such a thread remains, :func:`exit_command`
  flushes stdout and stderr and ends the process with the command's exit code;
* register an ``atexit`` handler that never returns (or an object whose
  ``__del__`` never does): :func:`exit_command` lets Python run the handlers
  as it always does, under a deadline of :data:`EXIT_TIMEOUT` seconds. Past
  it, nia says which plugin's code was running and ends the process with the
  command's exit code. A plugin call nia abandoned at its deadline
  (:func:`abandon`) may still be running on a daemon thread: the process then
  ends once the handlers ran, without Python's teardown of every module
  (which would only free memory, and could stop on a lock such a thread holds);
* raise ``KeyboardInterrupt`` themselves: nia tells it from a real Ctrl-C with
  a SIGINT handler that notes the signal (:func:`user_interrupted`), so a
  plugin's ``KeyboardInterrupt`` is reported like any failure while the user's
  still stops nia;
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

Every entry point (the ``nia`` command line through :func:`run`, the agent
hook) calls :func:`begin` before any plugin loads and ends through
:func:`exit_command`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import types
from collections.abc import Callable
from types import FrameType
from typing import IO, Any, NoReturn

EXIT_TIMEOUT = 5.0
"""Seconds the ``atexit`` handlers (a plugin's among them) may take together at the end."""
TEARDOWN_TIMEOUT = 10.0
"""Seconds Python's teardown after them may take (only a ``__del__`` that never returns comes near it):
past it the process ends with status 1. Generous: on a starved machine a teardown takes seconds."""

_real_exit = os._exit
"""The real ``os._exit``, which :func:`end` calls whatever :func:`guard_exit` put in its place."""
_guarded_pid: int | None = None
_final_status: int | None = None
"""The command's exit status once it is known: from then on an ``os._exit`` anywhere ends the process with it."""
_interrupted = threading.Event()
_lingering: set[threading.Thread] = set()
"""Threads nia abandoned (plugin calls past their deadline)."""
_plugin_modules: dict[str, str] = {}
"""Module name -> the plugin it belongs to, to name the plugin whose code holds up the end."""
_exit_timer: threading.Timer | None = None
_devnull: IO[str] | None = None


def end(status: int) -> NoReturn:
    """End this process now with ``status`` (nia's own ``os._exit``: never refused)."""
    _real_exit(status)


def _caller() -> tuple[str, int] | None:
    """Where the code that called ``os._exit`` is: from its frame alone (a stack summary would read each
    frame's source line through ``linecache``, which opens whatever file the code names, a FIFO included)."""
    import inspect  # only when a plugin calls os._exit

    here = inspect.currentframe()
    guarded = here.f_back if here is not None else None
    caller = guarded.f_back if guarded is not None else None
    return (caller.f_code.co_filename, caller.f_lineno or 0) if caller is not None else None


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


def note_plugin_module(module: str, plugin: str) -> None:
    """Module ``module`` (and its submodules) is plugin ``plugin``'s code: name it if it holds up the end."""
    _plugin_modules[module] = plugin


def _non_daemon_threads() -> list[threading.Thread]:
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and t.is_alive() and not t.daemon]


def abandoned_threads() -> list[threading.Thread]:
    """The threads nia gave up waiting for (:func:`abandon`) that are still running."""
    return [t for t in _lingering if t.is_alive()]


def _flush() -> None:
    from nia_core.stdio import finish

    finish()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()


def exit_command(code: Any = 0) -> NoReturn:
    """End the process with the command's ``code`` (see the module docstring): never waits for a plugin's
    code for good."""
    global _final_status
    if code is not None and not isinstance(code, int):
        with contextlib.suppress(Exception):
            print(code, file=sys.stderr)
        code = 1
    _final_status = code or 0
    _flush()
    if _non_daemon_threads():  # Python would wait for them before any atexit handler runs
        end(_final_status)
    import atexit

    atexit.register(_start_exit_deadline)  # registered last: runs first, before the plugins' handlers
    sys.exit(_final_status)


def begin() -> None:
    """At the start of a process, before any plugin loads: the ``atexit`` handler that runs last."""
    import atexit

    atexit.register(_after_handlers)


def _start_exit_deadline() -> None:
    """First of the atexit handlers: the rest (the plugins' own) and Python's teardown get a deadline."""
    global _exit_timer, _devnull
    import faulthandler

    _devnull = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    # A last resort that needs no Python thread: a handler stuck in C, or the teardown after the handlers.
    faulthandler.dump_traceback_later(EXIT_TIMEOUT + TEARDOWN_TIMEOUT, exit=True, file=_devnull)
    _exit_timer = threading.Timer(EXIT_TIMEOUT, _exit_late)
    _exit_timer.daemon = True
    _exit_timer.start()


def _after_handlers() -> None:
    """Last of the atexit handlers: every handler returned in time."""
    if _exit_timer is not None:
        _exit_timer.cancel()
    _flush()
    if abandoned_threads():  # teardown could stop on a lock such a thread holds, and would only free memory
        end(_final_status or 0)
    import faulthandler

    faulthandler.dump_traceback_later(TEARDOWN_TIMEOUT, exit=True, file=_devnull or sys.stderr)


def _exit_late() -> None:
    """The atexit handlers ran past :data:`EXIT_TIMEOUT`: say whose code was running, and end."""
    try:
        plugin, where = _running_plugin()
        who = f"plugin {plugin!r}: " if plugin else ""
        at = f" ({where})" if where else ""
        sys.stderr.write(
            f"nia: {who}an atexit handler did not finish in {EXIT_TIMEOUT:g} s{at}; nia ended the process\n"
        )
        _flush()
    finally:
        end(_final_status or 0)


def _running_plugin() -> tuple[str | None, str | None]:
    """The plugin whose code the main thread is running, and where (``file:line``), read from a
    :mod:`faulthandler` dump of every thread."""
    import faulthandler
    import re
    import tempfile

    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as dump:
        faulthandler.dump_traceback(dump, all_threads=True)
        dump.seek(0)
        text = dump.read()
    ident = threading.main_thread().ident
    frames: list[tuple[str, str]] = []
    current: int | None = None
    for line in text.splitlines():
        header = re.match(r"(?:Current thread|Thread) (0x[0-9a-fA-F]+)", line)
        if header:
            current = int(header.group(1), 16)
            continue
        frame = re.match(r'\s+File "(.*)", line (\d+)', line)
        if frame and current == ident:
            frames.append((frame.group(1), frame.group(2)))
    files = _module_files()
    for path, number in frames:  # innermost first
        plugin = _plugin_of(files.get(path))
        if plugin is not None:
            return plugin, f"{path}:{number}"
    return None, (f"{frames[0][0]}:{frames[0][1]}" if frames else None)


def _module_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for name, module in list(sys.modules.items()):
        path = vars(module).get("__file__") if issubclass(type(module), types.ModuleType) else None
        if isinstance(path, str):
            files[path] = name
    return files


def _plugin_of(module: str | None) -> str | None:
    while module:
        if module in _plugin_modules:
            return _plugin_modules[module]
        module = module.rpartition(".")[0]
    return None


def run(command: Callable[..., Any], *args: Any, **kwargs: Any) -> NoReturn:
    """Run a console command (a click command in standalone mode) as a whole process."""
    import signal  # here, not at import: the agent hooks import this module but never run() it

    from nia_core.stdio import redirect_fd
    from nia_core.terminal import guard_terminals

    with contextlib.suppress(ValueError):  # not the main thread: keep Python's handler
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)
    begin()
    redirect_fd()
    guard_terminals()
    guard_exit()
    code: Any = 0
    try:
        command(*args, **kwargs)
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        code = 130
    exit_command(code)
