"""How session data becomes stored text and back, the same for every backend.

Content addressing lives here too: a stored text's id is the sha256 of its
UTF-8 bytes, so equal values (the same 1 MB of docs in a thousand sessions)
share one row, and a read can tell a damaged row from a good one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from nia_core.context import Snapshot, SnapshotEntry, canonical_json
from nia_core.context.keys import is_valid_key
from nia_core.message import MESSAGE_KINDS, Message, ToolCall, message_content
from nia_core.sessions.replies import decode_reply, with_record
from nia_core.sessions.store import (
    EpochRecord,
    HistoryEntry,
    PendingCompaction,
    SessionRecord,
)
from nia_core.sessions.store_errors import CorruptRecord, RefusedInput, UnknownSession


def content_id(text: str) -> str:
    """The content address of ``text``: hex sha256 of its UTF-8 bytes."""
    if len(text) <= _HASH_CHUNK:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    return joined_id((text,))


_HASH_CHUNK = 256 * 1024


def joined_id(texts: Iterable[str]) -> str:
    """:func:`content_id` of the texts joined, without joining them or encoding a large text whole.

    A baseline of megabytes is hashed piece by piece: its UTF-8 bytes are never
    all in memory beside the text (UTF-8 encodes each character on its own, so
    the pieces' bytes are the whole's).
    """
    digest = hashlib.sha256()
    for text in texts:
        for start in range(0, len(text), _HASH_CHUNK):
            digest.update(text[start : start + _HASH_CHUNK].encode("utf-8"))
    return digest.hexdigest()


# -- messages ----------------------------------------------------------------------------


def message_body(message: Message) -> str:
    """The canonical JSON of a message's content (kind, seq and epoch are columns of their own)."""
    return canonical_json(message_content(message))


def refuse_unsendable(session_id: str, message: Message) -> None:
    """Input no provider could ever be sent is never stored: empty user text, text that is not UTF-8."""
    if message.kind == "user" and not message.text.strip():
        raise RefusedInput(session_id, "the input is empty (only whitespace)")
    try:
        message.text.encode("utf-8")
        message_body(message).encode("utf-8")
    except UnicodeEncodeError as exc:
        where = f" at offset {exc.start}" if exc.object is message.text else ""
        raise RefusedInput(session_id, f"the input is not valid UTF-8 text ({exc.reason}{where})") from None


def message_from_row(session_id: str, where: str, kind: str, body: str, seq: int | None, epoch: int | None) -> Message:
    """Rebuild a stored message, or raise :class:`CorruptRecord` naming the session and ``where``."""
    if kind not in MESSAGE_KINDS:
        raise CorruptRecord(
            f"{where} has unknown kind {kind!r} (known: {', '.join(MESSAGE_KINDS)}); was it written by a newer nia?",
            session_id,
        )
    try:
        data = json.loads(body)
        if not isinstance(data, dict) or not isinstance(data.get("text", ""), str):
            raise ValueError("not an object with a text")
        calls = tuple(
            ToolCall(str(c["id"]), str(c["name"]), dict(c.get("arguments") or {})) for c in data.get("tool_calls", [])
        )
        call_id = data.get("tool_call_id")
        return Message(
            kind,  # type: ignore[arg-type]  # checked against MESSAGE_KINDS above
            text=data.get("text", ""),
            tool_calls=calls,
            tool_call_id=None if call_id is None else str(call_id),
            is_error=bool(data.get("is_error", False)),
            seq=seq,
            epoch=epoch,
        )
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise CorruptRecord(f"{where} has a damaged body ({exc})", session_id) from None


# -- snapshots ---------------------------------------------------------------------------


def snapshot_manifest(snapshot: Snapshot, id_of: Callable[[str], str] = content_id) -> tuple[str, dict[str, str]]:
    """``(manifest, texts)``: the manifest maps each key to ``[value id, removal id or null]``."""
    texts: dict[str, str] = {}
    manifest: dict[str, list[str | None]] = {}
    for key, entry in snapshot.items():
        value_id = id_of(entry.value)
        texts[value_id] = entry.value
        removal_id = None
        if entry.removal is not None:
            removal_id = id_of(entry.removal)
            texts[removal_id] = entry.removal
        manifest[key] = [value_id, removal_id]
    return canonical_json(manifest), texts


