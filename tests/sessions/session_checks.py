"""Consistency checks of a session's durable state, through the public Store API only."""

from __future__ import annotations

from collections import Counter

from nia_core.sessions import Store


def problems(store: Store, session_id: str) -> list[str]:
    """Every way the session's stored state breaks the invariants of the boundary (empty when consistent)."""
    found: list[str] = []
    state = store.state(session_id)  # hash-checks the active baseline and snapshot
    history = store.history(session_id)  # validates every row
    epochs = store.epochs(session_id)
    seqs = [h.message.seq for h in history]
    if seqs != list(range(1, len(seqs) + 1)):
        found.append(f"history seqs are not 1..n: {seqs}")
    numbers = [e.number for e in epochs]
    if numbers != list(range(1, len(numbers) + 1)):
        found.append(f"epoch numbers are not 1..n: {numbers}")
    if state.session.epoch is not None and state.session.epoch != (numbers[-1] if numbers else None):
        found.append(f"active epoch {state.session.epoch} is not the latest {numbers[-1:]}")
    for entry in history:
        message = entry.message
        if message.epoch is not None and message.epoch not in numbers:
            found.append(f"message #{message.seq} belongs to unknown epoch {message.epoch}")
        if message.kind == "system_update":
            if entry.snapshot_id is None:
                found.append(f"system message #{message.seq} has no snapshot")
            else:
                store.snapshot(session_id, entry.snapshot_id)  # raises when missing or damaged
    for epoch in epochs:
        store.snapshot(session_id, epoch.snapshot_id)
        store.snapshot(session_id, epoch.initial_snapshot_id)
        updates = [h for h in history if h.message.kind == "system_update" and h.message.epoch == epoch.number]
        expected = updates[-1].snapshot_id if updates else epoch.initial_snapshot_id
        if epoch.snapshot_id != expected:
            found.append(
                f"epoch {epoch.number}: snapshot {epoch.snapshot_id[:8]} has no system message "
                f"(expected {expected[:8] if expected else None})"
            )
        previous = epoch.initial_snapshot_id
        for update in updates:
            if update.snapshot_id == previous:
                found.append(f"epoch {epoch.number}: system message #{update.message.seq} admitted nothing new")
            previous = update.snapshot_id or ""
        for update in updates:
            if (update.message.seq or 0) < epoch.start_seq:
                found.append(f"system message #{update.message.seq} precedes the start of its epoch")
    texts = Counter(h.message.text for h in history if h.message.kind in ("user", "tool_result"))
    for text, count in texts.items():
        if count > 1:
            found.append(f"input {text!r} was promoted {count} times")
    pending = {m.text for m in state.pending}
    for text in pending & set(texts):
        found.append(f"input {text!r} is both pending and promoted")
    updates_text = Counter(h.message.text for h in history if h.message.kind == "system_update")
    for text, count in updates_text.items():
        if count > 1:
            found.append(f"system message {text[:40]!r} was admitted {count} times")
    return found
