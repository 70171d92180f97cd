"""Importing a plugin under a deadline, with every exception it raises isolated.

A plugin's import runs arbitrary code: ``while True: pass`` at module level
would freeze every ``nia`` command, ``--help`` included. So each import runs on
a daemon worker thread (reused by the next import) and nia waits for it at most
:func:`import_deadline` seconds.
Python cannot kill a thread: past the deadline the import is abandoned (it
keeps running, and keeps its module's import lock, until the process ends),
the plugin is reported broken, and everything else goes on. At exit,
:func:`nia_core.process.run` ends the process with ``os._exit`` when such a
thread remains, after flushing its output, rather than wait for it.

Whatever the import raises, ``BaseException`` subclasses included
(``KeyboardInterrupt``, ``SystemExit``, a custom one), it is raised on the
worker thread, so it can never be the user's Ctrl-C: it comes back to the
caller as a :class:`PluginRaised` naming the original. Its message is worded
on the worker too, under the same deadline: an exception's ``__str__`` is the
plugin's code, and one that hangs or raises must not hang or crash the command.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nia_core.errors import one_line, raised_at
from nia_core.lazylog import lazy_logger
from nia_core.process import abandon

IMPORT_TIMEOUT_ENV = "NIA_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 5.0
log = lazy_logger("nia.host")


class ImportDeadline(Exception):
    """The import ran past its deadline and was abandoned."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"import did not finish in {seconds:g} s")
        self.seconds = seconds


class PluginRaised(Exception):
    """What a plugin's import raised (any ``BaseException``), with its wording made on the worker thread."""

    def __init__(self, original: BaseException, text: str | None = None) -> None:
        self.text = describe(original) if text is None else text
        super().__init__(self.text)
        self.original = original

    def worded(self, show_path: Callable[[str], str] = str) -> str:
        """``Type: message (file:line)`` as :func:`one_line` words it, without running the plugin's code again."""
        original = self.original
        if type(original) in (SyntaxError, IndentationError, TabError):  # Python's own: its fields are plain
            return one_line(original, show_path=show_path)
        at = raised_at(original)
        return self.text + (f" ({show_path(at[0])}:{at[1]})" if at else "")


