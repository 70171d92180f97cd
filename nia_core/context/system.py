"""The System Context: compose sources, render a baseline, reconcile changes.

``initialize`` renders a Generation (baseline text + snapshot) for a new
Context Epoch. ``reconcile`` observes once and says what the next safe
provider-turn boundary must do: nothing, append one combined
mid-conversation system message, or replace the baseline. ``replace`` is the
explicit baseline replacement used by compaction and model switches.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from nia_core.context.codec import canonical_json
from nia_core.context.observe import Observation, observe
from nia_core.context.snapshot import Snapshot, SnapshotEntry
from nia_core.context.source import DEFAULT_TIMEOUT, ContextSource
from nia_core.errors import DuplicateSourceKey, InitializationBlocked, RenderError

SEPARATOR = "\n\n"


class SystemContext:
    """An opaque, ordered composition of context sources with unique keys."""

    __slots__ = ("_sources",)

    def __init__(self, sources: Iterable[ContextSource] = ()) -> None:
        ordered = tuple(sources)
        seen: set[str] = set()
        for source in ordered:
            if not isinstance(source, ContextSource):
                raise TypeError(f"expected a ContextSource, got {type(source).__name__}")
            if source.key in seen:
                raise DuplicateSourceKey(source.key)
            seen.add(source.key)
        self._sources = ordered

    @classmethod
    def make(cls, source: ContextSource) -> SystemContext:
        """A context holding exactly one source."""
        return cls((source,))

    @classmethod
    def combine(cls, *contexts: SystemContext) -> SystemContext:
        """Concatenate contexts in caller order; a duplicate key fails at once."""
        return cls(s for ctx in contexts for s in ctx._sources)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(s.key for s in self._sources)

    @property
    def sources(self) -> tuple[ContextSource, ...]:
        return self._sources

    def __len__(self) -> int:
        return len(self._sources)

    def __iter__(self) -> Iterator[ContextSource]:
        return iter(self._sources)

    def __repr__(self) -> str:
        return f"SystemContext({list(self.keys)})"


@dataclass(frozen=True)
class Generation:
    """A baseline's text and the snapshot it was rendered from."""

    baseline: str
    snapshot: Snapshot
    parts: tuple[tuple[str, str], ...] = ()
    """``(key, text)`` for each source in the baseline, in order."""


ChangeKind = Literal["added", "updated", "removed"]


@dataclass(frozen=True)
class Change:
    key: str
    kind: ChangeKind
    text: str


@dataclass(frozen=True)
class Unchanged:
    """Nothing to tell the model; the snapshot stays as it is."""

    observations: tuple[Observation, ...] = dataclasses.field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Updated:
    """One combined mid-conversation system message and the snapshot it advances to."""

    text: str
    snapshot: Snapshot
    changes: tuple[Change, ...] = ()
    observations: tuple[Observation, ...] = dataclasses.field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class ReplacementReady:
    """The baseline must be (or was asked to be) replaced; here is the fresh one."""

    generation: Generation
    reason: str = ""
    observations: tuple[Observation, ...] = dataclasses.field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class ReplacementBlocked:
    """A replacement is needed but admitted sources are unavailable; keep the old baseline."""

    keys: tuple[str, ...]
    reason: str = ""
    observations: tuple[Observation, ...] = dataclasses.field(default=(), compare=False, repr=False)


Reconciliation = Unchanged | Updated | ReplacementReady | ReplacementBlocked
Replacement = ReplacementReady | ReplacementBlocked

# Encoding memo, kept on the source: a loader that returns the very same immutable
# object as last time (a stat-cached file, say) costs an identity check, not a JSON dump.
_IMMUTABLE = (str, bytes, int, float, bool, tuple, frozenset, type(None))


def _memoizable(value: Any) -> bool:
    if isinstance(value, _IMMUTABLE):
        return True
    params = getattr(type(value), "__dataclass_params__", None)
    return bool(params is not None and params.frozen)


_BY_VALUE_LIMIT = 4096
_by_value: OrderedDict[int, tuple[Any, Any, str]] = OrderedDict()
"""Second memo, by value identity and codec: producers that build new source
objects at every load (but hand out the same cached value) still skip the dump."""
_by_value_lock = threading.Lock()


def encode(source: ContextSource, value: Any) -> str:
    """Canonical JSON of ``value`` through the source's codec."""
    memo = source._encoded  # type: ignore[attr-defined]
    if memo is not None and memo[0] is value:
        return memo[1]  # type: ignore[no-any-return]
    if not _memoizable(value):
        return canonical_json(source.codec.encode(value))
    codec = source.codec
    shared = _by_value.get(id(value))
    if shared is not None and shared[0] is value and shared[1] is codec:
        encoded = shared[2]
    else:
        encoded = canonical_json(codec.encode(value))
        with _by_value_lock:
            _by_value[id(value)] = (value, codec, encoded)
            if len(_by_value) > _BY_VALUE_LIMIT:
                _by_value.popitem(last=False)
    object.__setattr__(source, "_encoded", (value, encoded))
    return encoded


def decode(source: ContextSource, stored: str) -> Any:
    return source.codec.decode(json.loads(stored))


