"""The Store: the one interface every durable session backend implements.

A store holds sessions, their durable message history, input waiting to be
promoted, and each session's context epochs. It knows nothing of sources,
reconciliation or providers: the epoch and boundary logic
(:mod:`nia_core.sessions.epochs`, :mod:`nia_core.sessions.boundary`) lives
above it and talks to it only through these methods, so a new backend
(PostgreSQL, say) implements this class and passes ``tests/sessions``.

Rules every implementation keeps:

- Each write method is one transaction: all of it is stored or none of it.
- Epoch writes (:meth:`start_epoch`, :meth:`admit_update`) are a
  compare-and-swap on the session's ``revision``: when the stored revision is
  not ``expected_revision`` (or the session no longer sits at ``location``)
  nothing is written and :class:`RevisionConflict` is raised, so the caller
  re-reads and retries. Every write that changes epoch state bumps the revision.
- Snapshot values, removal texts and baseline parts are stored content-addressed
  (sha256 of the text, the text once); reads check the hash and raise
  :class:`CorruptRecord` naming the session when it does not match.
- Reads validate what they return (known message kinds, well-formed rows) and
  raise :class:`CorruptRecord` naming the session and the row.
- Backend failures become :class:`StoreError` subclasses naming the session:
  :class:`DatabaseLocked`, :class:`DatabaseFull`, :class:`NewerSchema`.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, overload

from nia_core.context import Snapshot
from nia_core.message import Message
from nia_core.sessions.replies import ReplyRecord
from nia_core.sessions.store_errors import RevisionConflict, StoreError

if TYPE_CHECKING:  # what `nia session ls` reads: a boundary never lists sessions
    from nia_core.sessions.listing import SessionActivity, SessionListing

__all__ = [
    "ActiveEpoch",
    "EpochRecord",
    "HistoryEntry",
    "PendingCompaction",
    "RevisionConflict",
    "SessionActivity",
    "SessionListing",
    "SessionRecord",
    "SessionState",
    "SessionView",
    "Store",
    "StoreError",
]


class Segments(Sequence[str]):
    """A baseline cut at its sources' spans, each segment cut when it is asked for.

    A store hashes and stores the segments one at a time and keeps :attr:`text`,
    so a new epoch's baseline is held once (the caller's text) rather than again
    as its segments. Joined, the segments are :attr:`text` exactly.
    """

    __slots__ = ("_bounds", "text")

    def __init__(self, text: str, bounds: Sequence[tuple[int, int]]) -> None:
        self.text = text
        self._bounds = tuple(bounds)

    def __len__(self) -> int:
        return len(self._bounds)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self.text[start:end] for start, end in self._bounds[index]]
        start, end = self._bounds[index]
        return self.text[start:end]


def joined(segments: Sequence[str]) -> str:
    """The baseline ``segments`` make: their text as it is when they are :class:`Segments`, else joined."""
    return segments.text if isinstance(segments, Segments) else "".join(segments)


def tail_start(messages: Sequence[Message]) -> int:
    """Where the tail of a history starts: its last ``assistant`` reply (``len(messages)`` when there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].kind == "assistant":
            return index
    return len(messages)


@dataclass(frozen=True)
class PendingCompaction:
    """A compaction asked for but not yet applied (its fresh baseline may be blocked)."""

    summary: str
    """The summary that will open the new epoch's projected history."""
    covers_upto: int
    """The last history ``seq`` the summary stands for; later messages stay projected."""


@dataclass(frozen=True)
class SessionRecord:
    id: str
    location: str
    """The authoritative Location (a resolved directory path); epoch initialization is fenced on it."""
    model: str
    """``PROVIDER/MODEL``; an active epoch started for another model must be replaced."""
    created: str
    """ISO 8601, UTC."""
    revision: int
    """Bumped by every write to the session's epoch state; the compare-and-swap token."""
    epoch: int | None
    """The active epoch's number, or ``None`` (a new or just-moved session)."""
    history_from: int = 0
    """Projected history starts at this ``seq`` (moved forward by compaction)."""
    summary_seq: int | None = None
    """The ``seq`` of the summary message that opens projected history, if any."""
    compaction: PendingCompaction | None = None


