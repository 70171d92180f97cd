"""What can go wrong with a session's durable state, named for the user.

Every store error names the session (when there is one) and says what is
wrong; a failed write never changes anything already stored, and the message
says so where the user might wonder.
"""

from __future__ import annotations

from nia_core.errors import NiaError


class StoreError(NiaError):
    """A session's durable state cannot be read or written."""

    def __init__(self, problem: str, session_id: str | None = None) -> None:
        self.problem = problem
        self.session_id = session_id
        super().__init__(f"session {session_id}: {problem}" if session_id else problem)

    def about(self, session_id: str) -> StoreError:
        """The same error, naming ``session_id`` (for errors raised before the session was known)."""
        if self.session_id:
            return self
        error = type(self)(self.problem, session_id)
        error.__cause__ = self.__cause__
        return error


def not_utf8(action: str, exc: UnicodeEncodeError, session_id: str | None) -> StoreError:
    """A value with a lone surrogate (an undecodable argument byte) that neither database can store."""
    return StoreError(
        f"cannot {action}: a value is not valid UTF-8 text ({exc.reason} at offset {exc.start}); nothing was changed",
        session_id,
    )


class UnknownSession(StoreError):
    """No session has this id (or id prefix)."""

    exit_code = 2


class CorruptRecord(StoreError):
    """A stored row that is not what nia wrote: a bad snapshot, an unknown message kind, a damaged file."""


class DatabaseLocked(StoreError):
    """Another process held the database's write lock for longer than the busy timeout."""


class DatabaseFull(StoreError):
    """The database (or the disk under it) has no room for the write."""


class NewerSchema(StoreError):
    """The database was written by a newer nia; this one refuses to touch it."""


class UnsupportedDatabase(StoreError):
    """``NIA_DB`` names a kind of database this nia cannot open."""

    exit_code = 2


class RefusedInput(NiaError):
    """Input that could never be sent (empty, or sent while tool results are pending); nothing was stored."""

    exit_code = 2

    def __init__(self, session_id: str, why: str) -> None:
        self.session_id = session_id
        super().__init__(f"session {session_id}: {why}; the input was not stored")


class RevisionConflict(Exception):
    """An epoch write lost a compare-and-swap: re-read the session and retry.

    Raised by :class:`~nia_core.sessions.store.Store` writes whose expected
    revision (or fenced Location) no longer matches; never shown to users.
    """

    def __init__(self, session_id: str, why: str = "revision changed") -> None:
        self.session_id = session_id
        self.why = why
        super().__init__(f"session {session_id}: {why}")