def manifest_ids(session_id: str, snapshot_id: str, manifest: str) -> dict[str, tuple[str, str | None]]:
    """Parse and hash-check a stored manifest."""
    text_value(session_id, f"stored snapshot {snapshot_id[:12]}", manifest)
    if content_id(manifest) != snapshot_id:
        raise CorruptRecord(f"stored snapshot {snapshot_id[:12]} does not match its hash", session_id)
    try:
        data = json.loads(manifest)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        out: dict[str, tuple[str, str | None]] = {}
        for key, ids in data.items():
            value_id, removal_id = ids
            if not isinstance(value_id, str) or not (removal_id is None or isinstance(removal_id, str)):
                raise ValueError(f"entry {key!r} is malformed")
            out[key] = (value_id, removal_id)
        return out
    except (TypeError, ValueError) as exc:
        raise CorruptRecord(f"stored snapshot {snapshot_id[:12]} is damaged ({exc})", session_id) from None


def snapshot_from_texts(
    session_id: str,
    snapshot_id: str,
    ids: Mapping[str, tuple[str, str | None]],
    texts: Mapping[str, str],
    trusted: Container[str] = (),
) -> Snapshot:
    """Assemble a snapshot from hash-checked texts; a missing or altered text names its key.

    Texts whose id is in ``trusted`` were checked before and are not hashed again.
    """
    entries: dict[str, SnapshotEntry] = {}
    for key, (value_id, removal_id) in ids.items():
        if not is_valid_key(key):
            raise CorruptRecord(
                f"stored snapshot {snapshot_id[:12]} is corrupt: {key!r} is not a valid source key", session_id
            )
        what = f"the value of {key!r} in snapshot {snapshot_id[:12]}"
        value = checked_text(session_id, texts, value_id, what, trusted)
        if value_id not in trusted:
            try:
                json.loads(value)
            except ValueError:
                raise CorruptRecord(f"stored snapshot is corrupt: {what} is not JSON", session_id) from None
        removal = None
        if removal_id is not None:
            what = f"the removal text of {key!r} in snapshot {snapshot_id[:12]}"
            removal = checked_text(session_id, texts, removal_id, what, trusted)
            if not removal.strip():
                raise CorruptRecord(f"stored snapshot is corrupt: {what} is empty", session_id)
        entries[key] = SnapshotEntry(value, removal)
    return Snapshot(entries)


def checked_text(
    session_id: str, texts: Mapping[str, str], text_id: str, what: str, trusted: Container[str] = ()
) -> str:
    text = texts.get(text_id)
    if text is not None and not isinstance(text, str):
        raise CorruptRecord(
            f"stored snapshot is corrupt: {what} is stored as {type(text).__name__}, not text", session_id
        )
    if text is None:
        raise CorruptRecord(f"stored snapshot is corrupt: {what} is missing", session_id)
    if text_id not in trusted and content_id(text) != text_id:
        raise CorruptRecord(f"stored snapshot is corrupt: {what} does not match its hash", session_id)
    return text


# -- baselines ---------------------------------------------------------------------------


def baseline_from_texts(
    session_id: str,
    baseline_id: str,
    segment_ids: list[str],
    texts: Mapping[str, str],
    epoch: int,
    trusted: Container[str] = (),
) -> str:
    """Join a baseline's stored segments and check the whole against its hash."""
    parts = []
    for index, segment_id in enumerate(segment_ids):
        text = texts.get(segment_id)
        if text is not None and not isinstance(text, str):
            state = f"is stored as {type(text).__name__}, not text"
            raise CorruptRecord(f"the baseline of epoch {epoch} is corrupt: part {index + 1} {state}", session_id)
        if text is None or (segment_id not in trusted and content_id(text) != segment_id):
            state = "missing" if text is None else "does not match its hash"
            raise CorruptRecord(f"the baseline of epoch {epoch} is corrupt: part {index + 1} {state}", session_id)
        parts.append(text)
    if joined_id(parts) != baseline_id:
        raise CorruptRecord(f"the baseline of epoch {epoch} does not match its hash", session_id)
    return "".join(parts)


