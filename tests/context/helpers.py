"""Sources backed by a dict the test mutates: the world a loader observes."""

from __future__ import annotations

from typing import Any

from nia_core import UNAVAILABLE, ContextSource

MISSING = object()


class World:
    def __init__(self, **values: Any) -> None:
        self.values: dict[str, Any] = dict(values)
        self.loads: dict[str, int] = {}

    def source(self, key: str, *, removable: bool = True, **options: Any) -> ContextSource:
        def load() -> Any:
            self.loads[key] = self.loads.get(key, 0) + 1
            value = self.values.get(key, MISSING)
            if value is MISSING or value is UNAVAILABLE:
                return UNAVAILABLE
            return value

        return ContextSource(
            key=key,
            load=load,
            baseline=lambda v: f"{key} is {v!r}",
            update=lambda old, new: f"{key} changed from {old!r} to {new!r}",
            removal=(lambda old: f"{key} (was {old!r}) no longer applies") if removable else None,
            **options,
        )
