"""The tests' consistency check: nia's own (``nia db check``), with every input text known to be distinct."""

from __future__ import annotations

from nia_core.sessions import Store
from nia_core.sessions.check import session_problems


def problems(store: Store, session_id: str) -> list[str]:
    """Every way the session's stored state breaks the boundary's invariants (empty when consistent)."""
    return session_problems(store, session_id, distinct_inputs=True)
