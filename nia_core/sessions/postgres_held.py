"""What one process read and validated of a PostgreSQL session database, so a read asks only for what is new.

"Every read validates": a session's history is read once per process and then
only the rows after those held, under the session's history mark, which the
server renews on any change to rows already read (see histories.py and
``nia_view`` in postgres_schema.py). Texts (``blobs``), snapshots and a
baseline's segment list are stored under the sha256 of their content and never
change, so what was stored or read and checked once may be kept: a read tells
``nia_view`` which of them it holds, and a write skips texts the database has.
Bounded: texts up to 64 MiB of characters, 32 decoded baselines and snapshots,
the most recent ids.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from nia_core.context import Snapshot
from nia_core.sessions.histories import Histories
from nia_core.sessions.postgres_tx import _Call, _Tx
from nia_core.sessions.serialize import (
    baseline_from_texts,
    content_id,
    epoch_from_row,
    history_entry,
    manifest_ids,
    parse_segments,
    pending_message,
    session_from_row,
    snapshot_from_texts,
    snapshot_manifest,
)
from nia_core.sessions.store import ActiveEpoch, SessionRecord, SessionState, SessionView, tail_start
from nia_core.sessions.store_errors import CorruptRecord, UnknownSession

CACHE_CHARS = 64 * 1024 * 1024
"""Hash-checked texts kept in memory per process (content-addressed, so never stale)."""
KNOWN_LIMIT = 100_000
DECODED = 32
"""Baselines and snapshots this process keeps decoded (by content id, so never stale)."""


class NeedTexts(Exception):
    """Texts a view names are not in the process's cache: read them (they never change)."""


class Stale(Exception):
    """A read left out what this process held when it asked (evicted since): read again, asking for all of it."""


NO_STATE = SessionState(SessionRecord("", "", "", "", 0, None), None)
"""Stands for the state in a history read, which decodes none."""


class Asked(NamedTuple):
    """What a read asked ``nia_view`` for: see its definition in postgres_schema.py."""

    after: int | None
    mark: str | None
    known: list[str]
    segments_id: str | None = None
    """The segment list id among ``known``."""

    def params(self) -> tuple[int | None, str | None, list[str]]:
        """The three parameters of ``nia_view`` after the session id."""
        return self.after, self.mark, self.known


