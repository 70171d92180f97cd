"""Reading a host's transcript (JSON lines): what it recorded as hook output, and which host version wrote it.

Only what the hook needs: the texts of the lines the host writes for hook
output (each adapter knows their shape, :attr:`HostAdapter.hook_outputs`),
and the version field of the first lines. A transcript that cannot be read
says nothing, and nothing is concluded from it.

A compaction replaces the conversation the model sees with a summary, but the
host's transcript keeps the earlier lines: given the host's compaction record,
only the last one and what follows it count as seen (the record itself may
keep the newest turns: Gemini CLI's history snapshot, Qwen Code's compressed history). The record is a member of a
line's top-level object (``"type":"compacted"``): the same text nested deeper
(a tool's structured result, which the repository can write) is no record,
so a repository cannot make nia believe its context was compacted away.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

RecordCheck = Callable[[Mapping[str, Any]], bool]
"""Whether a transcript line's object (a compaction record candidate) is the record."""

HEAD_BYTES = 64 * 1024
"""How much of a transcript's start is read to find the host's version."""


TAIL_BYTES = 1024 * 1024
"""Searched first: the newest admitted text is nearly always near the end of a long transcript."""

WHOLE_BYTES = 64 * 1024 * 1024
"""The most of a transcript's end ever searched: a path to a huge or endless file costs a bounded read."""


