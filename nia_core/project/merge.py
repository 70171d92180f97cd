"""The context-merging rules for one category of context entries.

Entries are taken in order; a directory expands inline to its files (each
folder's files sorted by name, then its subfolders sorted by name, depth
first), at most :data:`MAX_FILES_PER_DIRECTORY` files per directory entry and
:data:`MAX_FOLDERS` folders listed by all of a category's directory entries.
Files are deduplicated by canonical path, first occurrence kept. Oversized,
binary and non-regular files are skipped with a note, never an error. Path
problems (missing, escaping the repository, symlink loops) raise in strict
mode (the first load, so the user sees them) and become warnings otherwise
(later boundaries, where a vanished file is a removal, not a failure).
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from nia_core.files import Refused, Signature, StatCache, outside_clause, signature
from nia_core.project.binary import binary_extension, looks_binary
from nia_core.project.config import ContextEntry
from nia_core.project.paths import (
    GIT_DIR_PROBLEM,
    ContextInGitDir,
    ContextOutsideRepository,
    ContextPathError,
    canonical,
    check_kind,
    in_git_dir,
    inside,
    relative,
)

MAX_FILES_PER_DIRECTORY = 100
MAX_FOLDERS = 5_000
"""Folders one category's directory entries may list in all: past it the walk stops, said once.

The file limit bounds what a prompt holds, not what finding it costs: a tree of
100,000 empty folders holds no file, and walking it whole would take seconds
(past the plugins' 2 s deadline, so the project's context would be left out).
5,000 is several times the folders a real project's documentation has, and
lists in well under a second on a busy machine."""
MAX_FOLDER_ENTRIES = 20_000
"""Entries read from one folder at most: past it the folder's listing stops, said once.

Listing in name order needs every name first; 100,000 names cost a tenth of a
second to read and sort before any limit applies. A folder this large is not
documentation: its listing is cut at this many entries, the first the file system
returns (the same ones while the folder is unchanged), then sorted by name as any
other folder's."""
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


_kinds: dict[tuple[str, str], tuple[Signature, str | None, int]] = {}
_kinds_lock = threading.Lock()

Outcome = tuple[Signature, str, "ContextFile | Skip", str]
"""What one file of a directory entry came to: its signature, shown path, the file or skip, its ``seen`` label."""

_outcomes: dict[tuple[str, str, str, str], dict[str, Outcome]] = {}
"""Per directory entry (root, origin, description, folder as written): each file's last outcome by real path.

An unchanged file (same ``stat`` signature, same shown path) hands back the
very same :class:`ContextFile` or :class:`Skip` without classifying it
again; only outcomes decided from a checked read or the file's own ``stat``
are kept, never a refusal or a read error (those are decided afresh).
"""
_orders: dict[str, tuple[tuple[str, ...], list[int]]] = {}
"""Per listed folder: its names in listing order and their by-name order (an unchanged folder is not re-sorted)."""
_merged: dict[tuple[str, tuple[ContextEntry, ...], bool, int, int], Merged] = {}
"""The last result per merge: an unchanged merge hands back the very same :class:`Merged` (callers compare identity)."""
MEMO_LIMIT = 4096
"""Directory entries and folders remembered at most; past it the memos start over (they are only a short cut)."""


def content_problem(data: bytes, oversize: bool) -> str | None:
    """Why bytes actually read from a context file keep it out of the prompt, or ``None``."""
    if oversize:
        return OVERSIZE
    if looks_binary(data):
        return BINARY
    return None


def classify(real: str, info: os.stat_result, root: str) -> tuple[str | None, int]:
    """``(None, size)`` for a text file to include, else ``(why it is skipped, size)``.

    The decision is made on the bytes read through the checked reader (at most
    :data:`MAX_FILE_BYTES` + 1 of them), never on ``info`` alone; ``info`` only
    short-cuts what needs no read (not a regular file, bigger already, a binary
    extension) and keys the cache, so an unchanged file is not read again.
    """
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file", info.st_size
    if info.st_size > MAX_FILE_BYTES:
        return OVERSIZE, info.st_size
    if binary_extension(real):
        return BINARY, info.st_size
    sig = signature(info)
    cached = _kinds.get((real, root))
    if cached is not None and cached[0] == sig:
        return cached[1], cached[2]
    try:
        content = FILES.read(real, root=root, limit=MAX_FILE_BYTES)
    except Refused as exc:
        return f"refused: {exc.problem}", info.st_size
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}", info.st_size
    reason = content_problem(content.data, content.oversize)
    if reason is not None:
        FILES.forget(real)  # only text is worth keeping in memory
    with _kinds_lock:
        _kinds[(real, root)] = (content.sig, reason, content.size)
    return reason, content.size


