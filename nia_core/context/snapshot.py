"""The Context Snapshot: what was last admitted for each source key.

Model-hidden state: per key, the canonical JSON of the admitted value and, for
removable sources, the removal text rendered when that value was admitted (so a
contributor that has since vanished can still say goodbye in its own words).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from nia_core.context.codec import canonical_json
from nia_core.context.keys import is_valid_key
from nia_core.errors import NiaError


class CorruptSnapshot(NiaError):
    """Stored snapshot data that is not a snapshot."""


def entry_problem(key: object, value: object, removal: object) -> str | None:
    """Why ``(key, value, removal)`` cannot be a snapshot entry, or ``None``.

    The one rule every decoder applies (the engine's and both stores'), so a
    hand-edited or damaged snapshot is refused when read instead of being
    taken for a source that is gone (an invalid key) or for an empty
    mid-conversation message (an empty removal text).
    """
    if not is_valid_key(key):
        return f"snapshot key {key!r} is not a valid source key (owner/name)"
    if not isinstance(value, str):
        return f"snapshot entry {key!r} has no JSON value"
    try:
        json.loads(value)
    except ValueError:
        return f"snapshot entry {key!r} has a value that is not JSON"
    if removal is not None and not isinstance(removal, str):
        return f"snapshot entry {key!r} has a removal that is not text"
    if removal is not None and not removal.strip():
        return f"snapshot entry {key!r} has an empty removal text"
    return None


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    value: str
    """Canonical JSON of the codec-encoded value."""
    removal: str | None = None
    """Removal text rendered at admission, for removable sources."""


class Snapshot(Mapping[str, SnapshotEntry]):
    """An immutable map from source key to :class:`SnapshotEntry`."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[str, SnapshotEntry] | None = None) -> None:
        self._entries: dict[str, SnapshotEntry] = dict(sorted((entries or {}).items()))

    def __getitem__(self, key: str) -> SnapshotEntry:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Snapshot):
            return self._entries == other._entries
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._entries.items()))

    def __repr__(self) -> str:
        return f"Snapshot({sorted(self._entries)})"

    @property
    def entries(self) -> Mapping[str, SnapshotEntry]:
        """The entries as a read-only view of a plain dict (fast lookups in hot loops)."""
        return MappingProxyType(self._entries)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain data for storage: ``{key: {"value": json, "removal": text|None}}``."""
        return {k: {"value": e.value, "removal": e.removal} for k, e in self._entries.items()}

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any) -> Snapshot:
        if not isinstance(data, dict):
            raise CorruptSnapshot(f"snapshot must be an object, got {type(data).__name__}")
        entries: dict[str, SnapshotEntry] = {}
        for key, entry in data.items():
            if not isinstance(entry, dict):
                raise CorruptSnapshot(f"snapshot entry {key!r} is not an object")
            value, removal = entry.get("value"), entry.get("removal")
            problem = entry_problem(key, value, removal)
            if problem is not None:
                raise CorruptSnapshot(problem)
            entries[key] = SnapshotEntry(str(value), removal)
        return cls(entries)

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise CorruptSnapshot(f"snapshot is not valid JSON: {exc}") from None
        return cls.from_dict(data)


EMPTY_SNAPSHOT = Snapshot()
