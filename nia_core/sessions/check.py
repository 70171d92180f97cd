"""The consistency check of one session's stored state, through the :class:`Store` interface only.

``nia db check`` runs it on every session, and the tests after every fault
they inject: one set of rules, so a state the tests call consistent is one
``nia db check`` accepts, and the other way round.
"""

from __future__ import annotations

from collections import Counter

from nia_core.message import Message
from nia_core.sessions.boundary import unsettled_tool_calls
from nia_core.sessions.projection import misplaced_input
from nia_core.sessions.store import HistoryEntry, Store
from nia_core.sessions.store_errors import CorruptRecord, StoreError
from nia_core.sessions.turn import owed_answers


def session_problems(store: Store, session_id: str, *, distinct_inputs: bool = False) -> list[str]:
    """How the session's stored state breaks the boundary's invariants (empty when it does not).

    ``distinct_inputs``: the caller knows every input and every context change
    it sent was a different text (the tests' drivers do), so a text stored
    twice means it was promoted or admitted twice. A real user may well send
    "Continue." twice, so ``nia db check`` leaves it off.
    """
    try:
        return _problems(store, session_id, distinct_inputs)
    except CorruptRecord as exc:
        return [exc.problem]
    except StoreError as exc:  # the database failing (locked, unreachable), not this session's rows: stop
        raise exc.about(session_id) from None
    except Exception as exc:  # noqa: BLE001 - a check reports every session and goes on, whatever one of them holds
        return [f"cannot be read ({type(exc).__name__}: {exc})"]


def _problems(store: Store, session_id: str, distinct_inputs: bool) -> list[str]:
    found: list[str] = []
    state = store.state(session_id)  # hash-checks the active baseline and snapshot, validates pending input
    history = store.history(session_id)  # validates every row
    epochs = store.epochs(session_id)
    seqs = [entry.message.seq for entry in history]
    if seqs != list(range(1, len(seqs) + 1)):
        missing = sorted(set(range(1, len(seqs) + 1)) - set(seqs))
        found.append(f"the history is not numbered 1..{len(seqs)} (missing {missing[:5]})")
    numbers = [epoch.number for epoch in epochs]
    if numbers != list(range(1, len(numbers) + 1)):
        found.append(f"its epochs are not numbered 1..{len(numbers)}: {numbers}")
    if state.session.epoch is not None and numbers and state.session.epoch != numbers[-1]:
        found.append(f"its active epoch {state.session.epoch} is not its latest ({numbers[-1]})")
    known = set(numbers)
    for entry in history:
        message = entry.message
        if message.epoch is not None and message.epoch not in known:
            found.append(f"message #{message.seq} belongs to an unknown epoch {message.epoch}")
        if message.kind == "system_update" and entry.snapshot_id is None:
            found.append(f"system message #{message.seq} has no snapshot")
    for epoch in epochs:
        store.snapshot(session_id, epoch.initial_snapshot_id)  # raises CorruptRecord when missing or damaged
        store.snapshot(session_id, epoch.snapshot_id)
        updates = [h for h in history if h.message.kind == "system_update" and h.message.epoch == epoch.number]
        previous = epoch.initial_snapshot_id
        for update in updates:
            if update.snapshot_id is None:
                continue
            store.snapshot(session_id, update.snapshot_id)
            if update.snapshot_id == previous:
                found.append(f"epoch {epoch.number}: system message #{update.message.seq} admitted nothing new")
            if (update.message.seq or 0) < epoch.start_seq:
                found.append(f"system message #{update.message.seq} precedes the start of epoch {epoch.number}")
            previous = update.snapshot_id
        if epoch.snapshot_id != previous:
            found.append(f"epoch {epoch.number}: its snapshot {epoch.snapshot_id[:12]} has no system message")
    found += misplaced_input([entry.message for entry in history])
    for message in state.pending:
        if message.kind == "user" and not message.text.strip():
            found.append("pending input with no text (it is never sent)")
    owed = owed_answers(history, state.pending)
    if owed:
        found.append(
            f"tool call(s) {', '.join(m.tool_call_id or '' for m in owed)} cannot be run (a tool no request declared, "
            "or input cut by the token limit) and have no answer: no request can be sent until they do "
            "(the next send answers them as not run)"
        )
    waiting = unsettled_tool_calls([entry.message for entry in history])
    if waiting and any(message.kind == "user" for message in state.pending):
        found.append(
            f"input is pending while tool results ({', '.join(waiting)}) are; requests move the results before it"
        )
    promoted = Counter(
        (h.message.kind, h.message.text, h.message.tool_call_id)
        for h in history
        if h.message.kind == "tool_result" and h.message.tool_call_id
    )
    for (_kind, _text, call_id), count in promoted.items():
        if count > 1:
            found.append(f"the result of tool call {call_id} was stored {count} times")
    if distinct_inputs:
        found += _repeated_texts(history, state.pending)
    return found


def _repeated_texts(history: list[HistoryEntry], pending: tuple[Message, ...] | list[Message]) -> list[str]:
    found: list[str] = []
    texts = Counter(h.message.text for h in history if h.message.kind in ("user", "tool_result"))
    for text, count in texts.items():
        if count > 1:
            found.append(f"input {text!r} was promoted {count} times")
    for text in {m.text for m in pending} & set(texts):
        found.append(f"input {text!r} is both pending and promoted")
    updates = Counter(h.message.text for h in history if h.message.kind == "system_update")
    for text, count in updates.items():
        if count > 1:
            found.append(f"system message {text[:40]!r} was admitted {count} times")
    return found