class _Merger:
    def __init__(self, root: Path, strict: bool, limit: int, folder_limit: int = MAX_FOLDERS) -> None:
        self.root = root
        self.base = str(root)
        self.strict = strict
        self.limit = limit
        self.folder_limit = folder_limit
        self.folders_left = folder_limit
        """Folders the walks of this merge may still list (:data:`MAX_FOLDERS`)."""
        self.files: list[ContextFile] = []
        self.skipped: list[Skip] = []
        self.warnings: list[str] = []
        self.seen: dict[str, str] = {}

    def refuse(self, error: ContextPathError) -> None:
        if self.strict:
            raise error
        self.warnings.append(str(error))

    def take(
        self,
        entry: ContextEntry,
        shown: str,
        real: str,
        info: os.stat_result,
        folder: str | None,
        memo: dict[str, Outcome] | None = None,
    ) -> bool:
        """Add one file unless it is a duplicate or skipped; whether it was added.

        With ``memo`` (a directory entry's), the outcome is remembered for the
        next boundary's hot path (see :meth:`entry`).
        """
        first = self.seen.get(real)
        if first is not None:
            self.skipped.append(Skip(shown, real, entry.origin, f"duplicate of {first}", info.st_size))
            return False
        sig = (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino, info.st_dev)
        reason, size = classify(real, info, self.base)
        if reason is not None:
            if reason.startswith("refused: "):  # the file changed between the path check and the read
                self.refuse(ContextOutsideRepository(f"Context path {reason[9:]}", shown, entry.origin))
            skip = Skip(shown, real, entry.origin, reason, size)
            self.skipped.append(skip)
            if memo is not None and not reason.startswith(("refused: ", "cannot be read: ")):
                memo[real] = (sig, shown, skip, "")
            return False
        seen = self.seen[real] = entry.origin if folder is None else f"{entry.origin} ({shown})"
        description = entry.description if folder is None else f"{entry.description} (from directory)".strip()
        path = relative(real, self.base)
        made = ContextFile(shown, real, path, entry.origin, description, size, folder)
        self.files.append(made)
        FILES.vouch(real, sig)
        if memo is not None:
            memo[real] = (sig, shown, made, seen)
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
        if self.folders_left <= 0:  # an earlier entry spent the folders: said once, this one noted
            reason = f"not walked: the limit of {self.folder_limit:,} folders was reached"
            self.skipped.append(Skip(folder, real, entry.origin, reason))
            return
        memo = _memo(_outcomes, (self.base, entry.origin, entry.description, folder))
        count, limit, seen, remembered = 0, self.limit, self.seen, memo.get
        keep, skip, vouch, now = self.files.append, self.skipped.append, FILES.vouch, time.monotonic()
        for shown, file_real, file_info in self.walk(entry, real, folder):
            # The hot path of an unchanged file: its last outcome, when its signature and shown path are the same.
            last = remembered(file_real) if count < limit and file_real not in seen else None
            if last is not None and last[1] == shown:
                sig = (
                    file_info.st_mtime_ns,
                    file_info.st_ctime_ns,
                    file_info.st_size,
                    file_info.st_ino,
                    file_info.st_dev,
                )
                if last[0] == sig:
                    outcome = last[2]
                    if type(outcome) is Skip:
                        skip(outcome)
                    else:
                        seen[file_real] = last[3]
                        keep(outcome)  # type: ignore[arg-type]
                        vouch(file_real, sig, now)
                        count += 1
                    continue
            over = count >= limit and file_real not in seen
            if over and classify(file_real, file_info, self.base)[0] is None:
                self.warnings.append(
                    f"Maximum file limit ({self.limit}) reached for directory {folder}\n  Skipped remaining files"
                )
                return
            if self.take(entry, shown, file_real, file_info, folder, memo):
                count += 1

    def walk(self, entry: ContextEntry, top: str, shown_top: str) -> Iterator[tuple[str, str, os.stat_result]]:
        """``(shown path, canonical path, stat)`` of each file below ``top``, in the documented order.

        Depth first with an explicit stack, never recursion: a hostile tree of
        thousands of nested folders costs memory for its names, not Python
        stack frames. Each folder is opened relative to a folder already open
        (:class:`_Opener`), never by its whole path: the kernel resolves a path
        one component at a time, so listing 1,500 nested folders by path costs
        over a million steps (seconds on a busy machine) where this costs a few
        thousand.
        """
        visited: set[str] = set()
        opener = _Opener()
        stack: list[tuple[Iterator[_Folder], int | None]] = [(iter([_Folder(top, shown_top, None, top, 0)]), None)]
        try:
            while stack:
                folders, owned = stack[-1]
                step = next(folders, None)
                if step is None:
                    stack.pop()
                    opener.release(owned, kept=True)
                    continue
                if step.real in visited:  # a symlink back to a folder already walked: no cycle
                    continue
                if self.folders_left <= 0:
                    self.warnings.append(
                        f"Maximum folder limit ({self.folder_limit:,}) reached for directory {shown_top} "
                        f"({entry.origin})\n  Skipped remaining folders"
                    )
                    return
                self.folders_left -= 1
                visited.add(step.real)
                files, children, anchor = self.listing(entry, step, opener)
                if children:
                    stack.append((iter(children), anchor))
                yield from files
        finally:
            for _, owned in stack:
                opener.release(owned, kept=True)

    def listing(
        self, entry: ContextEntry, folder: _Folder, opener: _Opener
    ) -> tuple[list[tuple[str, str, os.stat_result]], list[_Folder], int | None]:
        """The files (``(shown, real, stat)``) and subfolders of one folder, sorted by name, and the
        descriptor its subfolders are opened from when this folder keeps one open (else ``None``)."""
        real_dir, shown_dir = folder.real, folder.shown
        files: list[tuple[str, str, os.stat_result]] = []
        folders: list[_Folder] = []
        try:
            fd = opener.open(folder)
        except OSError as exc:
            self.skipped.append(Skip(shown_dir, real_dir, entry.origin, f"cannot be listed: {exc.strerror}"))
            return files, folders, None
        keep = opener.keep(folder, fd)
        try:
            with os.scandir(fd if fd is not None else real_dir) as listing:
                items = list(itertools.islice(listing, MAX_FOLDER_ENTRIES + 1))
            if len(items) > MAX_FOLDER_ENTRIES:
                del items[MAX_FOLDER_ENTRIES:]
                self.warnings.append(
                    f"Maximum folder size ({MAX_FOLDER_ENTRIES:,} entries) reached for folder {shown_dir} "
                    f"({entry.origin})\n  Listed the first {MAX_FOLDER_ENTRIES:,} the file system returned, by name"
                )
            names = tuple([item.name for item in items])
            order = _orders.get(real_dir)
            if order is None or order[0] != names:  # a listing that changed at all is sorted afresh
                # git's folder or a submodule's pointer file is never context: left out of the order itself
                kept = [i for i in range(len(names)) if names[i].lower() != ".git"]
                order = (names, sorted(kept, key=names.__getitem__))
                if len(_orders) >= MEMO_LIMIT:
                    _orders.clear()
                _orders[real_dir] = order
            prefix = real_dir if real_dir.endswith(os.sep) else real_dir + os.sep
            for index in order[1]:
                item = items[index]
                shown = shown_dir + item.name
                path = prefix + item.name
                try:
                    if item.is_file(follow_symlinks=False):  # the common case first: a regular file, one check
                        files.append((shown, path, item.stat(follow_symlinks=False)))
                    elif item.is_symlink():
                        target = self.follow(entry, shown, path)
                        if target is None:
                            continue
                        info = os.stat(target)
                        if stat.S_ISDIR(info.st_mode):
                            if item.name not in EXCLUDED_DIRECTORIES:
                                folders.append(_Folder(target, shown + "/", None, target, 0))
                        else:
                            files.append((shown, target, info))
                    elif item.is_dir(follow_symlinks=False):
                        if item.name not in EXCLUDED_DIRECTORIES:
                            folders.append(folder.child(path, shown + "/", item.name, fd if keep else None))
                    else:
                        files.append((shown, path, item.stat(follow_symlinks=False)))
                except FileNotFoundError:
                    continue  # vanished while we looked: it is simply not there
                except OSError as exc:
                    self.skipped.append(Skip(shown, None, entry.origin, f"cannot be read: {exc.strerror or exc}"))
        except OSError as exc:
            self.skipped.append(Skip(shown_dir, real_dir, entry.origin, f"cannot be listed: {exc.strerror}"))
        finally:
            if not (keep and folders):
                opener.release(fd, kept=keep)
        return files, folders, fd if keep and folders else None

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
        if in_git_dir(target, self.base):
            self.refuse(ContextInGitDir(GIT_DIR_PROBLEM, shown, entry.origin))
            return None
        return target


