"""Observing sources: every loader exactly once, concurrently, each under its own timeout.

A loader that raises is logged with its key and counts as unavailable, as does
one that runs past its timeout; observing never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from nia_core.context.concurrent import call_all
from nia_core.context.source import DEFAULT_TIMEOUT, UNAVAILABLE, ContextSource

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


def observe(sources: Sequence[ContextSource], default_timeout: float = DEFAULT_TIMEOUT) -> list[Observation]:
    """Call every source's loader once; observations come back in composition order."""
    timeouts = [s.timeout if s.timeout is not None else default_timeout for s in sources]
    outcomes = call_all([s.load for s in sources], timeouts, [s.asynchronous for s in sources])
    observations = []
    for source, timeout, outcome in zip(sources, timeouts, outcomes, strict=True):
        key = source.key
        if outcome.status == "ok" and outcome.value is not UNAVAILABLE:
            observations.append(Observation(key, outcome.value, "ok", "", outcome.seconds))
            continue
        if outcome.status == "timeout":
            log.warning("context source %s: loader took longer than %gs; counted unavailable", key, timeout)
            obs = Observation(key, UNAVAILABLE, "timeout", f"loader timed out after {timeout:g}s", timeout)
        elif outcome.status == "error":
            exc = outcome.error
            reason = f"loader raised {type(exc).__name__}: {exc}"
            log.warning("context source %s: %s", key, reason)
            obs = Observation(key, UNAVAILABLE, "error", reason, outcome.seconds)
        else:
            obs = Observation(key, UNAVAILABLE, "unavailable", "loader said unavailable", outcome.seconds)
        observations.append(obs)
    return observations
