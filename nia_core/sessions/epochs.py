"""Context epochs: starting, advancing and replacing them, store-agnostic.

Every epoch write is a compare-and-swap on the session's revision (see
:class:`~nia_core.sessions.store.Store`). On a mismatch we re-read the session
and decide again from what is stored now: another process may have already
admitted the same change (then there is nothing left to do), replaced the
epoch, or moved the session. So concurrent replacement requests never end an
otherwise valid run with an error.

Initialization is fenced on the session's authoritative Location: the context
is observed at the Location read from the store, and the write only lands if
the session is still there. A runner at a Location the session has left can
therefore never recreate its context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from nia_core.context import (
    LOADER_TIMEOUT,
    Change,
    Generation,
    Observation,
    ReplacementBlocked,
    ReplacementReady,
    SystemContext,
    Unchanged,
    Updated,
    initialize,
    reconcile,
    replace,
)
from nia_core.errors import InitializationBlocked
from nia_core.message import Message
from nia_core.sessions.store import Segments, SessionState, Store
from nia_core.sessions.store_errors import RevisionConflict, StoreError

ContextFor = Callable[[str], SystemContext]
"""The System Context at a Location (a directory path). The CLI asks the plugin host; tests pass sources."""

MAX_ATTEMPTS = 1000
"""Compare-and-swap retries before giving up (each retry means another process wrote in between)."""


class Moved(Exception):
    """The session lost its active epoch (moved) while we worked; start over from initialization."""


@dataclass(frozen=True)
class Blocked:
    """No complete baseline could be rendered: these admitted or required sources are unavailable."""

    session_id: str
    keys: tuple[str, ...]
    what: str = "the context"

    def __str__(self) -> str:
        return f"session {self.session_id}: {self.what} is blocked on: {', '.join(self.keys)}"


@dataclass(frozen=True)
class Admission:
    """What reconciling at a boundary did to the active epoch."""

    outcome: Literal["unchanged", "updated", "replaced", "blocked"]
    message: Message | None = None
    """The mid-conversation system message admitted, for ``updated``."""
    reason: str = ""
    """Why the epoch was replaced, or why a replacement is blocked."""
    blocked_on: tuple[str, ...] = ()
    """Unavailable admitted sources holding back a replacement (the old baseline stays)."""
    changes: tuple[Change, ...] = ()
    """For ``updated``: each source added, updated or removed, with its text, in message order."""
    observations: tuple[Observation, ...] = field(default=(), compare=False, repr=False)
    """What each source's loader said at this boundary (a door reports the unavailable ones)."""


@dataclass
class Contexts:
    """Assembles a Location's context at most once per boundary."""

    context_for: ContextFor
    _cache: dict[str, SystemContext] = field(default_factory=dict)

    def at(self, location: str) -> SystemContext:
        ctx = self._cache.get(location)
        if ctx is None:
            ctx = self._cache[location] = self.context_for(location)
        return ctx


def attempts(session_id: str) -> Iterator[int]:
    yield from range(MAX_ATTEMPTS)
    raise StoreError(f"gave up after {MAX_ATTEMPTS} concurrent changes to its context epoch", session_id)


def segments(generation: Generation) -> Segments:
    """The baseline cut at its sources' spans, so each source's text is stored (and shared) on its own.

    Joined, the segments are the baseline exactly (the separators between
    sources are segments of their own); a generation without spans is one
    segment. They are cut as the store asks for them (:class:`Segments`).
    """
    baseline, pos, bounds = generation.baseline, 0, []
    for _key, start, end in generation.spans:
        if start < pos or end > len(baseline):
            return Segments(baseline, [(0, len(baseline))])
        if start > pos:
            bounds.append((pos, start))
        bounds.append((start, end))
        pos = end
    if pos < len(baseline):
        bounds.append((pos, len(baseline)))
    return Segments(baseline, bounds)


@dataclass(frozen=True)
class Wanted:
    """A replacement asked for explicitly: what (``compaction``, ``model switch``) and, for a switch, the models."""

    kind: Literal["compaction", "model switch"]
    old_model: str | None = None
    new_model: str | None = None

    def __str__(self) -> str:
        """The epoch's stored reason: ``compaction``, ``model switch from A to B``."""
        return self.kind if self.old_model is None else f"{self.kind} from {self.old_model} to {self.new_model}"


def replacement_wanted(state: SessionState) -> Wanted | None:
    """The replacement the active epoch awaits by explicit request (compaction, model switch), or ``None``."""
    if state.epoch is None:
        return None
    if state.session.compaction is not None:
        return Wanted("compaction")
    if state.epoch.record.model != state.session.model:
        return Wanted("model switch", state.epoch.record.model, state.session.model)
    return None