class _Folder(NamedTuple):
    """A folder to list: its canonical path, its path as shown, and how to open it cheaply.

    ``relative`` is its path from the open folder ``anchor`` (a descriptor),
    ``steps`` components long; without an anchor it is opened by ``real``.
    """

    real: str
    shown: str
    anchor: int | None
    relative: str
    steps: int

    def child(self, real: str, shown: str, name: str, own: int | None) -> _Folder:
        """A subfolder: from this folder's own descriptor when it keeps one, else from this folder's anchor."""
        if own is not None:
            return _Folder(real, shown, own, name, 1)
        if self.anchor is None:
            return _Folder(real, shown, None, real, 0)
        return _Folder(real, shown, self.anchor, f"{self.relative}/{name}", self.steps + 1)


ANCHOR_STEPS = 32
"""Most path components nia resolves to open a folder of a directory entry: past this, the folder is kept open."""
ANCHORS_HELD = 64
"""Most folders kept open at once by one walk (beyond it, longer relative paths: slower, never wrong)."""
_BY_DESCRIPTOR = os.scandir in os.supports_fd and os.open in os.supports_dir_fd


class _Opener:
    """Opens each folder of a walk relative to an open ancestor, so no path resolved is longer than
    :data:`ANCHOR_STEPS` components, keeping at most :data:`ANCHORS_HELD` folders open."""

    def __init__(self) -> None:
        self.held = 0

    def open(self, folder: _Folder) -> int | None:
        """A descriptor of ``folder`` (``None``: list it by path, where descriptors cannot be listed)."""
        if not _BY_DESCRIPTOR:
            return None
        flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
        if folder.anchor is None:
            return os.open(folder.real, flags)
        return os.open(folder.relative, flags, dir_fd=folder.anchor)

    def keep(self, folder: _Folder, fd: int | None) -> bool:
        """Whether ``folder``'s descriptor stays open for its subfolders (released by :meth:`release`)."""
        if fd is None or (folder.anchor is not None and folder.steps < ANCHOR_STEPS) or self.held >= ANCHORS_HELD:
            return False
        self.held += 1
        return True

    def release(self, fd: int | None, *, kept: bool) -> None:
        if fd is not None:
            os.close(fd)
            self.held -= kept


