"""The Context Source: one keyed, typed, independently observed value."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from nia_core.context.codec import JSON, Codec
from nia_core.context.concurrent import is_async
from nia_core.context.keys import validate_key
from nia_core.context.refresh import Refreshed
from nia_core.files import CachedFile


class Unavailable(enum.Enum):
    """The type of :data:`UNAVAILABLE`."""

    UNAVAILABLE = "UNAVAILABLE"

    def __repr__(self) -> str:
        return "UNAVAILABLE"


UNAVAILABLE: Final = Unavailable.UNAVAILABLE
"""Returned by a loader that cannot observe its value right now (stale-while-revalidate)."""

LOADER_TIMEOUT = 2.0
"""Seconds a loader may take before it counts as unavailable for that observation."""
DEFAULT_TIMEOUT = LOADER_TIMEOUT
"""The loader timeout's name in earlier releases (public in :mod:`nia_core`); kept for plugins that use it."""

Loader = Callable[[], Any] | Callable[[], Awaitable[Any]]


class Constant:
    """A loader that always returns the same value (a prompt's role, its task): known fast, answered inline.

    A plain ``lambda: value`` would do the same, but the engine cannot know a
    lambda is fast, so it would start a worker thread for it at every boundary.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value

    def peek(self) -> Any:
        return self.value

    def __repr__(self) -> str:
        return f"Constant({self.value!r})"


@dataclass(frozen=True, eq=False)
class ContextSource:
    """A keyed value the model should know about, with the text that tells it.

    ``load`` returns the current value or :data:`UNAVAILABLE` and may be sync or
    async; an exception inside it is logged and counts as unavailable.
    ``baseline(value)`` renders the value for a fresh baseline, ``update(previous,
    current)`` for a mid-conversation message (it defaults to re-rendering the
    baseline), and ``removal(previous)``, when given, tells the model the source
    is gone. Renderers must be pure and return non-empty text.

    ``refresh`` (seconds, opt-in) lets a slow loader run on its own schedule:
    a boundary uses the last completed observation while it is younger than
    ``refresh`` (counted from when its load began) and nia loads the next one
    in the background; without one it loads and waits as usual (see
    docs/plugins.md, "Slow sources").
    """

    key: str
    load: Loader
    baseline: Callable[[Any], str]
    update: Callable[[Any, Any], str] | None = None
    removal: Callable[[Any], str] | None = None
    codec: Codec[Any] = field(default=JSON)
    timeout: float | None = None
    description: str = ""
    refresh: float | None = None

    def __post_init__(self) -> None:
        validate_key(self.key)
        refresh = self.refresh
        seconds = isinstance(refresh, int | float) and not isinstance(refresh, bool)
        if refresh is not None and not (seconds and refresh > 0):
            raise ValueError(
                f"context source {self.key!r}: refresh must be a number of seconds above 0, not {refresh!r}"
            )
        # Decided once: observing 1,000 sources must not inspect 1,000 loaders each time.
        object.__setattr__(self, "asynchronous", is_async(self.load))
        object.__setattr__(self, "_encoded", None)
        object.__setattr__(self, "_bound", None)
        # Known to be fast: nia's own stat-cached file loader, a Constant and a refreshed source's last load (exactly
        # those classes, never a subclass, whose peek could be anything). Their hits run inline; the rest on a worker.
        load = self.load
        fast = type(load) is CachedFile or type(load) is Constant or type(load) is Refreshed
        object.__setattr__(self, "peek", load.peek if fast else None)  # type: ignore[union-attr]
        for name in ("load", "baseline"):
            if not callable(getattr(self, name)):
                raise TypeError(f"context source {self.key!r}: {name} must be callable")
        for name in ("update", "removal"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(f"context source {self.key!r}: {name} must be callable or None")

    asynchronous: bool = field(default=False, init=False, repr=False)
    """Whether ``load`` is a coroutine function (set from ``load``)."""
    peek: Callable[[], Any] | None = field(default=None, init=False, repr=False)
    """``load.peek`` when ``load`` is a :class:`~nia_core.files.CachedFile`, a :class:`Constant` or nia's stand-in for
    a refreshed source's loader, else ``None``."""

    @property
    def removable(self) -> bool:
        return self.removal is not None

    def value_limit(self, default: int) -> int:
        """The most bytes of canonical JSON this source's value may have: ``default`` (``NIA_MAX_SOURCE_BYTES``),
        unless nia itself bounds the value (:func:`bounded_by_nia`)."""
        bound: int | None = self._bound  # type: ignore[attr-defined]
        return default if bound is None else bound

    def __repr__(self) -> str:
        return f"ContextSource(key={self.key!r})"


def bounded_by_nia(source: ContextSource, max_bytes: int) -> ContextSource:
    """Mark ``source`` as one whose value nia's own reader already bounds (a context file: its size cap).

    The per-source limit guards against plugin values of any size; a context
    file admitted by the file-size cap must not then be refused by it, since
    JSON escaping alone can make a 1 MiB file's value several MiB. Internal:
    for nia's project layer, not for plugins.
    """
    object.__setattr__(source, "_bound", max_bytes)
    return source
