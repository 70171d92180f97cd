"""``nia hook log``: what each hook told its agent, per attached session, newest last.

One JSON-lines file per attached session under ``$XDG_STATE_HOME/nia/hooks``
(``NIA_HOOK_LOG`` names another folder). A hook appends one line per
invocation; the file keeps the last :data:`KEEP` lines. The log is a record
for people; the store stays the truth about what was admitted. Every read and
write goes through nia's checked reader and writer for its own files
(:func:`nia_core.files.read_private` and the like): a link, a FIFO or another
user's file where a log should be is skipped, never followed or waited on.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nia_core.files import append_private, read_private, read_private_end, tighten_own_folder, write_private

KEEP = 200
"""Lines kept per session; older ones are dropped when the file reaches twice this."""


def log_dir() -> Path:
    configured = os.environ.get("NIA_HOOK_LOG")
    if configured:
        return Path(configured)
    state_home = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state_home) / "nia" / "hooks"


_TIGHTENED: set[Path] = set()


def _folder() -> Path:
    """:func:`log_dir`, once per process made writable by its owner only if an earlier nia left it group-writable."""
    folder = log_dir()
    if folder not in _TIGHTENED:
        _TIGHTENED.add(folder)
        tighten_own_folder(folder)
    return folder


@dataclass
class Entry:
    """One hook invocation."""

    host: str
    host_session: str
    session: str
    """nia's attached session id ('' when the hook failed before it had one)."""
    event: str
    source: str = ""
    outcome: str = ""
    """initialized, updated, unchanged, replaced, blocked, resent, failed..."""
    epoch: int | None = None
    printed: int = 0
    """Bytes printed for the model (UTF-8, the text inside the host's JSON)."""
    changed: list[str] = field(default_factory=list)
    """Source keys added, updated or removed, with their kind: ``~nia/date``."""
    warnings: list[str] = field(default_factory=list)
    full_text: str = ""
    """Where the whole text is when it was over the host's limit."""
    time: str = ""
    cwd: str = ""
    turn: str = ""
    """Which prompt the hook answered (a digest, :attr:`HostAdapter.turn`): two hooks of one prompt share it."""
    answered_by: str = ""
    """``resident`` (a resident context process) or ``in-process`` (this hook's own process)."""
    fallback: str = ""
    """Why a resident process did not answer, when one was asked (or ``NIA_RESIDENT=0``)."""

    def stamp(self) -> Entry:
        self.time = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return self


def append(entry: Entry) -> None:
    """Add ``entry`` to its session's log; a log that cannot be written is skipped (the hook must not fail)."""
    name = f"{entry.session or f'{entry.host}-unattached'}.jsonl"
    line = json.dumps(asdict(entry), ensure_ascii=False) + "\n"
    try:
        size = append_private(_folder(), name, line.encode("utf-8", "backslashreplace"))
        if size > 4096 * KEEP // 4:
            _trim(name)
    except OSError:
        return


def _trim(name: str) -> None:
    lines = read_private(_folder(), name).decode("utf-8", "replace").splitlines(keepends=True)
    if len(lines) <= 2 * KEEP:
        return
    write_private(_folder(), name, "".join(lines[-KEEP:]).encode("utf-8", "backslashreplace"))


@contextlib.contextmanager
def conversation_lock(session: str) -> Iterator[None]:
    """Hold the lock of one attached session: its hooks run one after another, each seeing the last one's log line.

    A host may run two of nia's hooks for one prompt at once (a user-level and
    a project-level install, Claude Code's parallel hooks): the second must
    find the first one's epoch and log entry, not race it. A lock nia cannot
    take (an unwritable or foreign state folder) is skipped: the hook must run.
    The watchdog ends a hook that waits past its deadline.
    """
    fd = None
    try:
        import fcntl

        from nia_core.files import open_private_folder

        folder = open_private_folder(_folder(), create=True)
        try:
            fd = os.open(f"{session}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
        finally:
            os.close(folder)
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        if fd is not None:
            os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            # Unlocked before it is closed: closing lets the lock go only once every copy of the descriptor is
            # closed, and a process a plugin forked (a helper outliving the hook) has one: the next hook of the
            # conversation would wait for that process until its deadline.
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def recent(entry: dict[str, Any] | None, seconds: float) -> bool:
    """Whether ``entry`` was logged less than ``seconds`` ago."""
    stamp = entry.get("time") if entry else None
    if not isinstance(stamp, str) or not stamp:
        return False
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return False
    return 0 <= (datetime.now(UTC) - then).total_seconds() < seconds


def last_entry(session: str) -> dict[str, Any] | None:
    """The newest entry of one session, or ``None``."""
    try:
        for tail in (4 * 1024, 64 * 1024):  # an entry is a few hundred bytes: read more only when it is not
            data = read_private_end(_folder(), f"{session}.jsonl", tail + 1)
            lines = data.decode("utf-8", errors="replace").splitlines()
            if len(data) > tail:
                lines = lines[1:]  # a line cut in the middle
            found = _newest(lines)
            if found is not None or len(data) <= tail:
                return found
    except OSError:
        return None
    return None


def _newest(lines: list[str]) -> dict[str, Any] | None:
    for line in reversed(lines):
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            return item
    return None


def read(last: int = 20, session: str | None = None) -> list[dict[str, Any]]:
    """The last ``last`` entries of each session (or of one, by id prefix), oldest session first."""
    folder = _folder()
    if not folder.is_dir():
        return []
    out: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.jsonl"), key=_modified):
        if session and not path.stem.startswith(session):
            continue
        try:
            text = read_private(folder, path.name).decode("utf-8", errors="replace")
        except OSError:  # not a log nia wrote (a link, a FIFO, another user's file) or gone meanwhile
            continue
        entries = []
        for line in text.splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict):
                entries.append(item)
        out.extend(entries[-last:])
    return out


def _modified(path: Path) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0