def start(store: Store, state: SessionState, generation: Generation, reason: str) -> None:
    """Store ``generation`` as the new active epoch (CAS; raises :class:`RevisionConflict`)."""
    session = state.session
    store.start_epoch(
        session.id,
        expected_revision=session.revision,
        location=session.location,
        model=session.model,
        segments=segments(generation),
        snapshot=generation.snapshot,
        reason=reason,
        compaction=session.compaction,
    )


def ensure_epoch(
    store: Store,
    session_id: str,
    contexts: Contexts,
    *,
    timeout: float = LOADER_TIMEOUT,
    state: SessionState | None = None,
) -> tuple[SessionState, bool] | Blocked:
    """Step 1: make sure the session has an active epoch; ``(state, started_now)`` or :class:`Blocked`.

    ``state``: the session as the caller just read it (else it is read here).
    Nothing is stored when the context is unavailable, so the caller's
    pending input stays pending and retryable.
    """
    for _ in attempts(session_id):
        if state is None:
            state = store.state(session_id)
        if state.epoch is not None:
            return state, False
        location = state.session.location
        try:
            generation = initialize(contexts.at(location), timeout=timeout)
        except InitializationBlocked as exc:
            return Blocked(session_id, exc.keys, "the initial context")
        try:
            start(store, state, generation, f"initialized at {location}")
        except RevisionConflict:
            state = None
            continue
        del generation  # stored: the state read next holds the baseline, not a second copy beside this one
        return store.state(session_id), True
    raise AssertionError("unreachable")  # pragma: no cover


def new_epoch(
    store: Store, session_id: str, contexts: Contexts, *, reason: str, timeout: float = LOADER_TIMEOUT
) -> SessionState | Blocked:
    """Start a fresh epoch now, whatever is active: the conversation started over (a host's clear or compaction).

    The baseline is observed at the session's Location (a pending compaction
    applies with it). When the context is unavailable, the active epoch ends
    instead, since its baseline no longer stands for the conversation: the
    next boundary initializes, as after a move.
    """
    for _ in attempts(session_id):
        state = store.state(session_id)
        location = state.session.location
        try:
            generation = initialize(contexts.at(location), timeout=timeout)
        except InitializationBlocked as exc:
            if state.epoch is not None:
                store.move(session_id, location)
            return Blocked(session_id, exc.keys, "the initial context")
        try:
            start(store, state, generation, reason)
        except RevisionConflict:
            continue
        return store.state(session_id)
    raise AssertionError("unreachable")  # pragma: no cover


def admit_changes(
    store: Store, state: SessionState, contexts: Contexts, *, timeout: float = LOADER_TIMEOUT
) -> tuple[Admission, bool]:
    """Step 3: apply a requested replacement, else reconcile, writing the result in one CAS.

    Also says whether the session moved on from ``state`` here (written, or
    read again after a lost compare-and-swap), so the caller reads it anew.
    Raises :class:`Moved` when the session loses its epoch meanwhile.
    """
    session_id = state.session.id
    moved_on = False
    for _ in attempts(session_id):
        epoch = state.epoch
        if epoch is None:
            raise Moved(session_id)
        ctx = contexts.at(state.session.location)
        held: tuple[str, ...] = ()
        wanted = replacement_wanted(state)
        try:
            if wanted:
                replacement = replace(ctx, epoch.snapshot, timeout=timeout)
                if isinstance(replacement, ReplacementReady):
                    start(store, state, replacement.generation, str(wanted))
                    return Admission("replaced", reason=str(wanted), observations=replacement.observations), True
                held = replacement.keys
            result = reconcile(ctx, epoch.snapshot, timeout=timeout)
            if isinstance(result, Updated):
                message = store.admit_update(
                    session_id,
                    expected_revision=state.session.revision,
                    epoch=epoch.number,
                    text=result.text,
                    snapshot=result.snapshot,
                )
                return Admission(
                    "updated",
                    message,
                    blocked_on=held,
                    reason=str(wanted) if wanted and held else "",
                    changes=result.changes,
                    observations=result.observations,
                ), True
            if isinstance(result, ReplacementReady):
                start(store, state, result.generation, result.reason)
                return Admission("replaced", reason=result.reason, observations=result.observations), True
        except RevisionConflict:
            state = store.state(session_id)
            moved_on = True
            continue
        if isinstance(result, ReplacementBlocked):
            admission = Admission(
                "blocked", reason=result.reason, blocked_on=result.keys, observations=result.observations
            )
            return admission, moved_on
        assert isinstance(result, Unchanged)
        if held:
            admission = Admission(
                "blocked", reason=str(wanted or ""), blocked_on=held, observations=result.observations
            )
            return admission, moved_on
        return Admission("unchanged", observations=result.observations), moved_on
    raise AssertionError("unreachable")  # pragma: no cover
