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

A door whose host owns the conversation (an agent's hooks, an MCP client)
runs steps 1-3 only, through :func:`pass_boundary`, and shows the model what
was admitted; :func:`start_over` begins a fresh epoch when its conversation does.

Sources are observed only here, never when they change: an idle session
stays idle. The boundary holds no SQL; it talks to any :class:`Store`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nia_core.context import LOADER_TIMEOUT
from nia_core.model import TOOLLESS_PROVIDERS, Message, ModelRequest, Provider, ProviderError, Reply, StreamCallback
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
from nia_core.sessions.projection import awaits_reply, build_request, unsettled_tool_calls
from nia_core.sessions.replies import ReplyRecord
from nia_core.sessions.store import HistoryEntry, SessionState, SessionView, Store
from nia_core.sessions.store_errors import RefusedInput, RevisionConflict

log = logging.getLogger("nia.sessions")


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


@dataclass(frozen=True)
class _Passed:
    state: SessionState
    """Read after admission; has an active epoch."""
    history: Sequence[Message]
    """Read with ``state`` (its tail only, for a door that sends no request)."""
    initialized: bool
    promoted: tuple[Message, ...]
    admission: Admission | None


def _pass(
    store: Store,
    session_id: str,
    contexts: Contexts,
    *,
    timeout: float,
    first: SessionState | None = None,
    tail: bool = False,
) -> _Passed | Blocked | AwaitingTools:
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
        return _Passed(state, view.messages, initialized, tuple(promoted), admission)
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


def run_boundary(
    store: Store, session_id: str, context_for: ContextFor, *, timeout: float = LOADER_TIMEOUT
) -> BoundaryResult:
    """Run steps 1-4 (see the module docstring)."""
    return _boundary(store, session_id, Contexts(context_for), store.view(session_id), timeout=timeout)


def _boundary(
    store: Store, session_id: str, contexts: Contexts, view: SessionView, *, timeout: float
) -> BoundaryResult:
    """Steps 1-4 from ``view``, the session as just read."""
    state = view.state
    if not awaits_reply(view.messages, state.pending):
        return Idle(session_id)
    unsettled = unsettled_tool_calls(view.messages, state.pending)
    if unsettled:  # not a safe boundary yet: observe nothing, promote nothing
        return AwaitingTools(session_id, unsettled)
    passed = _pass(store, session_id, contexts, timeout=timeout, first=state)
    if not isinstance(passed, _Passed):
        return passed
    # 4. The request, from durable state only.
    assert passed.state.epoch is not None
    request = build_request(passed.state.session, passed.state.epoch, passed.history)
    return Ready(request, passed.promoted, passed.admission, passed.initialized)


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
    passed = _pass(store, session_id, Contexts(context_for), timeout=timeout, tail=True)
    if not isinstance(passed, _Passed):
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


@dataclass(frozen=True)
class Replied:
    """One full turn: the boundary passed, the provider answered, the reply is stored."""

    boundary: Ready
    reply: Reply
    message: Message
    """The stored assistant message (with ``seq``)."""
    answered: tuple[Message, ...] = ()
    """The ``tool_result`` answers nia kept pending for the reply's calls that nothing can run
    (undeclared tools, calls the token limit cut): the next send carries them."""


NOT_OFFERED = "No tool named {name!r} was offered in this conversation, so nothing was run."
"""nia's answer to a call of a tool the request did not declare."""
CUT_OFF = (
    "This call was cut off at the output token limit before its input was complete, so nothing was run. "
    "Ask again with a shorter input, or in smaller steps."
)
"""nia's answer to a call the output token limit cut."""


def owed_answers(history: Sequence[HistoryEntry], pending: Sequence[Message]) -> list[Message]:
    """The results nia owes the last reply: one per call nothing can run that has no result, stored or pending.

    Such a call (a tool the request never declared, input the token limit cut)
    would otherwise wait for a result no one can give, and no provider takes
    input after an unanswered call: the session would be stuck for good.
    Answering it as not run keeps the conversation valid and tells the model why.
    """
    for index in range(len(history) - 1, -1, -1):
        entry = history[index]
        if entry.message.kind != "assistant":
            continue
        record = entry.reply
        if record is None or not entry.message.tool_calls:
            return []
        undeclared = set(record.undeclared_calls)
        if record.model.partition("/")[0] in TOOLLESS_PROVIDERS:  # also a reply stored before nia recorded them
            undeclared.update(call.id for call in entry.message.tool_calls)
        if not (undeclared or record.cut_calls):
            return []
        later = [*(e.message for e in history[index + 1 :]), *pending]
        answered = {m.tool_call_id for m in later if m.kind == "tool_result"}
        owed: list[Message] = []
        for call in entry.message.tool_calls:
            if call.id in answered:
                continue
            if call.id in record.cut_calls:
                text = CUT_OFF
            elif call.id in undeclared:
                text = NOT_OFFERED.format(name=call.name)
            else:
                continue
            owed.append(Message("tool_result", text, tool_call_id=call.id, is_error=True))
        return owed
    return []


def _answer_owed(store: Store, session_id: str, view: SessionView) -> tuple[SessionView, tuple[Message, ...]]:
    """Keep nia's owed answers pending (see :func:`owed_answers`); the view as it is afterwards."""
    owed = owed_answers(view.history, view.state.pending)
    if not owed:
        return view, ()
    for message in owed:
        store.enqueue(session_id, message)
    log.debug("session %s: answered %d tool call(s) nothing can run", session_id, len(owed))
    return store.view(session_id, after_write=True), tuple(owed)


TurnResult = Replied | Blocked | AwaitingTools | Idle
ProviderFor = Callable[[str], Provider]


def refuse_input(session_id: str, text: str, conversation: Sequence[Message], pending: Sequence[Message] = ()) -> None:
    """Raise :class:`RefusedInput` for user text that could never be sent, before it is stored.

    Whitespace-only text (the providers reject it), and any text while the
    last reply's tool calls wait for results: kept, it would sit between the
    calls and their results, where no provider accepts it.
    """
    if not text.strip():
        raise RefusedInput(session_id, "the input is empty (only whitespace)")
    unsettled = unsettled_tool_calls(conversation, pending)
    if unsettled:
        raise RefusedInput(
            session_id, f"waiting for tool results ({', '.join(unsettled)}); send them before more input"
        )


def run_turn(
    store: Store,
    session_id: str,
    context_for: ContextFor,
    provider_for: ProviderFor,
    *,
    text: str | None = None,
    stream: StreamCallback | None = None,
    timeout: float = LOADER_TIMEOUT,
    view: SessionView | None = None,
) -> TurnResult:
    """Keep ``text`` pending, run the boundary, call the provider, store the reply.

    The session is read (and validated) before anything is written, so a
    damaged session changes nothing (``view``: the caller's read of it, just
    made). A provider failure raises :class:`ProviderError` naming the session;
    the input and any admitted system message stay durable and the next call
    retries with the same request.
    """
    if view is None or view.tail:
        view = store.view(session_id)
    view, _ = _answer_owed(store, session_id, view)  # a reply stored just before a crash
    if text is not None:
        refuse_input(session_id, text, view.messages, view.state.pending)
        store.enqueue(session_id, Message("user", text))
        view = store.view(session_id, after_write=True)
    result = _boundary(store, session_id, Contexts(context_for), view, timeout=timeout)
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
    answered: tuple[Message, ...] = ()
    if record.undeclared_calls or record.cut_calls:
        _, answered = _answer_owed(store, session_id, store.view(session_id, after_write=True))
    return Replied(result, reply, message, answered)