def _open_regular(path: str) -> BinaryIO | None:
    """``path`` opened for reading if it is a regular file, else ``None``.

    The path comes from the hook's stdin: a FIFO would block ``open`` (hence
    ``O_NONBLOCK``), and ``/dev/zero`` or a socket would never end a read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        return os.fdopen(fd, "rb")
    except OSError:
        os.close(fd)
        return None


class Transcript:
    """A host transcript, read from its end first and whole only when the end does not answer."""

    def __init__(
        self, path: str, since: str = "", ancestors: tuple[str, ...] = (), is_record: RecordCheck | None = None
    ) -> None:
        self.path = path
        self.ancestors = ancestors
        """Transcripts this one continues (a fork's parent, oldest first) that the host does not copy into it."""
        self._since = re.compile(since) if since else None
        self._record = _members(since)
        self._check = is_record
        self._tail: str | None = None
        self._whole: str | None = None
        self._size = 0
        self.compacted = False
        """Whether a compaction record was found (the text kept is what follows the last one)."""

    @classmethod
    def open(
        cls, path: str | None, since: str = "", ancestors: tuple[str, ...] = (), is_record: RecordCheck | None = None
    ) -> Transcript | None:
        """The transcript at ``path``, or ``None`` when there is none to read (yet).

        ``since``: the host's compaction record (a regular expression); only
        what follows its last match is searched. ``ancestors``: transcripts the
        conversation continues (oldest first), read before it when the end of
        ``path`` does not answer (each at most :data:`WHOLE_BYTES` from its end).
        ``is_record``: a further check of a candidate line's top-level object,
        for a record whose members ``since`` cannot name (a flag nested in it).
        """
        if not path:
            return None
        found = cls(path, since, ancestors, is_record)
        handle = _open_regular(path)
        if handle is None:
            return None
        try:
            with handle:
                handle.seek(0, 2)
                found._size = handle.tell()
                handle.seek(max(0, found._size - TAIL_BYTES))
                tail = handle.read(TAIL_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return None
        try:
            found._tail = found._after_compaction(tail, cut=found._size > TAIL_BYTES)
        except _Undecided:  # a record candidate on the tail's cut first line: the wider read decides
            found._tail = tail
            found._tail = found._all()
            return found
        if found.compacted or (found._size <= TAIL_BYTES and not ancestors):
            found._whole = found._tail  # the whole file, or all of it the model still sees
        return found

    @classmethod
    def of_lines(cls, text: str, since: str = "", is_record: RecordCheck | None = None) -> Transcript:
        """A transcript made of JSON lines nia built from a host's store (OpenCode's database), all of it read."""
        found = cls("", since, (), is_record)
        found._size = len(text)
        found._tail = found._whole = found._after_compaction(text)
        return found

    def _after_compaction(self, text: str, *, cut: bool = False) -> str:
        """``text`` from the last compaction record's line on; ``cut``: its first line may be the end of a longer one.

        The record's own line stays: a compaction that keeps part of the
        conversation (Gemini CLI's history snapshot) records it there.

        A candidate on a cut first line cannot be checked: :class:`_Undecided`
        (from the tail), or taken as a record (the widest read: as before).
        """
        if self._since is None:
            return text
        last = None  # the start of the line of the last record found (a record may keep hook outputs)
        line_end = -1  # the end of the line the previous candidate was on (each line is parsed once)
        record = undecided = False
        start = 0
        for match in self._since.finditer(text):
            if match.start() >= line_end:
                start = text.rfind("\n", 0, match.start()) + 1
                found = text.find("\n", match.end())
                line_end = found if found >= 0 else len(text)
                if start == 0 and cut:  # cannot be checked: the tail asks the widest read, which takes it
                    record = (self._record is None and self._check is None) or self._whole_read
                    undecided = not record
                else:
                    record = self._is_record(text[start:line_end])
            if record:
                last = start
        if last is None and undecided:
            raise _Undecided
        if last is None:
            return text
        self.compacted = True
        return text[last:]

    def _is_record(self, line: str) -> bool:
        """Whether ``line`` is a JSON object holding the record's members at its top level."""
        if self._record is None and self._check is None:
            return True
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            return False
        if not isinstance(value, dict):
            return False
        members = self._record or {}
        return all(value.get(k, _ABSENT) == v for k, v in members.items()) and (
            self._check is None or self._check(value)
        )

    def is_compacted(self) -> bool:
        """Whether the host compacted the conversation (the whole transcript is read when its end does not say)."""
        if not self.compacted and self._since is not None:
            self._all()
        return self.compacted

    _whole_read = False

    def _all(self) -> str:
        if self._whole is None:
            parts: list[str] = []
            cut = False
            for index, path in enumerate((*self.ancestors, self.path)):
                handle = _open_regular(path)
                try:
                    if handle is None:
                        raise OSError(path)
                    with handle:
                        size = handle.seek(0, 2)
                        handle.seek(max(0, size - WHOLE_BYTES))
                        self._whole_read = True
                        parts.append(handle.read(WHOLE_BYTES).decode("utf-8", errors="replace"))
                        cut = cut or (index == 0 and size > WHOLE_BYTES)
                except OSError:
                    if path == self.path:
                        self._whole = self._tail or ""
                        return self._whole
            text = "\n".join(part if part.endswith("\n") or not part else part + "\n" for part in parts)
            self._whole = self._after_compaction(text, cut=cut)
        return self._whole

    @property
    def whole(self) -> bool:
        """Whether the end already read is all there is to read (the file, or all of it since a compaction)."""
        return self._whole is not None and self._whole is self._tail

    def outputs(self, marker: str, extract: Callable[[Mapping[str, Any]], list[str]], *, whole: bool) -> list[str]:
        """The hook outputs the host recorded (since its last compaction), oldest first.

        Only lines holding ``marker`` are parsed, and only as a JSON object
        whose shape ``extract`` checks at the top level: a tool result or a
        file's content that quotes the marker is another kind of line.
        ``whole=False`` reads the transcript's end only (:data:`TAIL_BYTES`).
        """
        text = self._all() if whole else (self._tail or "")
        found: list[str] = []
        for line in text.splitlines():
            if marker not in line:
                continue
            try:
                value = json.loads(line)
            except (ValueError, RecursionError):  # a cut first line, or not the host's own record
                continue
            if isinstance(value, dict):
                found.extend(extract(value))
        return found


class _Undecided(Exception):
    """A compaction record candidate could not be checked in the text read."""


_ABSENT = object()


def _members(record: str) -> dict[str, object] | None:
    """The top-level members a compaction record names (``"type":"compacted"``), ``None`` if it names none."""
    try:
        value = json.loads("{" + record + "}") if record else None
    except ValueError:
        return None
    return value if isinstance(value, dict) and value else None


def version_field(path: str | None, field: str) -> tuple[int, ...] | None:
    """The first ``"FIELD":"1.2.3"`` in the transcript's first lines, as a version tuple."""
    if not path:
        return None
    handle = _open_regular(path)
    if handle is None:
        return None
    try:
        with handle:
            head = handle.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r'"' + re.escape(field) + r'"\s*:\s*"(\d+(?:\.\d+)+)"', head)
    if match is None:
        return None
    return tuple(int(p) for p in match.group(1).split("."))


def first_line(path: str | None) -> str:
    """The transcript's first line (at most :data:`HEAD_BYTES`), '' when there is none to read."""
    if not path:
        return ""
    handle = _open_regular(path)
    if handle is None:
        return ""
    try:
        with handle:
            head = handle.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""
    return head.split("\n", 1)[0]
