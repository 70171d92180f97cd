"""Observing sources: every loader exactly once, concurrently, each under its own timeout.

A loader that raises is logged with its key and counts as unavailable, as does
one that runs past its timeout; observing never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from nia_core.context.concurrent import call_all
from nia_core.context.source import LOADER_TIMEOUT, UNAVAILABLE, ContextSource

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
    """Call every source's loader once; observations come back in composition order."""
    timeouts = [default_timeout if s.timeout is None else s.timeout for s in sources]
    outcomes = call_all([s.load for s in sources], timeouts, [s.asynchronous for s in sources])
    observations: list[Observation] = []
    append, make = observations.append, tuple.__new__
    for source, timeout, (status, value, error, seconds) in zip(sources, timeouts, outcomes, strict=True):
        key = source.key
        if status == "ok" and value is not UNAVAILABLE:
            append(make(Observation, (key, value, "ok", "", seconds)))
        elif status == "timeout":
            log.warning("context source %s: loader took longer than %gs; counted unavailable", key, timeout)
            append(Observation(key, UNAVAILABLE, "timeout", f"loader timed out after {timeout:g}s", timeout))
        elif status == "error":
            reason = f"loader raised {type(error).__name__}: {error}"
            log.warning("context source %s: %s", key, reason)
            append(Observation(key, UNAVAILABLE, "error", reason, seconds))
        else:
            append(Observation(key, UNAVAILABLE, "unavailable", "loader said unavailable", seconds))
    return observations
