"""The safe provider-turn boundary: one step of a runner, in a fixed order.

1. No active epoch? Observe the context and store the baseline with its
   snapshot, before any pending input is promoted. Unavailable context stores
   nothing and returns :class:`Blocked`; the input stays pending.
2. Promote the pending input (user text, settled tool results) durably.
3. Reconcile: an update is stored with its snapshot in one transaction, a
   replacement stores a new epoch, nothing else changes the baseline.
4. Build the request from durable state: baseline, then the projected
   history, where the newly promoted input precedes the new system message.
5. (:func:`run_turn`) Call the provider and store its reply. When the call
   fails, the admitted system message stays and the retry sends it unchanged.

Sources are observed only here, never when they change: an idle session
stays idle. The boundary holds no SQL; it talks to any :class:`Store`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nia_core.context import DEFAULT_TIMEOUT
from nia_core.providers.base import Provider, ProviderError, StreamCallback
from nia_core.sessions.epochs import (
    Admission,
    Blocked,
    ContextFor,
    Contexts,
    Moved,
    admit_changes,
    attempts,
    ensure_epoch,
)
from nia_core.sessions.errors import RevisionConflict
from nia_core.sessions.messages import Message, ModelRequest, Reply
from nia_core.sessions.projection import awaits_reply, build_request, unsettled_tool_calls
from nia_core.sessions.replies import ReplyRecord
from nia_core.sessions.store import Store


@dataclass(frozen=True)
class Ready:
    """The boundary is passed: send ``request``."""

    request: ModelRequest
    promoted: tuple[Message, ...] = ()
    admission: Admission | None = None
    """What reconciling did (``None`` when this boundary initialized the epoch)."""
    initialized: bool = False


@dataclass(frozen=True)
class AwaitingTools:
    """The last reply asked for tools whose results are not in yet: not a safe boundary."""

    session_id: str
    call_ids: tuple[str, ...]

    def __str__(self) -> str:
        return f"session {self.session_id}: waiting for tool results: {', '.join(self.call_ids)}"


@dataclass(frozen=True)
class Idle:
    """Nothing awaits the model: no pending input, no unanswered message. Nothing was observed."""

    session_id: str

    def __str__(self) -> str:
        return f"session {self.session_id}: nothing to send (no pending input)"


BoundaryResult = Ready | Blocked | AwaitingTools | Idle


def run_boundary(
    store: Store, session_id: str, context_for: ContextFor, *, timeout: float = DEFAULT_TIMEOUT
) -> BoundaryResult:
    """Run steps 1-4 (see the module docstring)."""
    state = store.state(session_id)
    history = [entry.message for entry in store.history(session_id)]
    if not state.pending and not awaits_reply(history):
        return Idle(session_id)
    unsettled = unsettled_tool_calls([*history, *state.pending])
    if unsettled:  # not a safe boundary yet: observe nothing, promote nothing
        return AwaitingTools(session_id, unsettled)
    contexts = Contexts(context_for)
    promoted: list[Message] = []
    for _ in attempts(session_id):
        # 1. An active epoch with a complete baseline, before any input is promoted.
        ensured = ensure_epoch(store, session_id, contexts, timeout=timeout)
        if isinstance(ensured, Blocked):
            return ensured
        state, initialized = ensured
        # 2. Promote pending input, fenced on the Location whose epoch we just saw.
        try:
            promoted += store.promote(session_id, location=state.session.location)
        except RevisionConflict:
            continue  # moved meanwhile: initialize at the new Location first
        history = [entry.message for entry in store.history(session_id)]
        unsettled = unsettled_tool_calls(history)
        if unsettled:
            return AwaitingTools(session_id, unsettled)
        # 3. Admit what changed since the snapshot (a fresh baseline needs nothing).
        admission = None
        if not initialized:
            try:
                admission = admit_changes(store, state, contexts, timeout=timeout)
            except Moved:
                continue
        # 4. The request, from durable state only.
        state = store.state(session_id)
        if state.epoch is None:
            continue
        history = [entry.message for entry in store.history(session_id)]
        request = build_request(state.session, state.epoch, history)
        return Ready(request, tuple(promoted), admission, initialized)
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class Replied:
    """One full turn: the boundary passed, the provider answered, the reply is stored."""

    boundary: Ready
    reply: Reply
    message: Message
    """The stored assistant message (with ``seq``)."""


TurnResult = Replied | Blocked | AwaitingTools | Idle
ProviderFor = Callable[[str], Provider]


def run_turn(
    store: Store,
    session_id: str,
    context_for: ContextFor,
    provider_for: ProviderFor,
    *,
    text: str | None = None,
    stream: StreamCallback | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> TurnResult:
    """Keep ``text`` pending, run the boundary, call the provider, store the reply.

    The session is read (and validated) before anything is written, so a
    damaged session changes nothing. A provider failure raises
    :class:`ProviderError` naming the session; the input and any admitted
    system message stay durable and the next call retries with the same request.
    """
    store.state(session_id)
    store.history(session_id)
    if text is not None:
        store.enqueue(session_id, Message("user", text))
    result = run_boundary(store, session_id, context_for, timeout=timeout)
    if not isinstance(result, Ready):
        return result
    request = result.request
    provider = provider_for(request.model)
    try:
        reply = provider.send(request, stream=stream)
    except ProviderError as exc:
        raise ProviderError(
            f"session {session_id}: {request.model} failed: {exc}; the input is kept and the next send retries it"
        ) from exc
    record = ReplyRecord.of(request.model, reply)
    message = store.append(session_id, Message("assistant", reply.text, reply.tool_calls), reply=record)
    return Replied(result, reply, message)
