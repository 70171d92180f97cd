"""Observing sources: every loader exactly once, concurrently, each under its own timeout.

A loader that raises (anything, ``BaseException`` subclasses included) counts
as unavailable, as does one that runs past its timeout; observing never
raises. The warning is said once, where observations are encoded
(``SystemContext.on_unavailable``), so a host can name the plugin. A value whose canonical JSON is larger than
:func:`max_source_bytes` is an error for that source alone (:func:`too_large`,
applied where values are encoded, on the one path every door uses).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from nia_core.context.concurrent import Outcome, call_all
from nia_core.context.source import LOADER_TIMEOUT, UNAVAILABLE, ContextSource
from nia_core.errors import where_raised
from nia_core.files import MISS

log = logging.getLogger("nia.context")

Status = Literal["ok", "unavailable", "error", "timeout"]


class Observation(NamedTuple):
    """What one loader said: a value, or why there is none."""

    key: str
    value: Any
    status: Status
    reason: str = ""
    seconds: float = 0.0

    @property
    def available(self) -> bool:
        return self.status == "ok"


def observe(sources: Sequence[ContextSource], default_timeout: float = LOADER_TIMEOUT) -> list[Observation]:
    """Call every source's loader once; observations come back in composition order.

    A loader nia knows to be fast (a :class:`~nia_core.files.CachedFile`, whose
    ``peek`` is one ``stat`` and an identity check) answers inline when its file
    is unchanged; every other loader, and every miss, runs on a worker under its
    timeout. When every loader answered inline, no thread is started.
    """
    observations: list[Observation] = []
    append, make, clock = observations.append, tuple.__new__, time.perf_counter
    pending: list[int] = []
    last = clock()
    for index, source in enumerate(sources):
        peek = source.peek
        if peek is not None:
            value = peek()
            if value is not MISS:
                now = clock()
                if value is UNAVAILABLE:
                    append(Observation(source.key, UNAVAILABLE, "unavailable", "loader said unavailable", now - last))
                else:
                    append(make(Observation, (source.key, value, "ok", "", now - last)))
                last = now
                continue
        pending.append(index)
        append(_PENDING)  # type: ignore[arg-type]
        last = clock()  # a miss's peek is not the next source's time
    if pending:
        waiting = [sources[i] for i in pending]
        timeouts = [default_timeout if s.timeout is None else s.timeout for s in waiting]
        outcomes = call_all([s.load for s in waiting], timeouts, [s.asynchronous for s in waiting])
        for index, source, timeout, outcome in zip(pending, waiting, timeouts, outcomes, strict=True):
            observations[index] = _observation(source.key, timeout, outcome)
    if log.isEnabledFor(logging.DEBUG):  # checked once: the loop above is the boundary's hot path
        for obs in observations:
            log.debug("context source %s: observed in %.2f ms (%s)", obs.key, obs.seconds * 1000, obs.status)
    return observations


_PENDING = object()


def _observation(key: str, timeout: float, outcome: Outcome) -> Observation:
    status, value, error, seconds, _ = outcome
    if status == "ok" and value is not UNAVAILABLE:
        return Observation(key, value, "ok", "", seconds)
    if status == "timeout":
        log.debug("context source %s: loader took longer than %gs", key, timeout)
        return Observation(key, UNAVAILABLE, "timeout", f"loader timed out after {timeout:g}s", timeout)
    if status == "error":
        text = " ".join(outcome.message.split())  # worded on the worker: the plugin's __str__ does not run here
        reason = f"loader raised {type(error).__name__}" + (f": {text}" if text else "") + where_raised(error)
        log.debug("context source %s: %s", key, reason, exc_info=error)  # --debug: the traceback too
        return Observation(key, UNAVAILABLE, "error", reason, seconds)
    return Observation(key, UNAVAILABLE, "unavailable", "loader said unavailable", seconds)


MAX_SOURCE_BYTES_ENV = "NIA_MAX_SOURCE_BYTES"
DEFAULT_MAX_SOURCE_BYTES = 1024 * 1024


def max_source_bytes() -> int:
    """The per-source value limit in bytes of canonical JSON: ``NIA_MAX_SOURCE_BYTES``, else 1 MiB."""
    raw = os.environ.get(MAX_SOURCE_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_SOURCE_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        log.warning(
            "%s=%r is not a positive number of bytes; using %d", MAX_SOURCE_BYTES_ENV, raw, DEFAULT_MAX_SOURCE_BYTES
        )
        return DEFAULT_MAX_SOURCE_BYTES
    return value


def too_large(obs: Observation, encoded: str, limit: int) -> Observation | None:
    """An error observation when ``encoded`` is over ``limit`` bytes, else ``None``."""
    if len(encoded) * 4 <= limit:  # UTF-8 never takes more than 4 bytes a character: no need to encode
        return None
    size = len(encoded.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return None
    reason = f"value is {_size(size)} of JSON, over the per-source limit of {_size(limit)} ({MAX_SOURCE_BYTES_ENV})"
    return Observation(obs.key, UNAVAILABLE, "error", reason, obs.seconds)


def _size(count: int) -> str:
    if count >= 1024 * 1024 and count % (1024 * 1024) == 0:
        return f"{count // (1024 * 1024)} MiB"
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.1f} MiB"
    if count >= 1024 and count % 1024 == 0:
        return f"{count // 1024} KiB"
    return f"{count} bytes"
