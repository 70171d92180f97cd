"""A turn: the boundary (steps 1-3 in :mod:`nia_core.sessions.boundary`), the request, the provider call.

4. Build the request from durable state: baseline, then the projected
   history, where the newly promoted input precedes the new system message.
5. (:func:`run_turn`) Call the provider and store its reply. When the call
   fails, the admitted system message stays and the retry sends it unchanged.

The doors whose session talks to a model (``nia session send``, the workflow
commands) come here; a door whose host owns the conversation (an agent's
hooks, an MCP client) stops at :func:`~nia_core.sessions.boundary.pass_boundary`
and never imports this module, nor the provider types it speaks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nia_core.context import LOADER_TIMEOUT
from nia_core.message import Message
from nia_core.model import TOOLLESS_PROVIDERS, ModelRequest, Provider, ProviderError, Reply, StreamCallback
from nia_core.sessions.boundary import AwaitingTools, Passed, pass_steps, unsettled_tool_calls
from nia_core.sessions.epochs import Admission, Blocked, ContextFor, Contexts
from nia_core.sessions.projection import awaits_reply, build_request
from nia_core.sessions.replies import ReplyRecord
from nia_core.sessions.store import HistoryEntry, SessionView, Store
from nia_core.sessions.store_errors import RefusedInput

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
class Idle:
    """Nothing awaits the model: no pending input, no unanswered message. Nothing was observed."""

    session_id: str

    def __str__(self) -> str:
        return f"session {self.session_id}: nothing to send (no pending input)"


BoundaryResult = Ready | Blocked | AwaitingTools | Idle


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
    passed = pass_steps(store, session_id, contexts, timeout=timeout, first=state)
    if not isinstance(passed, Passed):
        return passed
    # 4. The request, from durable state only.
    assert passed.state.epoch is not None
    request = build_request(passed.state.session, passed.state.epoch, passed.history)
    return Ready(request, passed.promoted, passed.admission, passed.initialized)


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
