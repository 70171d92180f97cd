"""Attached sessions: nia's side of a conversation an outside host owns (an agent's hooks).

The host names its conversation (``claude-code``, ``3f2a…``); every hook is a
fresh process, so the nia session id is derived from that pair and the same
conversation always finds the same session, with no lookup table.
"""

from __future__ import annotations

import hashlib
import re

from nia_core.errors import UsageError
from nia_core.sessions import SessionRecord, Store, StoreError, UnknownSession

HOST_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")


def attached_id(host: str, host_session_id: str) -> str:
    """The session id for ``host``'s conversation ``host_session_id``: ``HOST-`` and 20 hex digits."""
    if not HOST_NAME.fullmatch(host):
        raise UsageError(f"host name {host!r} must be lowercase letters, digits and '-' (at most 32)")
    if not host_session_id:
        raise UsageError(f"host {host!r} gave an empty session id")
    digest = hashlib.sha256(f"{host}\0{host_session_id}".encode()).hexdigest()
    return f"{host}-{digest[:20]}"


def attach(store: Store, host: str, host_session_id: str, location: str, *, model: str | None = None) -> SessionRecord:
    """The attached session of ``host``'s conversation, created at ``location`` on first use.

    Its model is ``HOST/attached`` unless given: the host calls its own
    model, so nia never sends this session to a provider. Two hook processes
    attaching at once find one session.
    """
    session_id = attached_id(host, host_session_id)
    try:
        return store.session(session_id)
    except UnknownSession:
        pass
    try:
        return store.create_session(location, model or f"{host}/attached", session_id=session_id)
    except StoreError:
        try:
            return store.session(session_id)  # another process created it first
        except StoreError:
            pass
        raise


FORK_REASON = "fork of "
"""How a forked conversation's first epoch names where it came from (``fork of claude-code-3f2a…``)."""


def continue_fork(store: Store, parent_id: str, child_id: str) -> bool:
    """Start ``child_id``'s epoch as the copy of ``parent_id``'s active one; whether there was one to copy.

    A fork (Claude Code ``--fork-session``, ``codex exec fork``) starts with
    the parent's whole conversation, nia's baseline and updates included. So
    the child's epoch gets the parent's baseline (from the snapshot it was
    rendered from), then each of the parent's updates of that epoch in order,
    each with the snapshot it advanced to: the child's next boundary says only
    what changed since the parent's last one, and its fidelity check finds
    the parent's texts where the host put them. Nothing happens when the child
    already has an epoch (another hook of the same fork copied it first) or
    the parent has none.
    """
    parent = store.state(parent_id)
    child = store.state(child_id)
    if parent.epoch is None or child.epoch is not None:
        return False
    number = parent.epoch.number
    store.start_epoch(
        child_id,
        expected_revision=child.session.revision,
        location=child.session.location,
        model=child.session.model,
        segments=[parent.epoch.baseline],
        snapshot=store.snapshot(parent_id, parent.epoch.record.initial_snapshot_id),
        reason=f"{FORK_REASON}{parent_id}",
    )
    for entry in store.history(parent_id):
        message = entry.message
        if message.kind != "system_update" or message.epoch != number or entry.snapshot_id is None:
            continue
        now = store.state(child_id)
        assert now.epoch is not None
        store.admit_update(
            child_id,
            expected_revision=now.session.revision,
            epoch=now.epoch.number,
            text=message.text,
            snapshot=store.snapshot(parent_id, entry.snapshot_id),
        )
    return True
