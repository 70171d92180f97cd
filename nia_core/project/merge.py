"""The context-merging rules for one category of context entries.

Entries are taken in order; a directory expands inline to its files (each
folder's files sorted by name, then its subfolders sorted by name, depth
first), at most :data:`MAX_FILES_PER_DIRECTORY` files per directory entry.
Files are deduplicated by canonical path, first occurrence kept. Oversized,
binary and non-regular files are skipped with a note, never an error. Path
problems (missing, escaping the repository, symlink loops) raise in strict
mode (the first load, so the user sees them) and become warnings otherwise
(later boundaries, where a vanished file is a removal, not a failure).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from nia_core.files import Signature, StatCache, signature
from nia_core.project.binary import SNIFF_BYTES, binary_content, binary_extension
from nia_core.project.config import ContextEntry
from nia_core.project.paths import (
    ContextOutsideRepository,
    ContextPathError,
    canonical,
    check_kind,
    inside,
    relative,
)

MAX_FILES_PER_DIRECTORY = 100
MAX_FILE_BYTES = 1024 * 1024
EXCLUDED_DIRECTORIES = frozenset(
    {".git", ".nia", "node_modules", ".venv", "__pycache__", ".mypy_cache", "target", "dist", "build"}
)
OVERSIZE = "exceeds 1MB limit"
BINARY = "binary"

FILES = StatCache()
"""File contents shared by classification and the per-file loaders: one read per change."""


@dataclass(frozen=True)
class ContextFile:
    """One file that made it into a category, with where it came from."""

    original_path: str
    """The path as the entry wrote it (for an expanded file: the folder as written, then the file's name)."""
    canonical: str
    """Absolute, ``..`` resolved, symlinks followed."""
    path: str
    """The canonical path relative to the repository root: the file's label in the prompt."""
    origin: str
    description: str
    size: int
    directory: str | None = None
    """The folder entry it was expanded from, as written, with a trailing ``/``."""


@dataclass(frozen=True)
class Skip:
    """A file left out, and why."""

    original_path: str
    canonical: str | None
    origin: str
    reason: str
    size: int | None = None

    def note(self) -> str:
        return f"Skipped: {self.original_path} ({self.reason})"


@dataclass(frozen=True)
class Merged:
    files: tuple[ContextFile, ...] = ()
    skipped: tuple[Skip, ...] = ()
    warnings: tuple[str, ...] = ()


_kinds: dict[str, tuple[Signature, str | None]] = {}
_kinds_lock = threading.Lock()


def classify(real: str, info: os.stat_result) -> str | None:
    """``None`` for a text file to include, else why it is skipped.

    Cached by ``stat`` signature: an unchanged file is not read again.
    """
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > MAX_FILE_BYTES:
        return OVERSIZE
    if binary_extension(real):
        return BINARY
    sig = signature(info)
    cached = _kinds.get(real)
    if cached is not None and cached[0] == sig:
        return cached[1]
    try:
        data = FILES.read_bytes(real)
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    reason: str | None = None
    if len(data) > MAX_FILE_BYTES:
        reason = OVERSIZE
    elif binary_content(data[:SNIFF_BYTES]):
        reason = BINARY
    if reason is not None:
        FILES.forget(real)  # only text is worth keeping in memory
    with _kinds_lock:
        _kinds[real] = (sig, reason)
    return reason


class _Merger:
    def __init__(self, root: Path, strict: bool, limit: int) -> None:
        self.root = root
        self.base = str(root)
        self.strict = strict
        self.limit = limit
        self.files: list[ContextFile] = []
        self.skipped: list[Skip] = []
        self.warnings: list[str] = []
        self.seen: dict[str, str] = {}

    def refuse(self, error: ContextPathError) -> None:
        if self.strict:
            raise error
        self.warnings.append(str(error))

    def take(self, entry: ContextEntry, shown: str, real: str, info: os.stat_result, folder: str | None) -> bool:
        """Add one file unless it is a duplicate or skipped; whether it was added."""
        first = self.seen.get(real)
        if first is not None:
            self.skipped.append(Skip(shown, real, entry.origin, f"duplicate of {first}", info.st_size))
            return False
        reason = classify(real, info)
        if reason is not None:
            self.skipped.append(Skip(shown, real, entry.origin, reason, info.st_size))
            return False
        self.seen[real] = entry.origin if folder is None else f"{entry.origin} ({shown})"
        description = entry.description if folder is None else f"{entry.description} (from directory)".strip()
        path = relative(real, self.base)
        self.files.append(ContextFile(shown, real, path, entry.origin, description, info.st_size, folder))
        return True

    def entry(self, entry: ContextEntry, flag: bool) -> None:
        try:
            raw = os.path.join(entry.base, entry.path) if entry.base else entry.path
            real = canonical(self.root, raw, entry.origin, kind=entry.kind, shown=entry.path)
            info = check_kind(real, entry.kind, entry.path, entry.origin, flag=flag)
        except ContextPathError as error:
            self.refuse(error)
            return
        if entry.kind == "file":
            self.take(entry, entry.path, real, info, None)
            return
        folder = entry.path.rstrip("/") + "/" if entry.path.rstrip("/") else entry.path
        count = 0
        for shown, file_real, file_info in self.walk(entry, real, folder):
            if count >= self.limit and file_real not in self.seen and classify(file_real, file_info) is None:
                self.warnings.append(
                    f"Maximum file limit ({self.limit}) reached for directory {folder}\n  Skipped remaining files"
                )
                return
            if self.take(entry, shown, file_real, file_info, folder):
                count += 1

    def walk(self, entry: ContextEntry, top: str, shown_top: str) -> Iterator[tuple[str, str, os.stat_result]]:
        """``(shown path, canonical path, stat)`` of each file below ``top``, in the documented order."""
        visited = {top}

        def visit(real_dir: str, shown_dir: str) -> Iterator[tuple[str, str, os.stat_result]]:
            try:
                with os.scandir(real_dir) as listing:
                    items = sorted(listing, key=lambda item: item.name)
            except OSError as exc:
                self.skipped.append(Skip(shown_dir, real_dir, entry.origin, f"cannot be listed: {exc.strerror}"))
                return
            files: list[tuple[str, str, os.stat_result]] = []
            folders: list[tuple[str, str]] = []
            for item in items:
                shown = shown_dir + item.name
                try:
                    if item.is_symlink():
                        target = self.follow(entry, shown, item.path)
                        if target is None:
                            continue
                        info = os.stat(target)
                        if stat.S_ISDIR(info.st_mode):
                            if item.name not in EXCLUDED_DIRECTORIES:
                                folders.append((target, shown + "/"))
                        else:
                            files.append((shown, target, info))
                    elif item.is_dir(follow_symlinks=False):
                        if item.name not in EXCLUDED_DIRECTORIES:
                            folders.append((item.path, shown + "/"))
                    else:
                        files.append((shown, item.path, item.stat(follow_symlinks=False)))
                except FileNotFoundError:
                    continue  # vanished while we looked: it is simply not there
            yield from files
            for real, shown in folders:
                if real not in visited:  # a symlink back to a folder already walked: no cycle
                    visited.add(real)
                    yield from visit(real, shown)

        yield from visit(top, shown_top)

    def follow(self, entry: ContextEntry, shown: str, link: str) -> str | None:
        """Where a symlink found in a folder points, if it is inside the repository."""
        try:
            target = os.path.realpath(link, strict=True)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self.refuse(ContextPathError("Context path is a symlink loop", shown, entry.origin))
                return None
            lenient = os.path.realpath(link)
            if not inside(lenient, self.base):
                self.refuse(_outside(shown, entry.origin, lenient))
                return None
            self.skipped.append(Skip(shown, None, entry.origin, "broken symlink"))
            return None
        if not inside(target, self.base):
            self.refuse(_outside(shown, entry.origin, target))
            return None
        return target


def _outside(shown: str, origin: str, target: str) -> ContextOutsideRepository:
    return ContextOutsideRepository("Context path is outside the repository", shown, origin, f"resolves to {target}")


FLAGS = frozenset({"--context-file", "--context-dir"})


def merge(
    root: Path, entries: Sequence[ContextEntry], *, strict: bool = True, limit: int = MAX_FILES_PER_DIRECTORY
) -> Merged:
    """Apply the merging rules to one category's entries, in order."""
    merger = _Merger(root, strict, limit)
    for entry in entries:
        merger.entry(entry, entry.origin in FLAGS)
    return Merged(tuple(merger.files), tuple(merger.skipped), tuple(merger.warnings))
