"""Run many small calls at once, each under its own timeout, never raising.

Sync calls run on a few daemon worker threads that pull from one shared
counter, so a slow call holds up only its own worker; a call past its timeout
is abandoned and a fresh worker takes its place. Async calls share one event
loop on its own thread. Used for loaders and for registry producers.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

MAX_WORKERS = 4

OutcomeStatus = Literal["ok", "error", "timeout"]


@dataclass(frozen=True, slots=True)
class Outcome:
    status: OutcomeStatus
    value: Any = None
    error: BaseException | None = None
    seconds: float = 0.0


def is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _call_sync(fn: Callable[[], Any]) -> Outcome:
    started = time.monotonic()
    try:
        value = fn()
        if inspect.isawaitable(value):
            value = asyncio.run(_await(value))
    except Exception as exc:  # noqa: BLE001 - reported to the caller, never raised
        return Outcome("error", None, exc, time.monotonic() - started)
    return Outcome("ok", value, None, time.monotonic() - started)


class _Round:
    def __init__(self, calls: Sequence[Callable[[], Any]], timeouts: Sequence[float]) -> None:
        self.calls = calls
        self.timeouts = timeouts
        self.results: list[Outcome | None] = [None] * len(calls)
        self.started = [0.0] * len(calls)
        self.pending = len(calls)
        self.cond = threading.Condition()
        self.sync_indexes = [i for i, fn in enumerate(calls) if not is_async(fn)]
        self.async_indexes = [i for i, fn in enumerate(calls) if is_async(fn)]
        self.async_set = frozenset(self.async_indexes)
        self.next_sync = itertools.count()

    def record(self, index: int, outcome: Outcome) -> None:
        with self.cond:
            if self.results[index] is None:
                self.results[index] = outcome
                self.pending -= 1
                if self.pending == 0:
                    self.cond.notify_all()

    def sync_worker(self) -> None:
        while True:
            position = next(self.next_sync)
            if position >= len(self.sync_indexes):
                return
            index = self.sync_indexes[position]
            self.started[index] = time.monotonic()
            self.record(index, _call_sync(self.calls[index]))

    def async_worker(self) -> None:
        async def one(index: int) -> None:
            started = self.started[index] = time.monotonic()
            try:
                value = await asyncio.wait_for(self.calls[index](), self.timeouts[index])
            except TimeoutError:
                self.record(index, Outcome("timeout", seconds=self.timeouts[index]))
            except Exception as exc:  # noqa: BLE001
                self.record(index, Outcome("error", None, exc, time.monotonic() - started))
            else:
                self.record(index, Outcome("ok", value, None, time.monotonic() - started))

        async def all_of_them() -> None:
            await asyncio.gather(*(one(i) for i in self.async_indexes))

        try:
            asyncio.run(all_of_them())
        except Exception as exc:  # noqa: BLE001 - the event loop itself failed
            for index in self.async_indexes:
                self.record(index, Outcome("error", None, exc))

    @staticmethod
    def start(target: Callable[[], None]) -> None:
        threading.Thread(target=target, daemon=True, name="nia-concurrent").start()

    def run(self) -> list[Outcome]:
        for _ in range(min(MAX_WORKERS, len(self.sync_indexes))):
            self.start(self.sync_worker)
        if self.async_indexes:
            self.start(self.async_worker)
        tick = max(0.005, min(self.timeouts) / 4)
        with self.cond:
            while self.pending:
                self.cond.wait(tick)
                if self.pending:
                    self._expire(time.monotonic())
        return [r for r in self.results if r is not None]

    def _expire(self, now: float) -> None:
        """Abandon calls past their timeout; replace each stuck sync worker."""
        for index, result in enumerate(self.results):
            started = self.started[index]
            if result is None and started and now - started > self.timeouts[index]:
                self.results[index] = Outcome("timeout", seconds=self.timeouts[index])
                self.pending -= 1
                if index not in self.async_set:
                    self.start(self.sync_worker)


def call_all(calls: Sequence[Callable[[], Any]], timeouts: Sequence[float]) -> list[Outcome]:
    """Call each function exactly once, concurrently; outcomes come back in call order."""
    if not calls:
        return []
    return _Round(calls, timeouts).run()
