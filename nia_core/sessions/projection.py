"""What the model sees: the epoch's baseline, then the projected history.

The durable history keeps everything. The projection drops what a fresh
baseline made redundant or a summary stands for:

- a compaction summary opens the projection and replaces every message
  before ``history_from``;
- mid-conversation system messages of earlier epochs leave (the new baseline
  already says what they said);
- a reply the provider marked as a refusal that resets the turn leaves, with
  the user input it answered (tool results and system updates stay);
- everything else keeps its durable order, so newly promoted input and
  settled tool results come before the system message admitted after them.

No stored state may make a session unsendable, so two states an older nia
could store are lowered into requests every provider accepts: user input
with no text is left out, and tool results stored after other input are
moved up to follow the tool calls they answer (``nia db check`` reports both).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, islice

from nia_core.message import Message
from nia_core.model import ModelRequest
from nia_core.sessions.histories import Prefix
from nia_core.sessions.store import ActiveEpoch, SessionRecord


def project(session: SessionRecord, epoch: int | None, history: Iterable[Message]) -> list[Message]:
    """The messages of ``history`` the model sees in epoch ``epoch``, in order.

    A history a store hands out as a :class:`~nia_core.sessions.histories.Prefix`
    of its append-only log is projected from where the last projection of that
    log could no longer change (its last reply): a turn projects what is new.
    """
    key = (session.summary_seq, session.history_from, epoch)
    if not isinstance(history, Prefix):
        return _project(session, epoch, history, 0, [], [])[0]
    log, length = history.backing, len(history)
    with _MEMO_LOCK:
        known = _MEMO.get(id(log))
        if known is not None and (known.log is not log or known.key != key or known.consumed > length):
            known = None
        start, summary, done = (known.consumed, known.summary, known.done) if known is not None else (0, [], [])
    summary = list(summary)
    projected, stable, found = _project(session, epoch, islice(log, start, length), start, summary, done)
    if stable > start:  # the part before the last reply can no longer change: keep its projection
        kept = done + _results_after_calls(found)
        before = [m for m in summary if (m.seq or 0) < (log[stable].seq or 0)]
        with _MEMO_LOCK:
            _MEMO[id(log)] = _Projected(log, key, stable, before, kept)
            _MEMO.move_to_end(id(log))
            while len(_MEMO) > _MEMO_SIZE:
                _MEMO.popitem(last=False)
    return projected


def _project(
    session: SessionRecord,
    epoch: int | None,
    history: Iterable[Message],
    start: int,
    summary: list[Message],
    done: list[Message],
) -> tuple[list[Message], int, list[Message]]:
    """Project ``history`` (its items numbered from ``start``) after ``done``, the projection before it.

    Also says where the last reply of what was projected stands (the items
    before it can no longer change how they project) and the kept messages
    before it, whose projection is final. ``summary`` gains the summary found.
    """
    rest: list[Message] = []
    at: list[int] = []
    for index, message in enumerate(history, start):
        seq = message.seq if message.seq is not None else 0
        if message.kind == "summary":
            if seq == session.summary_seq:
                summary.append(message)
            continue
        if seq < session.history_from:
            continue
        if message.kind == "system_update" and message.epoch != epoch:
            continue
        if message.refused:
            rest, at = _reset_turn(rest, at)
            continue
        if message.kind == "user" and not message.text.strip():
            continue
        rest.append(message)
        at.append(index)
    last_reply = next((i for i in range(len(rest) - 1, 0, -1) if rest[i].kind == "assistant"), 0)
    stable = at[last_reply] if last_reply else start
    return summary + done + _results_after_calls(rest), stable, rest[:last_reply]


@dataclass
class _Projected:
    """What the last projection of a store's log found final (see :func:`project`)."""

    log: list[Message]
    """Kept so that its ``id`` names it for as long as this is remembered."""
    key: tuple[int | None, int, int | None]
    consumed: int
    """Items of ``log`` projected for good."""
    summary: list[Message]
    done: list[Message]


_MEMO: OrderedDict[int, _Projected] = OrderedDict()
_MEMO_LOCK = threading.Lock()
_MEMO_SIZE = 16


def _results_after_calls(messages: list[Message]) -> list[Message]:
    """Move each tool result up to follow its call's reply; a no-op on a history stored in order.

    A second result for one call, or a result for no call of that reply, is
    left out: no provider accepts either.
    """
    out: list[Message] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.kind == "tool_result":  # a result no reply asked for
            continue
        out.append(message)
        if message.kind != "assistant" or not message.tool_calls:
            continue
        waiting = [call.id for call in message.tool_calls]
        end = next((i for i in range(index, len(messages)) if messages[i].kind == "assistant"), len(messages))
        window = messages[index:end]
        answered: dict[str, Message] = {}
        for m in window:
            if m.kind == "tool_result" and m.tool_call_id in waiting and m.tool_call_id not in answered:
                answered[m.tool_call_id] = m
        out.extend(answered.values())
        out.extend(m for m in window if m.kind != "tool_result")
        index = end
    return out


def misplaced_input(history: Sequence[Message]) -> list[str]:
    """What the projection has to mend in ``history`` (for ``nia db check``), one line per message."""
    found: list[str] = []
    waiting: set[str] = set()
    answered: set[str] = set()
    for message in history:
        if message.kind == "user" and not message.text.strip():
            found.append(f"message #{message.seq}: user input with no text (left out of requests)")
        if message.kind == "assistant":
            waiting = {call.id for call in message.tool_calls}
            answered = set()
        elif message.kind == "tool_result":
            call_id = message.tool_call_id or ""
            if call_id in answered:
                found.append(f"message #{message.seq}: a second result for tool call {call_id} (left out of requests)")
            elif call_id not in waiting:
                found.append(f"message #{message.seq}: a result for no pending tool call (left out of requests)")
            waiting.discard(call_id)
            answered.add(call_id)
        elif message.kind == "user" and waiting:
            found.append(
                f"message #{message.seq}: input stored while tool results were pending "
                "(requests move the results before it)"
            )
    return found


def _reset_turn(projected: list[Message], at: list[int]) -> tuple[list[Message], list[int]]:
    """Leave out the user input of the turn a refusal answered (Anthropic requires the reset).

    Tool results stay, since their calls must be answered; system updates stay,
    since the epoch's snapshot says the model was told. ``at``: where each
    message is in the history, kept in step.
    """
    start = len(projected)
    while start > 0 and projected[start - 1].kind != "assistant":
        start -= 1
    kept = [i for i in range(start, len(projected)) if projected[i].kind != "user"]
    return projected[:start] + [projected[i] for i in kept], at[:start] + [at[i] for i in kept]


def build_request(session: SessionRecord, epoch: ActiveEpoch, history: Sequence[Message]) -> ModelRequest:
    """The request for the next provider call, from durable state only (so a retry is byte-identical)."""
    return ModelRequest(
        session_id=session.id,
        model=session.model,
        baseline=epoch.baseline,
        messages=tuple(project(session, epoch.number, history)),
    )


def awaits_reply(history: Sequence[Message], pending: Sequence[Message] = ()) -> bool:
    """Whether the conversation (``history``, then ``pending``) ends with something the model has not answered yet.

    Empty input is nothing.
    """
    for message in chain(reversed(pending), reversed(history)):
        if message.kind == "user" and not message.text.strip():
            continue
        if message.kind in ("user", "tool_result"):
            return True
        if message.kind == "assistant":
            return False
    return False
