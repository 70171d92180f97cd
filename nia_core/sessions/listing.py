"""What ``nia session ls`` and pruning read of a store: every session's record, and how much each holds.

Apart from :mod:`nia_core.sessions.store` because a boundary never lists
sessions: a store imports this module when it is asked for a listing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nia_core.sessions.serialize import session_from_row
from nia_core.sessions.store import SessionRecord
from nia_core.sessions.store_errors import CorruptRecord


@dataclass(frozen=True)
class SessionActivity:
    """How much a session holds and when it last changed, for listing and pruning."""

    messages: int
    last_activity: str
    """ISO-8601 UTC: the newest of its creation, messages, epochs and pending input."""


@dataclass(frozen=True)
class SessionListing:
    """The sessions that read, and one :class:`CorruptRecord` (naming its session) per damaged row."""

    sessions: tuple[SessionRecord, ...]
    damaged: tuple[CorruptRecord, ...] = ()


def listing(rows: Sequence[Sequence[Any]]) -> SessionListing:
    """``sessions`` rows read one by one: a damaged row is reported and the others still list."""
    records: list[SessionRecord] = []
    damaged: list[CorruptRecord] = []
    for row in rows:
        try:
            records.append(session_from_row(row))
        except CorruptRecord as exc:
            damaged.append(exc)
    return SessionListing(tuple(records), tuple(damaged))


ACTIVITY_QUERY = (
    "SELECT s.id, s.created,"
    " (SELECT count(*) FROM messages m WHERE m.session_id = s.id),"
    " (SELECT m.created FROM messages m WHERE m.session_id = s.id ORDER BY m.seq DESC LIMIT 1),"
    " (SELECT max(e.created) FROM epochs e WHERE e.session_id = s.id),"
    " (SELECT max(p.created) FROM pending p WHERE p.session_id = s.id)"
    " FROM sessions s"
)
"""Message count and the newest timestamps of every session: one statement, the same in both dialects.

The last message is found by its number (one row through the history's index), not by the largest of every
message's time, which read every message row of every session: listing grew with all the messages stored."""


def activity(rows: Sequence[Sequence[Any]]) -> dict[str, SessionActivity]:
    """Rows of :data:`ACTIVITY_QUERY`; a damaged timestamp counts as no activity rather than failing the rest."""
    found: dict[str, SessionActivity] = {}
    for session_id, *stamps_and_count in rows:
        created, count, *stamps = stamps_and_count
        times = [s for s in (created, *stamps) if isinstance(s, str)]
        found[str(session_id)] = SessionActivity(int(count or 0), max(times, default=""))
    return found
