"""The safe provider-turn boundary: one step of a runner, in a fixed order (steps 1-3 here, 4-5 in ``turn``).

1. No active epoch? Observe the context and store the baseline with its
   snapshot, before any pending input is promoted. Unavailable context stores
   nothing and returns :class:`Blocked`; the input stays pending.
2. Promote the pending input (user text, settled tool results) durably.
3. Reconcile: an update is stored with its snapshot in one transaction, a
   replacement stores a new epoch, nothing else changes the baseline.
4. Build the request from durable state: baseline, then the projected
   history, where the newly promoted input precedes the new system message.
5. (:func:`~nia_core.sessions.turn.run_turn`) Call the provider and store its reply. When the call
   fails, the admitted system message stays and the retry sends it unchanged.

A door whose host owns the conversation (an agent's hooks, an MCP client)
runs steps 1-3 only, through :func:`pass_boundary`, and shows the model what
was admitted; :func:`start_over` begins a fresh epoch when its conversation does.
Such a door never builds a request, so the turn's types (the request, the
reply, :class:`~nia_core.sessions.turn.Ready`) live in
:mod:`nia_core.sessions.turn`, which it never imports.

Sources are observed only here, never when they change: an idle session
stays idle. The boundary holds no SQL; it talks to any :class:`Store`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

from nia_core.context import LOADER_TIMEOUT
from nia_core.message import Message
from nia_core.sessions.epochs import (
    Admission,
    Blocked,
    ContextFor,
    Contexts,
    Moved,
    admit_changes,
    attempts,
    ensure_epoch,
    new_epoch,
)
from nia_core.sessions.store import SessionState, Store
from nia_core.sessions.store_errors import RevisionConflict

log = logging.getLogger("nia.sessions")


@dataclass(frozen=True)
class AwaitingTools:
    """The last reply asked for tools whose results are not in yet: not a safe boundary."""

    session_id: str
    call_ids: tuple[str, ...]

    def __str__(self) -> str:
        return f"session {self.session_id}: waiting for tool results: {', '.join(self.call_ids)}"


def unsettled_tool_calls(history: Sequence[Message], pending: Sequence[Message] = ()) -> tuple[str, ...]:
    """Ids of tool calls in the latest assistant message that have no result yet (``pending`` follows ``history``).

    While there are any, this is not a safe boundary (:class:`AwaitingTools`).
    Read from the end: a boundary looks at the tail, never the whole conversation.
    """
    answered: set[str | None] = set()
    for message in chain(reversed(pending), reversed(history)):
        if message.kind == "assistant":
            return tuple(call.id for call in message.tool_calls if call.id not in answered)
        if message.kind == "tool_result":
            answered.add(message.tool_call_id)
    return ()


@dataclass(frozen=True)
class Passed:
    """Steps 1-3 done: what :func:`pass_boundary` and a turn (:mod:`nia_core.sessions.turn`) go on from."""

    state: SessionState
    """Read after admission; has an active epoch."""
    history: Sequence[Message]
    """Read with ``state`` (its tail only, for a door that sends no request)."""
    initialized: bool
    promoted: tuple[Message, ...]
    admission: Admission | None


def pass_steps(
    store: Store,
    session_id: str,
    contexts: Contexts,
    *,
    timeout: float,
    first: SessionState | None = None,
    tail: bool = False,
) -> Passed | Blocked | AwaitingTools:
    """Steps 1-3, the part every door shares (see the module docstring).

    ``first``: the session as the caller just read it, used for the first
    attempt instead of reading it again. After each write the session is read
    with ``after_write``, which a networked store answers from the write itself.
    ``tail``: the caller sends no request, so the history's tail is enough.
    """
    promoted: list[Message] = []
    for _ in attempts(session_id):
        # 1. An active epoch with a complete baseline, before any input is promoted.
        ensured = ensure_epoch(store, session_id, contexts, timeout=timeout, state=first)
        first = None
        if isinstance(ensured, Blocked):
            log.debug("session %s: boundary blocked: %s", session_id, ensured)
            return ensured
        state, initialized = ensured
        # 2. Promote pending input, fenced on the Location whose epoch we just saw.
        try:
            promoted += store.promote(session_id, location=state.session.location)
        except RevisionConflict:
            continue  # moved meanwhile: initialize at the new Location first
        view = store.view(session_id, after_write=True, tail=tail)
        unsettled = unsettled_tool_calls(view.messages)
        if unsettled:
            log.debug("session %s: no boundary while %d tool call(s) await results", session_id, len(unsettled))
            return AwaitingTools(session_id, unsettled)
        # 3. Admit what changed since the snapshot (a fresh baseline needs nothing).
        admission = None
        if not initialized:
            try:
                admission, moved_on = admit_changes(store, view.state, contexts, timeout=timeout)
            except Moved:
                continue
            if moved_on:  # written or read again since the view: the request is built from what is stored now
                view = store.view(session_id, after_write=True, tail=tail)
        state = view.state
        if state.epoch is None:
            continue
        if log.isEnabledFor(logging.DEBUG):
            log.debug("session %s: boundary: %s", session_id, _decision(state.epoch.number, initialized, admission))
        return Passed(state, view.messages, initialized, tuple(promoted), admission)
    raise AssertionError("unreachable")  # pragma: no cover


def _decision(epoch: int, initialized: bool, admission: Admission | None) -> str:
    """One line for ``--debug``: what this boundary decided and why."""
    if initialized or admission is None:
        return f"initialized epoch {epoch}"
    changed = ", ".join(f"{change.kind} {change.key}" for change in admission.changes)
    detail = {
        "unchanged": "nothing changed",
        "updated": f"admitted one system message ({changed})",
        "replaced": f"replaced the baseline ({admission.reason}): epoch {epoch}",
        "blocked": f"a fresh baseline is blocked on {', '.join(admission.blocked_on)}; the current one stays",
    }
    return f"epoch {epoch}: {detail.get(admission.outcome, admission.outcome)}"


@dataclass(frozen=True)
class Admitted:
    """A boundary passed without a provider call: what a host that owns the conversation must show its model."""

    session_id: str
    epoch: int
    """The active epoch after the boundary."""
    baseline: str | None = None
    """The baseline, when this boundary started the epoch (initialized, replaced, or asked for anew)."""
    admission: Admission | None = None
    """What reconciling did (``None`` when the epoch started here)."""
    promoted: tuple[Message, ...] = ()

    @property
    def update(self) -> str | None:
        """The mid-conversation system message admitted here, if any."""
        message = self.admission.message if self.admission is not None else None
        return message.text if message is not None else None

    @property
    def text(self) -> str | None:
        """What to show the model now: a new epoch's baseline, else the admitted update, else ``None``."""
        return self.baseline if self.baseline is not None else self.update


