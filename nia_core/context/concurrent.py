"""Run many small calls at once, each under its own timeout, never raising.

Sync calls run on daemon worker threads that pull from one shared counter. One
worker starts; whenever a call has run longer than :data:`SLOW_AFTER`, another
worker starts beside it, so a slow call holds up only its own worker while fast
calls pay for no thread contention. A call past its timeout is abandoned. Async calls share one event
loop on its own thread. Used for loaders and for registry producers.

Workers are kept between rounds (:mod:`nia_core.workers`): a boundary runs
two rounds, and a resident process runs them at every hook. A worker whose
call was given up on is counted by :func:`still_running` until the call
returns: a process that runs round after round (a resident) ends itself
before such workers pile up.
"""

from __future__ import annotations

import inspect
import itertools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple

import nia_core.workers as workers
from nia_core.errors import message_of

SLOW_AFTER = 0.02
"""Seconds a call may run before another worker is started beside it."""


OutcomeStatus = Literal["ok", "error", "timeout"]
_PLAIN_TYPES = frozenset({str, bytes, int, float, bool, tuple, list, dict, frozenset, type(None)})


_given_up: set[threading.Thread] = set()
"""Workers still in a sync call their round gave up on (past its timeout)."""


def still_running() -> int:
    """How many sync calls given up on at their timeout are still running, each holding a worker thread."""
    return sum(1 for thread in list(_given_up) if thread.is_alive())


class Outcome(NamedTuple):
    status: OutcomeStatus
    value: Any = None
    error: BaseException | None = None
    seconds: float = 0.0
    message: str = ""
    """``str(error)``, made on the worker under the call's timeout: an exception's ``__str__`` is plugin code."""


def is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    return not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)


async def _await(awaitable: Any) -> Any:
    return await awaitable


class _Round:
    """One round of calls. Completion is lock-free: ``dict.setdefault`` and
    ``next(itertools.count())`` are atomic in CPython, so whichever of a worker
    and the timeout watcher settles a call first wins, exactly once."""

    def __init__(
        self, calls: Sequence[Callable[[], Any]], timeouts: Sequence[float], asynchronous: Sequence[bool]
    ) -> None:
        self.calls = calls
        self.timeouts = timeouts
        self.count = len(calls)
        self.results: dict[int, Outcome] = {}
        self.started = [0.0] * self.count
        self.runners: list[threading.Thread | None] = [None] * self.count
        self.async_runner: threading.Thread | None = None
        self.finished = itertools.count(1)
        self.done = threading.Event()
        self.sync_indexes = [i for i, flag in enumerate(asynchronous) if not flag]
        self.async_indexes = [i for i, flag in enumerate(asynchronous) if flag]
        self.async_set = frozenset(self.async_indexes)
        self.next_sync = itertools.count()
        self.helped: set[int] = set()

    def settle(self, index: int, outcome: Outcome) -> None:
        if self.results.setdefault(index, outcome) is outcome and next(self.finished) == self.count:
            self.done.set()

    def sync_worker(self) -> None:
        # The hot loop: 1,000 file-backed loaders cost ~8 µs each, so every attribute
        # lookup and call here is bound once (settle() is inlined).
        calls, started, indexes, total = self.calls, self.started, self.sync_indexes, len(self.sync_indexes)
        claim, finished, count, done = self.results.setdefault, self.finished, self.count, self.done
        clock, plain, make = time.monotonic, _PLAIN_TYPES, tuple.__new__
        runners, me = self.runners, threading.current_thread()
        for position in self.next_sync:
            if position >= total:
                return
            index = indexes[position]
            runners[index] = me
            begun = started[index] = clock()
            try:
                value = calls[index]()
                if type(value) not in plain and inspect.isawaitable(value):
                    import asyncio  # only when a loader needs it: asyncio costs ~15 ms to import

                    value = asyncio.run(_await(value))
            except BaseException as exc:  # noqa: BLE001 - reported to the caller, never raised
                # On a worker thread even KeyboardInterrupt/SystemExit are the call's own, never the user's.
                outcome = make(Outcome, ("error", None, exc, clock() - begun, message_of(exc)))
            else:
                outcome = make(Outcome, ("ok", value, None, clock() - begun, ""))
            if claim(index, outcome) is not outcome:
                _given_up.discard(me)  # back from a call given up on (see _watch)
            elif next(finished) == count:
                done.set()

    def async_worker(self) -> None:
        self.async_runner = threading.current_thread()
        try:
            self._async_calls()
        finally:
            _given_up.discard(self.async_runner)  # its event loop is free again: whatever blocked it returned

    def _async_calls(self) -> None:
        import asyncio  # only when a loader needs it: asyncio costs ~15 ms to import

        async def one(index: int) -> None:
            started = self.started[index] = time.monotonic()
            try:
                value = await asyncio.wait_for(self.calls[index](), self.timeouts[index])
            except TimeoutError:
                self.settle(index, Outcome("timeout", seconds=self.timeouts[index]))
            except BaseException as exc:  # noqa: BLE001 - a worker thread's, never the user's
                self.settle(index, Outcome("error", None, exc, time.monotonic() - started, message_of(exc)))
            else:
                self.settle(index, Outcome("ok", value, None, time.monotonic() - started))

        async def all_of_them() -> None:
            await asyncio.gather(*(one(i) for i in self.async_indexes))

        try:
            asyncio.run(all_of_them())
        except BaseException as exc:  # noqa: BLE001 - the event loop itself failed
            for index in self.async_indexes:
                self.settle(index, Outcome("error", None, exc, message=message_of(exc)))

    @staticmethod
    def start(target: Callable[[], None]) -> None:
        workers.start(target, "nia-concurrent")

    def run(self) -> list[Outcome]:
        if self.sync_indexes:
            self.start(self.sync_worker)
        if self.async_indexes:
            self.start(self.async_worker)
        tick = min(SLOW_AFTER, max(0.002, min(self.timeouts) / 4))
        while not self.done.wait(tick):
            self._watch(time.monotonic())
        return [self.results[i] for i in range(self.count)]

    def _watch(self, now: float) -> None:
        """Start a worker beside each slow sync call; abandon calls past their timeout."""
        for index in range(self.count):
            started = self.started[index]
            if not started or index in self.results:
                continue
            elapsed = now - started
            if elapsed > self.timeouts[index]:
                synchronous = index not in self.async_set
                runner = self.runners[index] if synchronous else self.async_runner
                if runner is not None:
                    _given_up.add(runner)  # before settling: the worker discards it once the call returns
                outcome = Outcome("timeout", seconds=self.timeouts[index])
                self.settle(index, outcome)
                if runner is not None and synchronous and self.results[index] is not outcome:
                    _given_up.discard(runner)  # the call returned first
            if elapsed > SLOW_AFTER and index not in self.async_set and index not in self.helped:
                self.helped.add(index)
                self.start(self.sync_worker)


def call_all(
    calls: Sequence[Callable[[], Any]],
    timeouts: Sequence[float],
    asynchronous: Sequence[bool] | None = None,
) -> list[Outcome]:
    """Call each function exactly once, concurrently; outcomes come back in call order.

    ``asynchronous`` says which calls are coroutine functions, when the caller
    already knows (computing it costs more than a cheap call).
    """
    if not calls:
        return []
    flags = asynchronous if asynchronous is not None else [is_async(fn) for fn in calls]
    return _Round(calls, timeouts, flags).run()