def _worded(exc: BaseException) -> str:
    """:func:`describe` of what a plugin raised, run where it was raised; never raises."""
    try:
        return describe(exc)
    except BaseException as failed:  # noqa: BLE001 - its __str__ is the plugin's code
        return f"{type(exc).__name__} (its message raised {type(failed).__name__})"


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line; ``SystemExit(2)`` for an exit."""
    return one_line(exc, where=False)


def import_deadline(environ: Mapping[str, str] | None = None) -> float:
    """Seconds a plugin's import may take: ``NIA_IMPORT_TIMEOUT``, else 5."""
    env = os.environ if environ is None else environ
    raw = env.get(IMPORT_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_IMPORT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        log.warning(
            "%s=%r is not a positive number of seconds; using %g", IMPORT_TIMEOUT_ENV, raw, DEFAULT_IMPORT_TIMEOUT
        )
        return DEFAULT_IMPORT_TIMEOUT
    return value


class _Worker:
    """A daemon thread that runs imports one at a time: a start with many plugins starts one thread, not many.

    Starting a thread (and waiting until it runs) costs more than importing a
    small plugin, and a busy machine makes it worse. A worker whose import ran
    past its deadline is abandoned with it; the next import gets a new worker.
    """

    def __init__(self) -> None:
        self.posted = threading.Semaphore(0)
        self.job: tuple[Callable[[], Any], dict[str, Any], threading.Event] | None = None
        self.thread = threading.Thread(target=self._run, daemon=True, name="nia-plugin-import")
        self.thread.start()

    def _run(self) -> None:
        while True:
            self.posted.acquire()
            if self.job is None:  # let go: another worker is kept
                return
            load, outcome, done = self.job
            self.job = None
            try:
                outcome["value"] = load()
            except BaseException as exc:  # noqa: BLE001 - whatever the plugin raised, reported by the caller
                outcome["error"] = exc
                outcome["text"] = _worded(exc)  # the plugin's __str__, on this thread, under the deadline
            del load
            done.set()


_idle: _Worker | None = None
_idle_lock = threading.Lock()


def _take_worker() -> _Worker:
    global _idle
    with _idle_lock:
        worker, _idle = _idle, None
    if worker is None or not worker.thread.is_alive():  # (a forked child has none of its parent's threads)
        worker = _Worker()
    return worker


def _give_back(worker: _Worker) -> None:
    global _idle
    with _idle_lock:
        if _idle is None:
            _idle = worker
            return
    worker.job = None  # two callers at once: one worker is kept, the other ends
    worker.posted.release()


def import_plugin(load: Callable[[], Any], deadline: float) -> Any:
    """``load()`` on a worker thread; raises :class:`ImportDeadline` past ``deadline`` seconds.

    Whatever the import raised comes back as :class:`PluginRaised`, worded on the worker.
    """
    outcome: dict[str, Any] = {}
    done = threading.Event()
    worker = _take_worker()
    worker.job = (load, outcome, done)
    worker.posted.release()
    if not done.wait(deadline):
        abandon(worker.thread)
        raise ImportDeadline(deadline)
    _give_back(worker)
    if "error" in outcome:
        raise PluginRaised(outcome.pop("error"), outcome.pop("text", None)) from None
    return outcome.get("value")


class ImportAhead:
    """Imports ``loads`` in turn on one worker thread, ahead of the caller, who takes each outcome in order.

    With one import at a time, every plugin costs two thread switches (to the
    worker and back), more than a small plugin's import on a busy machine.
    Here the worker goes from one import to the next while the caller
    registers the plugins already imported. Each import keeps its own
    deadline, counted from its start: past it, the worker is abandoned with
    that import and a new one goes on with the next. :meth:`close` stops the
    worker after the import it is in (when the caller gives up, under ``--strict``).
    """

    def __init__(self, loads: Sequence[Callable[[], Any]], deadline: float) -> None:
        self._loads = list(loads)
        self._deadline = deadline
        self._started: list[float | None] = [None] * len(self._loads)
        self._outcomes: list[dict[str, Any]] = [{} for _ in self._loads]
        self._done = [threading.Event() for _ in self._loads]
        self._generation = 0
        self._thread: threading.Thread | None = None
        if self._loads:
            self._spawn(0)

    def _spawn(self, first: int) -> None:
        self._generation += 1
        self._thread = threading.Thread(
            target=self._run, args=(first, self._generation), daemon=True, name="nia-plugin-import"
        )
        self._thread.start()

    def _run(self, first: int, generation: int) -> None:
        for index in range(first, len(self._loads)):
            if generation != self._generation:
                return
            self._started[index] = time.monotonic()
            outcome = self._outcomes[index]
            try:
                outcome["value"] = self._loads[index]()
            except BaseException as exc:  # noqa: BLE001 - whatever the plugin raised, reported by the caller
                outcome["error"] = exc
                outcome["text"] = _worded(exc)  # the plugin's __str__, on this thread, under the deadline
            self._done[index].set()

    def take(self, index: int) -> Callable[[], Any]:
        """A ``load`` that answers as :func:`import_plugin` would for ``loads[index]``: the module, or the error."""
        return lambda: self._result(index)

    def _result(self, index: int) -> Any:
        done = self._done[index]
        started = self._started[index]
        limit = (started if started is not None else time.monotonic()) + self._deadline
        while not done.wait(max(0.0, limit - time.monotonic())):
            started = self._started[index]
            if started is not None and started + self._deadline > limit:  # it began after we started waiting
                limit = started + self._deadline
                continue
            if self._thread is not None:
                abandon(self._thread)
            if index + 1 < len(self._loads):
                self._spawn(index + 1)
            else:
                self._generation += 1
            raise ImportDeadline(self._deadline)
        outcome = self._outcomes[index]
        self._outcomes[index] = {}
        if "error" in outcome:
            raise PluginRaised(outcome.pop("error"), outcome.pop("text", None)) from None
        return outcome.get("value")

    def close(self) -> None:
        """No further imports: the worker ends after the one it is in."""
        self._generation += 1
