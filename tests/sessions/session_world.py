"""In-memory context for the session tests: sources whose values a test sets directly.

``World`` maps a Location path to the sources observed there; its
``context_for`` is what the boundary calls. Loaders record every observation
in ``log`` so a test can see exactly when (and whether) context was sampled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nia_core import UNAVAILABLE, ContextSource
from nia_core.context import SystemContext

GONE = object()


@dataclass
class Place:
    values: dict[str, Any] = field(default_factory=dict)
    removable: set[str] = field(default_factory=set)


@dataclass
class World:
    places: dict[str, Place] = field(default_factory=dict)
    log: list[tuple[str, str, str]] = field(default_factory=list)
    """``("observe", location, key)`` for each loader call."""
    hook: Callable[[str], None] | None = None
    """Called with the Location each time ``context_for`` assembles (to interleave concurrent actions)."""

    def at(self, location: str) -> Place:
        return self.places.setdefault(location, Place())

    def set(self, location: str, key: str, value: Any, *, removable: bool = True) -> None:
        place = self.at(location)
        place.values[key] = value
        if removable:
            place.removable.add(key)
        else:
            place.removable.discard(key)

    def unavailable(self, location: str, key: str) -> None:
        self.at(location).values[key] = UNAVAILABLE

    def drop(self, location: str, key: str) -> None:
        self.at(location).values.pop(key, None)

    def observations(self) -> int:
        return sum(1 for entry in self.log if entry[0] == "observe")

    def context_for(self, location: str) -> SystemContext:
        if self.hook is not None:
            self.hook(location)
        place = self.at(location)
        sources = []
        for key in list(place.values):
            sources.append(self._source(location, place, key))
        return SystemContext(sources)

    def _source(self, location: str, place: Place, key: str) -> ContextSource:
        def load() -> Any:
            self.log.append(("observe", location, key))
            return place.values.get(key, UNAVAILABLE)

        return ContextSource(
            key=key,
            load=load,
            baseline=lambda value: f"{key} is {value}.",
            update=lambda old, new: f"{key} changed from {old} to {new}.",
            removal=(lambda old: f"{key} no longer applies (was {old}).") if key in place.removable else None,
        )