def parse_segments(session_id: str, raw: Any, epoch: int) -> list[str]:
    text_value(session_id, f"the baseline of epoch {epoch}", raw)
    try:
        ids = json.loads(raw)
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValueError("not a list of ids")
        return ids
    except ValueError as exc:
        raise CorruptRecord(f"the baseline of epoch {epoch} is damaged ({exc})", session_id) from None


# -- pending compaction ------------------------------------------------------------------


def compaction_json(compaction: PendingCompaction) -> str:
    return canonical_json({"summary": compaction.summary, "covers_upto": compaction.covers_upto})


def compaction_from_json(session_id: str, raw: str | None) -> PendingCompaction | None:
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        return PendingCompaction(str(data["summary"]), int(data["covers_upto"]))
    except (TypeError, ValueError, KeyError) as exc:
        raise CorruptRecord(f"the pending compaction is damaged ({exc})", session_id) from None


# -- typed columns -------------------------------------------------------------------------
# A hand-edited database can hold anything in any column (SQLite keeps 'abc' in an INTEGER
# column and a BLOB where text belongs). Every value read is checked here, so a damaged row
# is a CorruptRecord naming its session and column, never a ValueError from deep inside.


def _kind_of(value: Any) -> str:
    return "NULL" if value is None else type(value).__name__