@dataclass(frozen=True)
class EpochRecord:
    """One context epoch, active or past (the audit trail)."""

    number: int
    baseline_id: str
    """sha256 of the exact baseline text."""
    snapshot_id: str
    """The snapshot last admitted in this epoch."""
    initial_snapshot_id: str
    """The snapshot the baseline was rendered from."""
    start_seq: int
    """The history ``seq`` at which the epoch began (the next message appended after it started)."""
    model: str
    location: str
    reason: str
    created: str


@dataclass(frozen=True)
class ActiveEpoch:
    record: EpochRecord
    baseline: str
    """The exact baseline text, byte for byte as first rendered."""
    snapshot: Snapshot

    @property
    def number(self) -> int:
        return self.record.number


@dataclass(frozen=True)
class SessionState:
    """A consistent read of a session: its record, active epoch and pending input."""

    session: SessionRecord
    epoch: ActiveEpoch | None
    pending: tuple[Message, ...] = ()


@dataclass(frozen=True)
class HistoryEntry:
    """One durable message with what the store knows about it."""

    message: Message
    """With ``seq`` and ``epoch`` set."""
    created: str
    snapshot_id: str | None = None
    """For a ``system_update``: the snapshot it advanced its epoch to."""
    reply: ReplyRecord | None = None
    """For an ``assistant`` reply: model, token usage and stop reason (``None`` for rows before schema 2)."""


@dataclass(frozen=True)
class SessionView:
    """A session's state and its durable history (whole, or its tail when asked), read together."""

    state: SessionState
    history: Sequence[HistoryEntry]
    """Immutable: a tuple, or what a store keeps of it (see :class:`~nia_core.sessions.histories.Prefix`)."""
    messages: Sequence[Message] = field(default=(), compare=False, repr=False)
    """The messages of ``history``, in order (filled in when not given)."""
    tail: bool = False
    """``history`` is only the tail: the last ``assistant`` reply and every message after it (nothing
    before the first reply), all a boundary that sends no request needs of it."""

    def __post_init__(self) -> None:
        if len(self.messages) != len(self.history):
            object.__setattr__(self, "messages", tuple(entry.message for entry in self.history))


