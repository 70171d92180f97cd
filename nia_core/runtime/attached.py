"""Attached sessions: nia's side of a conversation an outside host owns (an agent's hooks).

The host names its conversation (``claude-code``, ``3f2a…``); every hook is a
fresh process, so the nia session id is derived from that pair and the same
conversation always finds the same session, with no lookup table.
"""

from __future__ import annotations

import re

from nia_core.digest import sha256_hex
from nia_core.errors import UsageError
from nia_core.sessions import SessionRecord, Store, StoreError, UnknownSession

HOST_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")


def attached_id(host: str, host_session_id: str) -> str:
    """The session id for ``host``'s conversation ``host_session_id``: ``HOST-`` and 20 hex digits."""
    if not HOST_NAME.fullmatch(host):
        raise UsageError(f"host name {host!r} must be lowercase letters, digits and '-' (at most 32)")
    if not host_session_id:
        raise UsageError(f"host {host!r} gave an empty session id")
    digest = sha256_hex(f"{host}\0{host_session_id}".encode())
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