def _outside(shown: str, origin: str, target: str) -> ContextOutsideRepository:
    return ContextOutsideRepository("Context path is outside the repository", shown, origin, outside_clause(target))


FLAGS = frozenset({"--context-file", "--context-dir"})


def forget() -> None:
    """Drop every cached read, classification and memo: the next merge starts cold (benchmarks, tests)."""
    FILES.forget()
    with _kinds_lock:
        _kinds.clear()
    _outcomes.clear()
    _orders.clear()
    _merged.clear()


def _memo(
    table: dict[tuple[str, str, str, str], dict[str, Outcome]], key: tuple[str, str, str, str]
) -> dict[str, Outcome]:
    memo = table.get(key)
    if memo is None:
        if len(table) >= MEMO_LIMIT:
            table.clear()
        memo = table[key] = {}
    return memo


def _same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def merge(
    root: Path,
    entries: Sequence[ContextEntry],
    *,
    strict: bool = True,
    limit: int = MAX_FILES_PER_DIRECTORY,
    folder_limit: int = MAX_FOLDERS,
) -> Merged:
    """Apply the merging rules to one category's entries, in order.

    The very same :class:`Merged` comes back while nothing in it changed
    (every file the same object, see ``_outcomes``), so what is built from it
    (the file sources) can be kept by identity.
    """
    merger = _Merger(root, strict, limit, folder_limit)
    for entry in entries:
        merger.entry(entry, entry.origin in FLAGS)
    files, skipped, warnings = tuple(merger.files), tuple(merger.skipped), tuple(merger.warnings)
    key = (merger.base, tuple(entries), strict, limit, folder_limit)
    last = _merged.get(key)
    if last is not None and _same(last.files, files) and _same(last.skipped, skipped) and last.warnings == warnings:
        return last
    result = Merged(files, skipped, warnings)
    if len(_merged) >= MEMO_LIMIT:
        _merged.clear()
    _merged[key] = result
    return result
