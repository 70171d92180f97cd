"""``nia/date``: today's date in the host's local time zone (or ``[plugins.nia-date] timezone``)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from nia_core import ContextSource, hookimpl

NIA_NAMESPACE = "nia"

Clock = Callable[[], dt.datetime]


def _describe(iso: str) -> str:
    day = dt.date.fromisoformat(iso)
    return f"{day.strftime('%A')}, {iso}"


def date_source(clock: Clock) -> ContextSource:
    """The date source reading ``clock`` (an aware datetime); tests pass their own clock."""
    return ContextSource(
        key="nia/date",
        load=lambda: clock().date().isoformat(),
        baseline=lambda iso: f"Today's date is {_describe(iso)}.",
        update=lambda _old, iso: f"The date is now {_describe(iso)}.",
        removal=lambda _old: "Today's date is no longer provided; the date given earlier may be out of date.",
    )


def clock_for(timezone: str | None) -> Clock:
    if timezone:
        from zoneinfo import ZoneInfo  # only for a configured zone: the local one needs no tz database

        zone = ZoneInfo(timezone)
        return lambda: dt.datetime.now(zone)
    return lambda: dt.datetime.now().astimezone()


@lru_cache(maxsize=16)
def _source_for(timezone: str | None) -> ContextSource:
    return date_source(clock_for(timezone))


@hookimpl
def nia_context_sources(config: dict[str, Any]) -> list[ContextSource]:
    timezone = config.get("timezone") or os.environ.get("NIA_TIMEZONE") or None
    return [_source_for(timezone)]
