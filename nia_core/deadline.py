"""Plugin code under a deadline: every call nia makes into a plugin either ends in time or is left behind.

A plugin's code can loop forever anywhere: at import, in a hook, a renderer,
a codec, an exception's ``__str__``. nia runs each such call on a daemon
worker thread (kept from one call to the next: :mod:`nia_core.workers`) and
waits at most its deadline. Python cannot stop a thread: past the deadline the call is
abandoned (it keeps running until the process ends; see
:func:`nia_core.process.abandon`), the caller gets :class:`Late`, and the
next call gets a fresh worker.

Whatever the call raises, ``BaseException`` subclasses included
(``KeyboardInterrupt``, ``SystemExit``, a custom one), it is raised on the
worker, so it can never be the user's Ctrl-C: it comes back to the caller as
:class:`PluginRaised`, its message worded on the worker under the same
deadline (an exception's ``__str__`` is the plugin's code too).

A worker is not the command's thread, so whatever the plugin prints goes to
stderr (:mod:`nia_core.stdio`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import nia_core.workers as workers
from nia_core.errors import one_line, raised_at
from nia_core.process import abandon

PLUGIN_TIMEOUT = 2.0
"""Seconds a call into a plugin's code may take, unless the kind of call says otherwise."""


class Late(Exception):
    """The call ran past its deadline and was abandoned."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"did not finish in {seconds:g} s")
        self.seconds = seconds


class PluginRaised(Exception):
    """What plugin code raised (any ``BaseException``), with its wording made on the worker thread."""

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


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line; ``SystemExit(2)`` for an exit."""
    return one_line(exc, where=False)


def worded(exc: BaseException) -> str:
    """:func:`describe` of what plugin code raised, run where it was raised; never raises."""
    try:
        return describe(exc)
    except BaseException as failed:  # noqa: BLE001 - its __str__ is the plugin's code
        return f"{type(exc).__name__} (its message raised {type(failed).__name__})"


class Outcome(NamedTuple):
    """One call's end: ``value`` when it returned, else ``error`` (a :class:`PluginRaised` or :class:`Late`)."""

    value: Any = None
    error: PluginRaised | Late | None = None


WORKER = "nia-plugin-code"
"""The name of the worker threads (imports run on ``nia-plugin-import``)."""


def call(function: Callable[[], Any], seconds: float, *, thread: str = WORKER) -> Any:
    """``function()`` on a worker thread named ``thread``; raises :class:`Late` past ``seconds``,
    :class:`PluginRaised` for whatever it raised."""
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def job() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:  # noqa: BLE001 - whatever the plugin raised, reported by the caller
            outcome["error"] = exc
            outcome["text"] = worded(exc)  # the plugin's __str__, on this thread, under the deadline
        done.set()

    worker = workers.start(job, thread)
    if not done.wait(seconds):
        abandon(worker)  # never handed another call: it is still in this one
        raise Late(seconds)
    if "error" in outcome:
        raise PluginRaised(outcome.pop("error"), outcome.pop("text", None)) from None
    return outcome.get("value")


def call_each(calls: Sequence[Callable[[], Any]], seconds: float) -> list[Outcome]:
    """Every call in turn on one worker, each under its own deadline counted from its start; never raises
    (but for the user's Ctrl-C).

    One thread hand-over for the lot, not two per call: the renderers of a
    baseline are dozens of small calls. A call past its deadline is
    abandoned with its worker, and a new worker goes on with the next.
    """
    if not calls:
        return []
    ahead = Ahead(calls, seconds)
    try:
        return [ahead.outcome(index) for index in range(len(calls))]
    finally:
        ahead.close()


class Ahead:
    """Runs ``calls`` in turn on one worker thread, ahead of the caller, who takes each outcome in order.

    Each call keeps its own deadline, counted from its start: past it, the
    worker is abandoned with that call and a new one goes on with the next.
    :meth:`close` stops the worker after the call it is in (when the caller
    gives up).
    """

    def __init__(self, calls: Sequence[Callable[[], Any]], seconds: float, *, thread: str = WORKER) -> None:
        self._calls = list(calls)
        self._seconds = seconds
        self._name = thread
        self._started: list[float | None] = [None] * len(self._calls)
        self._outcomes: list[dict[str, Any]] = [{} for _ in self._calls]
        self._done = [threading.Event() for _ in self._calls]
        self._generation = 0
        self._thread: threading.Thread | None = None
        if self._calls:
            self._spawn(0)

    def _spawn(self, first: int) -> None:
        self._generation += 1
        self._thread = threading.Thread(target=self._run, args=(first, self._generation), daemon=True, name=self._name)
        self._thread.start()

    def _run(self, first: int, generation: int) -> None:
        for index in range(first, len(self._calls)):
            if generation != self._generation:
                return
            self._started[index] = time.monotonic()
            outcome = self._outcomes[index]
            try:
                outcome["value"] = self._calls[index]()
            except BaseException as exc:  # noqa: BLE001 - whatever the plugin raised, reported by the caller
                outcome["error"] = exc
                outcome["text"] = worded(exc)  # the plugin's __str__, on this thread, under the deadline
            self._done[index].set()

    def outcome(self, index: int) -> Outcome:
        """What ``calls[index]`` did, waiting for it at most its deadline."""
        done = self._done[index]
        started = self._started[index]
        limit = (started if started is not None else time.monotonic()) + self._seconds
        while not done.wait(max(0.0, limit - time.monotonic())):
            started = self._started[index]
            if started is not None and started + self._seconds > limit:  # it began after we started waiting
                limit = started + self._seconds
                continue
            if self._thread is not None:
                abandon(self._thread)
            if index + 1 < len(self._calls):
                self._spawn(index + 1)
            else:
                self._generation += 1
            return Outcome(error=Late(self._seconds))
        outcome = self._outcomes[index]
        self._outcomes[index] = {}
        if "error" in outcome:
            return Outcome(error=PluginRaised(outcome.pop("error"), outcome.pop("text", None)))
        return Outcome(outcome.get("value"))

    def take(self, index: int) -> Any:
        """``calls[index]``'s value; raises as :func:`call` would."""
        result = self.outcome(index)
        if result.error is not None:
            raise result.error
        return result.value

    def close(self) -> None:
        """No further calls: the worker ends after the one it is in."""
        self._generation += 1