class Store(abc.ABC):
    """Durable sessions. See the module docstring for the rules every backend keeps."""

    url: str
    """Where the data lives, for messages (a file path for SQLite)."""

    # -- sessions ---------------------------------------------------------------------

    @abc.abstractmethod
    def create_session(self, location: str, model: str, *, session_id: str | None = None) -> SessionRecord:
        """A new session with no epoch; the first boundary initializes one."""

    @abc.abstractmethod
    def session(self, session_id: str) -> SessionRecord:
        """The session's record; raises :class:`UnknownSession`."""

    @abc.abstractmethod
    def resolve(self, prefix: str) -> str:
        """The full id of the one session whose id starts with ``prefix``; raises :class:`UnknownSession`."""

    def sessions(self) -> list[SessionRecord]:
        """Every readable session, oldest first (damaged rows are left out: see :meth:`list_sessions`)."""
        return list(self.list_sessions().sessions)

    @abc.abstractmethod
    def list_sessions(self) -> SessionListing:
        """Every session, oldest first; a row that does not read is reported, not raised, so the rest list."""

    @abc.abstractmethod
    def activity(self) -> dict[str, SessionActivity]:
        """Message count and last activity of every session, by id (damaged rows included)."""

    @abc.abstractmethod
    def delete_session(self, session_id: str) -> None:
        """Remove the session and every row that names it; raises :class:`UnknownSession`.

        Content-addressed texts and snapshots stay: other sessions may share them.
        """

    @abc.abstractmethod
    def state(self, session_id: str) -> SessionState:
        """Record, active epoch (baseline text and snapshot, hash-checked) and pending input, read consistently."""

    @abc.abstractmethod
    def history(self, session_id: str) -> list[HistoryEntry]:
        """The whole durable history in ``seq`` order, every row validated."""

    def view(self, session_id: str, *, after_write: bool = False, tail: bool = False) -> SessionView:
        """:meth:`state` and :meth:`history` together, so a boundary reads a session once per step.

        With ``after_write``, the caller has just written to the session and a
        store that read the session under that write's lock (in the same round
        trip) may answer with that instead of reading again: the session as
        this thread's last write to it left it, a real state no older than the
        write. Either way the caller gets no less than a read right after its
        write. The default reads anew; a networked store overrides this.

        With ``tail``, the history may be only its tail (see :attr:`SessionView.tail`),
        which a store can read without reading the rest.
        """
        view = SessionView(self.state(session_id), tuple(self.history(session_id)))
        if not tail:
            return view
        start = tail_start(view.messages)
        return SessionView(view.state, view.history[start:], view.messages[start:], tail=True)

    @abc.abstractmethod
    def epochs(self, session_id: str) -> list[EpochRecord]:
        """Every epoch the session has had, oldest first."""

    @abc.abstractmethod
    def snapshot(self, session_id: str, snapshot_id: str) -> Snapshot:
        """A stored snapshot by id, every value hash-checked."""

    # -- input and replies ------------------------------------------------------------

    @abc.abstractmethod
    def enqueue(self, session_id: str, message: Message) -> None:
        """Keep ``message`` (``user`` or ``tool_result``) pending until a boundary promotes it."""

    @abc.abstractmethod
    def promote(self, session_id: str, *, location: str) -> list[Message]:
        """Move every pending message into the history, in order, in one transaction.

        Fenced: raises :class:`RevisionConflict` unless the session still sits
        at ``location`` with an active epoch, so input is never promoted
        without a complete baseline in force (after a move, say).
        """

    @abc.abstractmethod
    def append(self, session_id: str, message: Message, *, reply: ReplyRecord | None = None) -> Message:
        """Append a message (the provider's reply) to the history; returns it with ``seq`` and ``epoch``.

        ``reply`` (model, usage, stop reason) is stored with it in the same transaction.
        """

    # -- epoch writes (compare-and-swap on the revision) -------------------------------

    @abc.abstractmethod
    def start_epoch(
        self,
        session_id: str,
        *,
        expected_revision: int,
        location: str,
        model: str,
        segments: Sequence[str],
        snapshot: Snapshot,
        reason: str,
        compaction: PendingCompaction | None = None,
    ) -> SessionRecord:
        """Make a fresh epoch active whose baseline is ``"".join(segments)`` (:func:`joined`).

        With ``compaction`` (the session's pending one), a ``summary`` message
        is appended in the same transaction, projected history moves past
        ``compaction.covers_upto`` and the pending compaction is cleared.
        Raises :class:`RevisionConflict` when the revision or Location moved on.
        """

    @abc.abstractmethod
    def admit_update(
        self, session_id: str, *, expected_revision: int, epoch: int, text: str, snapshot: Snapshot
    ) -> Message:
        """Append one mid-conversation system message and advance the epoch's snapshot, both or neither."""

    # -- user commands (unconditional; each bumps the revision) -------------------------

    @abc.abstractmethod
    def move(self, session_id: str, location: str) -> SessionRecord:
        """Make ``location`` authoritative and clear the active epoch."""

    @abc.abstractmethod
    def set_model(self, session_id: str, model: str) -> SessionRecord:
        """Switch the session's model; the next epoch write replaces the epoch started for the old one."""

    @abc.abstractmethod
    def request_compaction(self, session_id: str, compaction: PendingCompaction) -> SessionRecord:
        """Record a compaction to apply with the next fresh baseline."""

    # -- lifetime -----------------------------------------------------------------------

    @abc.abstractmethod
    def close(self) -> None: ...

    def shared_files_replaced(self) -> bool:
        """Whether files this open store shares with other processes were replaced meanwhile, so that this process
        can neither use nor close it, nor open the store again, without losing what others wrote (SQLite: its
        ``-wal`` or ``-shm`` removed beside the same database file). Such a process ends without closing it."""
        return False

    def rest(self) -> None:
        """Called by a process that keeps this store open between uses, after each: leave the stored data whole
        outside the open connection (SQLite: a checkpoint). Nothing to do for most stores."""
        return None

    def still_current(self) -> bool:
        """Whether a process that keeps this store open between uses (a resident process) may use it again.

        It must still reach the database it opened, at the schema it checked
        then. A store that cannot tell says no, and is opened again.
        """
        return False

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