def _render(source: ContextSource, renderer: str, *args: Any) -> str:
    fn: Callable[..., Any] | None
    if renderer == "baseline":
        fn = source.baseline
    elif renderer == "update":
        fn = source.update or (lambda _previous, current: source.baseline(current))
    else:
        fn = source.removal
    assert fn is not None
    try:
        text = fn(*args)
    except Exception as exc:
        raise RenderError(source.key, renderer, f"raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(text, str):
        raise RenderError(source.key, renderer, f"returned {type(text).__name__}, not text")
    if not text.strip():
        raise RenderError(source.key, renderer, "returned empty text")
    return text


def _entry(source: ContextSource, value: Any, encoded: str) -> SnapshotEntry:
    removal = _render(source, "removal", value) if source.removable else None
    return SnapshotEntry(encoded, removal)


def _encode_observations(
    ctx: SystemContext, observations: Sequence[Observation]
) -> tuple[list[tuple[ContextSource, Any, str]], list[str], list[Observation]]:
    """Split into ``(source, value, json)`` for available sources and keys unavailable."""
    available: list[tuple[ContextSource, Any, str]] = []
    unavailable: list[str] = []
    final: list[Observation] = []
    for source, obs in zip(ctx.sources, observations, strict=True):
        if obs.available:
            try:
                available.append((source, obs.value, encode(source, obs.value)))
            except Exception as exc:  # noqa: BLE001 - a custom codec may raise anything; the source is unavailable
                obs = Observation(source.key, obs.value, "error", f"codec could not encode the value: {exc}")
                unavailable.append(source.key)
        else:
            unavailable.append(source.key)
        final.append(obs)
    return available, unavailable, final


def _generation(available: Sequence[tuple[ContextSource, Any, str]]) -> Generation:
    parts = tuple((source.key, _render(source, "baseline", value)) for source, value, _ in available)
    snapshot = Snapshot({source.key: _entry(source, value, encoded) for source, value, encoded in available})
    return Generation(SEPARATOR.join(text for _, text in parts), snapshot, parts)


def initialize(ctx: SystemContext, *, timeout: float = DEFAULT_TIMEOUT) -> Generation:
    """Observe every source once and render a fresh baseline.

    Raises :class:`InitializationBlocked` naming every unavailable key: an
    incomplete baseline is never produced.
    """
    available, unavailable, _ = _encode_observations(ctx, observe(ctx.sources, timeout))
    if unavailable:
        raise InitializationBlocked(tuple(unavailable))
    return _generation(available)


def _replacement(
    available: Sequence[tuple[ContextSource, Any, str]],
    unavailable: Sequence[str],
    snapshot: Snapshot,
    reason: str,
    observations: tuple[Observation, ...],
) -> Replacement:
    blocked = tuple(key for key in unavailable if key in snapshot)
    if blocked:
        return ReplacementBlocked(blocked, reason, observations)
    return ReplacementReady(_generation(available), reason, observations)


def replace(ctx: SystemContext, snapshot: Snapshot, *, timeout: float = DEFAULT_TIMEOUT) -> Replacement:
    """Render a fresh baseline unless a source already admitted is unavailable."""
    available, unavailable, observed = _encode_observations(ctx, observe(ctx.sources, timeout))
    return _replacement(available, unavailable, snapshot, "replacement requested", tuple(observed))


def reconcile(ctx: SystemContext, snapshot: Snapshot, *, timeout: float = DEFAULT_TIMEOUT) -> Reconciliation:
    """Observe once and compare with ``snapshot``; see the module docstring."""
    available, unavailable, observed = _encode_observations(ctx, observe(ctx.sources, timeout))
    observations = tuple(observed)
    present = set(ctx.keys)

    # First pass: decide whether the baseline must be replaced, before any update renderer runs.
    changed: list[tuple[ContextSource, Any, Any, str]] = []
    added: list[tuple[ContextSource, Any, str]] = []
    for source, value, encoded in available:
        entry = snapshot.get(source.key)
        if entry is None:
            added.append((source, value, encoded))
        elif entry.value != encoded:
            try:
                previous = decode(source, entry.value)
            except Exception as exc:  # noqa: BLE001 - any decode failure means replace
                reason = f"stored value of {source.key} can no longer be decoded ({type(exc).__name__}: {exc})"
                return _replacement(available, unavailable, snapshot, reason, observations)
            changed.append((source, previous, value, encoded))
    gone = sorted(key for key in snapshot if key not in present)
    for key in gone:
        if snapshot[key].removal is None:
            reason = f"{key} is gone and has no removal text"
            return _replacement(available, unavailable, snapshot, reason, observations)

    if not changed and not added and not gone:
        return Unchanged(observations)

    entries = {key: entry for key, entry in snapshot.items() if key in present}
    updates: dict[str, Change] = {}
    for source, previous, value, encoded in changed:
        updates[source.key] = Change(source.key, "updated", _render(source, "update", previous, value))
        entries[source.key] = _entry(source, value, encoded)
    for source, value, encoded in added:
        updates[source.key] = Change(source.key, "added", _render(source, "baseline", value))
        entries[source.key] = _entry(source, value, encoded)
    changes = [updates[key] for key in ctx.keys if key in updates]
    changes += [Change(key, "removed", snapshot[key].removal or "") for key in gone]
    text = SEPARATOR.join(change.text for change in changes)
    return Updated(text, Snapshot(entries), tuple(changes), observations)