def pass_boundary(
    store: Store, session_id: str, context_for: ContextFor, *, timeout: float = LOADER_TIMEOUT
) -> Admitted | Blocked | AwaitingTools:
    """Steps 1-3 for a session whose conversation lives in a host (an agent's hooks, an MCP client).

    The host asks for the boundary, so there is no idle check: the context is
    observed every time. Pending input, if any, is promoted as in a turn.
    """
    passed = pass_steps(store, session_id, Contexts(context_for), timeout=timeout, tail=True)
    if not isinstance(passed, Passed):
        return passed
    epoch = passed.state.epoch
    assert epoch is not None
    admission = passed.admission
    fresh = passed.initialized or (admission is not None and admission.outcome == "replaced")
    return Admitted(session_id, epoch.number, epoch.baseline if fresh else None, admission, passed.promoted)


def start_over(
    store: Store, session_id: str, context_for: ContextFor, *, reason: str, timeout: float = LOADER_TIMEOUT
) -> Admitted | Blocked:
    """A fresh epoch now, for a host whose conversation started over; its baseline is the text to show.

    When the context is unavailable the old epoch ends and the result is
    :class:`Blocked`; the next :func:`pass_boundary` initializes.
    """
    state = new_epoch(store, session_id, Contexts(context_for), reason=reason, timeout=timeout)
    if isinstance(state, Blocked):
        return state
    assert state.epoch is not None
    return Admitted(session_id, state.epoch.number, state.epoch.baseline)