class Held:
    """What one store read and validated, held across its threads: histories, texts, baselines, snapshots."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._logs = Histories()
        """Histories read and validated, each under its history mark (see histories.py)."""
        self._texts: dict[str, str] = {}
        self._texts_size = 0
        self._known: set[str] = set()
        """Ids of texts and snapshots known to be stored (this process stored or read them)."""
        self._baselines: OrderedDict[str, tuple[str, str | tuple[str, ...]]] = OrderedDict()
        """``(baseline id, text)`` by the sha256 of a stored segment list it was validated for (one this process
        stored: its segments, joined at the first read)."""
        self._snapshots: OrderedDict[str, Snapshot] = OrderedDict()
        """Snapshots by id, every text hash-checked."""
        self._seen: OrderedDict[str, tuple[str, str]] = OrderedDict()
        """Per session, its active epoch's segment list id and snapshot id as last read (not resent)."""

    def committed(self, tx: _Tx) -> None:
        """Keep what a committed transaction wrote (ids known to exist) and read (hash-checked texts)."""
        with self._lock:
            if len(self._known) + len(tx.stored) > KNOWN_LIMIT:
                self._known.clear()
            self._known.update(tx.stored)
            for text_id, text in tx.read.items():
                if text_id not in self._texts and len(text) <= CACHE_CHARS:
                    if self._texts_size + len(text) > CACHE_CHARS:
                        self._texts.clear()
                        self._texts_size = 0
                    self._texts[text_id] = text
                    self._texts_size += len(text)

    def asking(self, session_id: str, *, tail: bool) -> Asked:
        """What to ask ``nia_view`` for: the rows after those held (under their mark), else all or the tail."""
        after, mark = self._logs.known(session_id)
        if mark is None:
            after = -1 if tail else 0
        return Asked(after, mark, *self.held_ids(session_id))

    def decode(
        self,
        tx: _Tx | None,
        session_id: str,
        raw: Any,
        asked: Asked,
        *,
        tail: bool = False,
        history_only: bool = False,
    ) -> SessionView:
        """Decode and validate ``nia_view``'s answer (with ``history_only``, its history alone: the state is
        then :data:`NO_STATE`)."""
        if raw is None:
            raise UnknownSession(f"no session {session_id!r} in {self.url}")
        try:
            session_row, epoch_row, manifest, pending_rows, mark, after, rows = raw
        except (TypeError, ValueError):
            raise CorruptRecord("its stored view does not read", session_id) from None
        state = NO_STATE
        if not history_only:
            session = session_from_row(session_row)
            epoch = None
            if session.epoch is not None:
                epoch = self.active_epoch(
                    tx, session_id, session.epoch, epoch_row, manifest, asked.known, asked.segments_id
                )
            pending = tuple(pending_message(session_id, *row) for row in pending_rows)
            state = SessionState(session, epoch, pending)
        if after is None:
            return SessionView(state, ())
        entries = [history_entry(session_id, *row) for row in rows]
        if asked.after is not None and asked.after < 0:  # the tail, as asked: nothing held, nothing kept
            return SessionView(state, tuple(entries), tuple(entry.message for entry in entries), tail=True)
        if not isinstance(mark, str) or not isinstance(after, int):
            mark, after = None, 0
        try:
            history, messages = self._logs.extend(session_id, mark, after, entries)
        except LookupError:
            raise Stale(session_id) from None
        if tail:
            start = tail_start(messages)
            return SessionView(state, history[start:], messages[start:], tail=True)
        return SessionView(state, history, messages)

    # -- texts --------------------------------------------------------------------------

    def is_known(self, text_id: str) -> bool:
        with self._lock:
            return text_id in self._known

    def put_texts(self, tx: _Tx, texts: Mapping[str, str]) -> None:
        """Store each text once; ids this process already stored or saw skip the round trip."""
        unknown = sorted(i for i in texts if not self.is_known(i))
        if not unknown:
            return
        present = {row[0] for row in tx.all("SELECT id FROM blobs WHERE id = ANY(%s)", (unknown,))}
        missing = [i for i in unknown if i not in present]  # sorted: concurrent writers lock ids in one order
        if missing:
            tx.send(
                "INSERT INTO blobs (id, data) SELECT * FROM unnest(%s::text[], %s::bytea[])"
                " ON CONFLICT (id) DO NOTHING",
                (missing, [texts[i].encode("utf-8") for i in missing]),
            )
        tx.stored.update(unknown)

    def get_texts(self, tx: _Tx | None, ids: Iterable[str]) -> dict[str, str]:
        """The texts ``ids`` from the cache, else from ``tx`` (with no ``tx``: raises :class:`NeedTexts`)."""
        wanted = set(ids)
        with self._lock:
            found = {i: self._texts[i] for i in wanted if i in self._texts}
        missing = sorted(wanted - found.keys())
        if missing:
            if tx is None:
                raise NeedTexts
            for text_id, data in tx.all("SELECT id, data FROM blobs WHERE id = ANY(%s)", (missing,)):
                found[text_id] = bytes(data).decode("utf-8", errors="replace")
        return found

    @staticmethod
    def remember(tx: _Tx | None, texts: Mapping[str, str]) -> None:
        """Cache texts already hash-checked (content-addressed rows never change)."""
        if tx is None:
            return  # they all came from the cache
        for text_id, text in texts.items():
            if content_id(text) == text_id:
                tx.read[text_id] = text

    def put_snapshot(self, tx: _Tx, snapshot: Snapshot, also: Mapping[str, str] | None = None) -> str:
        """Store ``snapshot`` (and the texts ``also``, in the same round trip) content-addressed."""
        manifest, texts = snapshot_manifest(snapshot)
        snapshot_id = content_id(manifest)
        if self.is_known(snapshot_id):
            if also:
                self.put_texts(tx, also)
            return snapshot_id
        self.put_texts(tx, {**texts, **(also or {})})
        tx.send(
            "INSERT INTO snapshots (id, manifest) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING", (snapshot_id, manifest)
        )
        tx.stored.add(snapshot_id)
        return snapshot_id

    def load_snapshot(self, tx: _Tx, session_id: str, snapshot_id: str) -> Snapshot:
        held = self.held_snapshot(snapshot_id)
        if held is not None:
            return held
        row = tx.one("SELECT manifest FROM snapshots WHERE id = %s", (snapshot_id,))
        if row is None:
            raise CorruptRecord(f"stored snapshot {snapshot_id[:12]} is missing", session_id)
        ids = manifest_ids(session_id, snapshot_id, row[0])
        texts = self.get_texts(tx, [i for pair in ids.values() for i in pair if i is not None])
        snapshot = snapshot_from_texts(session_id, snapshot_id, ids, texts)
        self.remember(tx, texts)
        self.hold_snapshot(snapshot_id, snapshot)
        return snapshot

    def held_ids(self, session_id: str) -> tuple[list[str], str | None]:
        """The active epoch's segment list id and snapshot id this process holds decoded (no need to send them),
        and the first alone."""
        with self._lock:
            segments_id, snapshot_id = self._seen.get(session_id, ("", ""))
            segments = segments_id if segments_id in self._baselines else None
            return [i for i in (segments, snapshot_id if snapshot_id in self._snapshots else None) if i], segments

    def active_epoch(
        self,
        tx: _Tx | None,
        session_id: str,
        number: int,
        row: Sequence[Any],
        manifest: str | None,
        known: Sequence[str],
        segments_id: str | None,
    ) -> ActiveEpoch:
        """The active epoch from its row; the baseline and snapshot from this process's cache when the read left
        them out: the snapshot's id is in the row (content-addressed: what is held for an id is what it stores),
        the segments' (``segments_id``, the sha256 of the stored list) the server checked. :class:`Stale` when
        what was left out is no longer held."""
        if row[0] is None:
            raise CorruptRecord(f"its active epoch {number} is missing", session_id)
        record, segments = epoch_from_row(session_id, row)
        if segments is None and segments_id is not None:  # left out: held here for the segments sent before
            held = self.held_baseline(segments_id)
            if held is None or held[0] != record.baseline_id:
                raise Stale(session_id)
            baseline = held[1]
        else:
            segments_id = content_id(segments) if isinstance(segments, str) else None
            held = self.held_baseline(segments_id) if segments_id is not None else None
            if held is not None and held[0] == record.baseline_id:
                baseline = held[1]
            else:
                segment_ids = parse_segments(session_id, segments, number)
                texts = self.get_texts(tx, segment_ids)
                baseline = baseline_from_texts(session_id, record.baseline_id, segment_ids, texts, number)
                self.remember(tx, texts)
                assert segments_id is not None  # parse_segments refused anything but text
                self.hold_baseline(segments_id, (record.baseline_id, baseline))
        snapshot = self.held_snapshot(record.snapshot_id)
        if snapshot is None:
            if manifest is None:
                if record.snapshot_id in known:
                    raise Stale(session_id)
                raise CorruptRecord(f"stored snapshot {record.snapshot_id[:12]} is missing", session_id)
            ids = manifest_ids(session_id, record.snapshot_id, manifest)
            texts = self.get_texts(tx, [i for pair in ids.values() for i in pair if i is not None])
            snapshot = snapshot_from_texts(session_id, record.snapshot_id, ids, texts)
            self.remember(tx, texts)
            self.hold_snapshot(record.snapshot_id, snapshot)
        with self._lock:
            self._seen[session_id] = (segments_id or "", record.snapshot_id)
            self._seen.move_to_end(session_id)
            while len(self._seen) > KNOWN_LIMIT:
                self._seen.popitem(last=False)
        return ActiveEpoch(record, baseline, snapshot)

    def held_baseline(self, segments_id: str) -> tuple[str, str] | None:
        """``(baseline id, text)`` validated for the stored segment list whose sha256 is ``segments_id``."""
        with self._lock:
            held = self._baselines.get(segments_id)
            if held is not None and isinstance(held[1], tuple):  # stored by this process: its segments, joined once
                held = self._baselines[segments_id] = (held[0], "".join(held[1]))
            if held is not None:
                self._baselines.move_to_end(segments_id)
            return held  # type: ignore[return-value]

    def held_snapshot(self, snapshot_id: str) -> Snapshot | None:
        with self._lock:
            held = self._snapshots.get(snapshot_id)
            if held is not None:
                self._snapshots.move_to_end(snapshot_id)
            return held

    def hold_baseline(self, segments_id: str, held: tuple[str, str | tuple[str, ...]]) -> None:
        """Keep ``(baseline id, text or segments)`` for the stored segment list whose sha256 is ``segments_id``."""
        self._hold(self._baselines, segments_id, held)

    def hold_snapshot(self, snapshot_id: str, snapshot: Snapshot) -> None:
        self._hold(self._snapshots, snapshot_id, snapshot)

    def forget(self, session_id: str) -> None:
        """Ask for ``session_id``'s epoch and history in full at the next read (they are no longer held)."""
        with self._lock:
            self._seen.pop(session_id, None)
        self._logs.forget(session_id)

    def _hold(self, cache: OrderedDict[str, Any], key: str, value: Any) -> None:
        with self._lock:
            cache[key] = value
            cache.move_to_end(key)
            while len(cache) > DECODED:
                cache.popitem(last=False)

    def snapshot_ahead(self, call: _Call, snapshot_id: str, manifest: str, texts: Mapping[str, str]) -> None:
        """Store a snapshot ahead of ``call``, in its transaction, with no answer awaited.

        Texts this process already stored or saw are not sent again; the rest
        go with ``ON CONFLICT DO NOTHING`` (sorted: concurrent writers lock ids
        in one order). What is sent is cached once the write commits.
        """
        call.read.update(texts)  # the view the write answers with names them
        if self.is_known(snapshot_id):
            return
        unknown = sorted(i for i in texts if not self.is_known(i))
        if unknown:
            call.before.append(
                (
                    "INSERT INTO blobs (id, data) SELECT * FROM unnest(%s::text[], %s::bytea[])"
                    " ON CONFLICT (id) DO NOTHING",
                    (unknown, [texts[i].encode("utf-8") for i in unknown]),
                )
            )
        call.before.append(
            (
                "INSERT INTO snapshots (id, manifest) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING",
                (snapshot_id, manifest),
            )
        )
        call.stored.update(unknown)
        call.stored.add(snapshot_id)