def whole_number(session_id: str, where: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` if it is a whole number (``None`` too when ``optional``), else :class:`CorruptRecord`."""
    if value is None and optional:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise CorruptRecord(
        f"{where} is damaged (expected a whole number, found {_kind_of(value)} {value!r:.40})", session_id
    )


def text_value(session_id: str, where: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` if it is text (``None`` too when ``optional``), else :class:`CorruptRecord`."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        return value
    raise CorruptRecord(f"{where} is damaged (expected text, found {_kind_of(value)} {value!r:.40})", session_id)


def row_session_id(row: Sequence[Any]) -> str:
    """The id of a ``sessions`` row as text, whatever is stored there (to name a damaged row)."""
    value = row[0]
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def session_from_row(row: Sequence[Any]) -> SessionRecord:
    """A ``sessions`` row (id, location, model, created, revision, epoch, history_from,
    summary_seq, compaction), the same in every backend's column order."""
    session_id = row_session_id(row)
    text_value(session_id, "its id", row[0])
    return SessionRecord(
        id=session_id,
        location=text_value(session_id, "its location", row[1]),
        model=text_value(session_id, "its model", row[2]),
        created=text_value(session_id, "its creation time", row[3]),
        revision=whole_number(session_id, "its revision", row[4]),
        epoch=whole_number(session_id, "its active epoch number", row[5], optional=True),
        history_from=whole_number(session_id, "its history_from", row[6]),
        summary_seq=whole_number(session_id, "its summary_seq", row[7], optional=True),
        compaction=compaction_from_json(
            session_id, text_value(session_id, "its pending compaction", row[8], optional=True)
        ),
    )


def epoch_record(
    session_id: str,
    *,
    number: Any,
    baseline_id: Any,
    snapshot_id: Any,
    initial_snapshot_id: Any,
    start_seq: Any,
    model: Any,
    location: Any,
    reason: Any,
    created: Any,
) -> EpochRecord:
    """An ``epochs`` row, every column checked."""
    where = f"epoch {number!r:.20}"
    return EpochRecord(
        number=whole_number(session_id, "an epoch number", number),
        baseline_id=text_value(session_id, f"{where}: its baseline id", baseline_id),
        snapshot_id=text_value(session_id, f"{where}: its snapshot id", snapshot_id),
        initial_snapshot_id=text_value(session_id, f"{where}: its initial snapshot id", initial_snapshot_id),
        start_seq=whole_number(session_id, f"{where}: its start_seq", start_seq),
        model=text_value(session_id, f"{where}: its model", model),
        location=text_value(session_id, f"{where}: its location", location),
        reason=text_value(session_id, f"{where}: its reason", reason),
        created=text_value(session_id, f"{where}: its creation time", created),
    )


def history_entry(
    session_id: str, seq: Any, epoch: Any, kind: Any, body: Any, snapshot_id: Any, created: Any, reply: Any = None
) -> HistoryEntry:
    """A ``messages`` row, every column checked (``reply``: the record of schema 2, see replies.py)."""
    seq = whole_number(session_id, "a message number (seq)", seq)
    where = f"message #{seq}"
    message = message_from_row(
        session_id,
        where,
        text_value(session_id, f"{where}: its kind", kind),
        text_value(session_id, f"{where}: its body", body),
        seq,
        whole_number(session_id, f"{where}: its epoch", epoch, optional=True),
    )
    record = decode_reply(session_id, where, reply)
    return HistoryEntry(
        with_record(message, record),
        text_value(session_id, f"{where}: its creation time", created),
        text_value(session_id, f"{where}: its snapshot id", snapshot_id, optional=True),
        record,
    )


def pending_message(session_id: str, pending_id: Any, kind: Any, body: Any) -> Message:
    """A ``pending`` row, every column checked."""
    where = f"pending input #{pending_id!r:.20}"
    return message_from_row(
        session_id,
        where,
        text_value(session_id, f"{where}: its kind", kind),
        text_value(session_id, f"{where}: its body", body),
        None,
        None,
    )


def now() -> str:
    """A row's creation time, the same text in both stores."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


EPOCH_COLUMNS = (
    "number",
    "baseline_id",
    "snapshot_id",
    "initial_snapshot_id",
    "start_seq",
    "model",
    "location",
    "reason",
    "created",
    "segments",
)
"""The ``epochs`` columns both stores select, in this order; a row is read back by these names."""


def epoch_columns(alias: str | None = None) -> str:
    """``EPOCH_COLUMNS`` for a ``SELECT`` (``e.number, e.baseline_id, …`` with an alias)."""
    return ", ".join(f"{alias}.{name}" if alias else name for name in EPOCH_COLUMNS)


def epoch_from_row(session_id: str, row: Sequence[Any]) -> tuple[EpochRecord, Any]:
    """An epoch row selected with :func:`epoch_columns`, checked; and its raw ``segments`` column."""
    values = dict(zip(EPOCH_COLUMNS, row, strict=True))
    segments = values.pop("segments")
    return epoch_record(session_id, **values), segments


def after_prefix(prefix: str) -> str | None:
    """The least text above every text that starts with ``prefix`` (``None``: there is none), in code point order.

    Code point order is UTF-8 byte order, so an index over the ids (SQLite's,
    PostgreSQL's ``COLLATE "C"`` one) finds every id a prefix names with
    ``prefix <= id < after_prefix(prefix)``, without reading the others.
    """
    for index in range(len(prefix) - 1, -1, -1):
        code = ord(prefix[index]) + 1
        if code <= 0x10FFFF:
            return prefix[:index] + chr(0xE000 if 0xD800 <= code <= 0xDFFF else code)
    return None


def pick_session(prefix: str, ids: Sequence[str], where: str) -> str:
    """The one session ``prefix`` names among ``ids`` (up to 6 ids starting with it, sorted), else a clear error."""
    if prefix in ids:
        return prefix
    if not ids or not prefix:
        raise UnknownSession(f"no session {prefix!r} in {where} (see: nia session list)")
    if len(ids) > 1:
        raise UnknownSession(f"session id {prefix!r} is ambiguous: it starts {', '.join(ids)}")
    return str(ids[0])
