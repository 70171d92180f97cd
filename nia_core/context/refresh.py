"""Sources observed on their own schedule: ``ContextSource(refresh=N)``.

A loader that reads a network API (a ticket tracker, CI, on-call) may take
longer than a prompt should wait. With ``refresh=N`` its value is *current*
for ``N`` seconds, counted from the moment the load that produced it began:

- a boundary uses the newest completed observation while it is current and
  calls no loader (the value, ``UNAVAILABLE`` or the error it raised);
- otherwise it waits for the load in flight, or starts one and waits, under
  the source's timeout as any loader;
- every completed load schedules the next one in the background, to begin
  ``N`` seconds after it began minus the time it took, so that a new value is
  ready as the old one expires. Background loads run on a thread of their own
  with no timeout (only a boundary waiting for one is bounded), never two at
  once for one source.

The state lives in the registry view of a Location (one :class:`Refreshers`
per :class:`~nia_core.context.registry.LocationContext`), keyed by the
contribution and the source key: a process that keeps the view (a resident
hook process, ``nia mcp``, ``nia dev``, an embedding :class:`Runtime`) keeps the
observations, while a new process starts with none and loads synchronously.
A plugin reloaded is a new contribution, so its old observations are dropped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from nia_core.files import MISS


class Refreshed:
    """The loader nia puts in place of a refreshed source's own: answers from the last completed load."""

    def __init__(self, key: str, refresh: float) -> None:
        self.key = key
        self.refresh = refresh
        self.load: Callable[[], Any] = lambda: None
        self.asynchronous = False
        self._lock = threading.Lock()
        self._outcome: tuple[bool, Any] | None = None
        """``(raised, value or exception)`` of the newest completed load."""
        self._began = 0.0
        self._flight: threading.Event | None = None
        self._timer: threading.Timer | None = None
        self._closed = False

    def use(self, load: Callable[[], Any], asynchronous: bool, refresh: float) -> None:
        """The plugin's loader as its latest producer call returned it (the next load calls this one)."""
        self.load, self.asynchronous, self.refresh = load, asynchronous, refresh

    def _current(self) -> bool:
        return self._outcome is not None and time.monotonic() - self._began < self.refresh

    def peek(self) -> Any:
        """The current value, answered inline by the boundary; ``MISS`` when it must wait or load."""
        with self._lock:
            if self._current() and self._outcome is not None and not self._outcome[0]:
                return self._outcome[1]
        return MISS

    def __call__(self) -> Any:
        """On the boundary's worker: the current outcome, the one in flight, or a load now."""
        with self._lock:
            if self._current():
                return self._give()
            flight = self._flight
            here = flight is None
            if here:
                flight = self._flight = threading.Event()
        assert flight is not None
        if here:
            self._run()
        else:
            flight.wait()
        with self._lock:
            return self._give()

    def _give(self) -> Any:
        assert self._outcome is not None
        raised, value = self._outcome
        if raised:
            raise value
        return value

    def _run(self) -> None:
        began = time.monotonic()
        try:
            outcome: tuple[bool, Any] = (False, self._call())
        except BaseException as exc:  # noqa: BLE001 - what the loader raised is its observation
            outcome = (True, exc)
        took = time.monotonic() - began
        with self._lock:
            self._outcome, self._began = outcome, began
            flight, self._flight = self._flight, None
            if not self._closed:
                delay = max(0.0, began + self.refresh - took - time.monotonic())
                self._timer = threading.Timer(delay, self._background)
                self._timer.daemon = True
                self._timer.name = f"nia-refresh {self.key}"
                self._timer.start()
        if flight is not None:
            flight.set()

    def _call(self) -> Any:
        if self.asynchronous:
            import asyncio

            return asyncio.run(self.load())  # type: ignore[arg-type]
        return self.load()

    def _background(self) -> None:
        with self._lock:
            if self._closed or self._flight is not None:
                return
            self._flight = threading.Event()
        self._run()

    def close(self) -> None:
        """No more background loads (the view closed, or the source is gone)."""
        with self._lock:
            self._closed = True
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()


class Refreshers:
    """The :class:`Refreshed` loaders of one registry view, by contribution and source key."""

    def __init__(self) -> None:
        self._by: dict[tuple[Hashable, str], Refreshed] = {}
        self._lock = threading.Lock()

    def loader(
        self, contribution: Hashable, key: str, load: Callable[[], Any], asynchronous: bool, refresh: float
    ) -> Refreshed:
        with self._lock:
            refreshed = self._by.get((contribution, key))
            if refreshed is None:
                refreshed = self._by[(contribution, key)] = Refreshed(key, refresh)
        refreshed.use(load, asynchronous, refresh)
        return refreshed

    def keep(self, live: Iterable[tuple[Hashable, str]]) -> None:
        """Close the ones not in ``live`` (their contribution or source went away)."""
        wanted = set(live)
        with self._lock:
            gone = [ident for ident in self._by if ident not in wanted]
            closed = [self._by.pop(ident) for ident in gone]
        for refreshed in closed:
            refreshed.close()

    def close(self) -> None:
        self.keep(())
