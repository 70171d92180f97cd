"""Each session's history as this process read and validated it, and the database's proof it is unchanged.

A turn's request carries the whole conversation, but a turn adds two or three
messages: reading and validating every row again at each read made a turn grow
with the session many times faster than encoding its request. So a store keeps
the rows it has validated, with the session's *history mark*: a random token
the database stores in the session's row and replaces, by triggers, whenever
any of the session's stored messages is changed, deleted or inserted anywhere
but after the last one (a hand edit, a restore, a deleted and re-created
session). Appending, the only change nia makes to a history, keeps the mark.

At every read the store asks for the rows after the last one it holds, with the
mark it holds them under; when the database's mark is still that one, only the
new rows come back (and are validated); otherwise every row does, and is
validated again. Every row a read returns is therefore either validated by it
or one the database proves unchanged since this process validated it.

Logs are bounded (sessions and characters) and evicted least recently used.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import TypeVar, overload

from nia_core.message import Message
from nia_core.sessions.store import HistoryEntry

T = TypeVar("T")

SESSIONS = 16
"""Sessions whose history a process keeps (a runner drives one at a time; a server a few)."""
CHARACTERS = 64 * 1024 * 1024
"""Message text kept in all, beyond which the least recently used logs are dropped."""


class Prefix(Sequence[T]):
    """The first ``length`` items of an append-only list: what one read saw, immutable for whoever holds it.

    A read hands out the history it holds without copying it (a copy per read
    would grow a turn with the session). It equals any tuple or list of the
    same items, and slices to a tuple.
    """

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[T], length: int) -> None:
        self._items = items
        self._length = length

    def __len__(self) -> int:
        return self._length

    @property
    def backing(self) -> list[T]:
        """The list this is a prefix of (appended to, never changed otherwise): what a reader may keep work by."""
        return self._items

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self._items[i] for i in range(*index.indices(self._length)))
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("history index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return islice(self._items, self._length)

    def __reversed__(self) -> Iterator[T]:
        items = self._items
        return (items[i] for i in range(self._length - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Prefix | tuple | list) or len(other) != self._length:
            return NotImplemented if not isinstance(other, Sequence) else False
        return all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


class Log:
    """One session's validated history (append-only lists) and the mark the database held it under."""

    __slots__ = ("characters", "entries", "mark", "messages", "seqs")

    def __init__(self, mark: str) -> None:
        self.mark = mark
        self.entries: list[HistoryEntry] = []
        self.messages: list[Message] = []
        self.seqs: list[int] = []
        self.characters = 0

    @property
    def last(self) -> int:
        """The ``seq`` of the last row held (0: none)."""
        return self.seqs[-1] if self.seqs else 0

    def add(self, entries: Iterable[HistoryEntry]) -> int:
        """Append the entries past the last one held (a concurrent read may have added some); the characters added."""
        added = 0
        for entry in entries:
            seq = entry.message.seq or 0
            if self.seqs and seq <= self.seqs[-1]:
                continue
            self.entries.append(entry)
            self.messages.append(entry.message)
            self.seqs.append(seq)
            added += len(entry.message.text)
        self.characters += added
        return added

    def upto(self, seq: int) -> tuple[Prefix[HistoryEntry], Prefix[Message]]:
        """The entries and messages up to ``seq`` (what one read saw, however far others have read since)."""
        end = bisect.bisect_right(self.seqs, seq)
        return Prefix(self.entries, end), Prefix(self.messages, end)


class Histories:
    """The logs of the sessions this process read last, thread-safe."""

    def __init__(self, sessions: int = SESSIONS, characters: int = CHARACTERS) -> None:
        self._logs: OrderedDict[str, Log] = OrderedDict()
        self._lock = threading.Lock()
        self._sessions = sessions
        self._characters = characters
        self._held = 0

    def known(self, session_id: str) -> tuple[int, str | None]:
        """``(last seq, mark)`` of the rows held for the session: what to ask the database for (``(0, None)``: none)."""
        with self._lock:
            log = self._logs.get(session_id)
            return (log.last, log.mark) if log is not None else (0, None)

    def held(self, session_id: str, mark: str | None) -> Log | None:
        """The session's log if it was kept under ``mark`` (the mark the database holds now), else ``None``."""
        with self._lock:
            log = self._logs.get(session_id)
            if log is None or mark is None or log.mark != mark:
                return None
            self._logs.move_to_end(session_id)
            return log

    def extend(
        self, session_id: str, mark: str | None, after: int, entries: Sequence[HistoryEntry]
    ) -> tuple[Prefix[HistoryEntry], Prefix[Message]]:
        """The whole history after a read that returned ``entries``, the rows after ``after`` (0: every row).

        With ``after`` > 0 the rows before it are the log's, which the caller
        found kept under ``mark``; a read of every row starts a new log. Under
        no mark (a row nia did not write), nothing is kept.
        """
        last = entries[-1].message.seq or 0 if entries else after
        with self._lock:
            log = self._logs.get(session_id)
            if after == 0 or log is None or log.mark != mark or log.last < after:
                if after:  # the log went away between the read and now: the caller reads every row again
                    raise LookupError(session_id)
                if log is not None:
                    self._held -= log.characters
                    del self._logs[session_id]
                log = Log(mark or "")
                if mark is None:
                    log.add(entries)
                    return log.upto(last)
                self._logs[session_id] = log
            self._held += log.add(entries)
            self._logs.move_to_end(session_id)
            result = log.upto(last)
            self._trim()
            return result

    def _trim(self) -> None:
        while self._logs and (len(self._logs) > self._sessions or self._held > self._characters):
            _, log = self._logs.popitem(last=False)
            self._held -= log.characters

    def forget(self, session_id: str) -> None:
        with self._lock:
            log = self._logs.pop(session_id, None)
            if log is not None:
                self._held -= log.characters

    def clear(self) -> None:
        with self._lock:
            self._logs.clear()
            self._held = 0
