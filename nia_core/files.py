"""The one way nia reads a file from a project: open first, then check what was opened.

Every reader of project files (context files and folders, AGENTS.md, the
``.nia/*.toml`` files) goes through :func:`read_checked`, so the rules hold for
all of them at once:

- the file is opened before anything is decided about it (``O_NOFOLLOW`` on
  the canonical path, ``O_NONBLOCK`` so a FIFO cannot hang the open,
  ``O_CLOEXEC``), then the *opened* file is checked with ``fstat``: it must be
  a regular file, and it must be the file at a real path inside the project
  root (the kernel's name for the descriptor, else the device and inode of the
  real path taken after the open). A swap between a check and the open cannot
  slip another file in;
- a file with more than one hard link is refused: nia cannot see where its
  other names are, so it may be a file from outside the project;
- a file in a ``.git`` folder below the root is refused: git's own data (its
  config can hold a token), never project content (reading git's data, the
  built-in git plugin passes the ``.git`` folder itself as the root);
- at most ``limit + 1`` bytes are read from the descriptor, so a file that
  grows while it is read, a 3 GB file or ``/dev/zero`` is never read whole;
- size and binary limits are applied by the callers to the bytes read, never
  to an earlier ``stat``.

:class:`StatCache` keeps the hot path cheap: an unchanged file costs one
``stat`` and hands back the very same object as last time (which the engine
compares by identity). It only ever caches bytes that passed the checks.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import threading
import time
import weakref
from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

Signature = tuple[int, int, int, int, int]

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_PROC_FD = "/proc/self/fd/" if sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd") else None
_CHUNK = 1024 * 1024


def signature(info: os.stat_result) -> Signature:
    """What must stay equal for a file's bytes to be taken as unchanged."""
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino, info.st_dev)


def inside(path: str, root: str) -> bool:
    """Whether the canonical ``path`` is ``root`` or lies below it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def in_git_dir(real: str, root: str) -> bool:
    """Whether the canonical ``real`` (inside ``root``) lies in a ``.git`` folder below ``root``, at any depth.

    ``.git/config`` can hold a remote URL with a token or an ``extraheader``
    with a bearer key, written by the user's git, not by the repository's
    author: a context entry or a symlink naming it would send it to the model.
    """
    if ".git" not in real.lower():
        return False
    below = real[len(root.rstrip(os.sep)) + 1 :] if inside(real, root) else real
    return any(part.lower() == ".git" for part in below.split(os.sep))


GIT_FOLDER = "resolves into a .git folder (version-control data, which can hold credentials)"
"""Why a project file inside ``.git`` is refused when read with a project root."""


_SYSTEM_FOLDERS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/opt", "/srv", "/var")
_KERNEL_FOLDERS = ("/dev", "/proc", "/sys", "/run")


def realm(path: str) -> str:
    """Where an outside path lies, in words that reveal no file name (for refusal warnings).

    The full outside path is never printed: a link's target can itself be a
    secret (a token in a file name, a private folder layout), and a warning may
    end up in a log or a bug report.
    """
    home = os.path.realpath(os.path.expanduser("~"))
    if path == os.sep:
        return "the file-system root"
    if home != os.sep and inside(path, home):
        return "the home folder"
    if any(inside(path, folder) for folder in _KERNEL_FOLDERS):
        return "a device or kernel file"
    if any(inside(path, folder) for folder in _SYSTEM_FOLDERS):
        return "a system folder"
    return "outside the project"


class Refused(OSError):
    """A file that must not be read: it escapes the project, or is not a regular file.

    ``problem`` is one clause (``"is a symlink to outside the project (the
    home folder)"``, ``"is not a regular file"``); it names no outside path.
    """

    def __init__(self, problem: str, *, transient: bool = False) -> None:
        super().__init__(errno.EPERM, problem)
        self.problem = problem
        self.transient = transient
        """Whether the file changed while it was opened (a race): retry later rather than leave it out."""


HARD_LINKED = "has more than one hard link (another name of the file may lie outside the project)"
"""Why a project file with several names is refused: nia cannot tell where the other names are."""


class Content(NamedTuple):
    """What was read from one opened and checked file.

    A named tuple, not a record: a cached ``nia --help`` reads its cache
    through this module and loads no :mod:`dataclasses`.
    """

    data: bytes
    """At most ``limit + 1`` bytes; more than ``limit`` means the file is oversize."""
    size: int
    """The size ``fstat`` gave for the opened file (at least ``len(data)``)."""
    oversize: bool
    real: str
    """The real path that was checked."""
    sig: Signature
    """The opened file's signature (from ``fstat``), matching the bytes read."""
    released: bool = False
    """Whether ``data`` was let go (empty) because every loader of the file already derived its value from it."""


def outside_clause(target: str, edge: str = "the project") -> str:
    """The clause refusing a path whose real ``target`` lies outside ``edge`` (no outside name).

    ``edge`` names the folder a file had to stay in: the project, or the home
    folder for a user's own settings.
    """
    where = realm(target)
    if where == "outside the project" or where == edge:
        return f"resolves outside {edge}"
    return f"resolves to {where}, outside {edge}"


def _kernel_name(fd: int) -> str | None:
    """The kernel's own name for what ``fd`` is open on (Linux), else ``None``."""
    if _PROC_FD is None:
        return None
    try:
        name = os.readlink(_PROC_FD + str(fd))
    except OSError:
        return None
    return name if name.startswith(os.sep) and not name.endswith(" (deleted)") else None


def _opened_is(fd: int, info: os.stat_result, real: str, root: str) -> bool:
    """Whether descriptor ``fd`` (stat ``info``) is the file at ``real`` (inside ``root``)."""
    if _kernel_name(fd) == real:
        return True
    now = os.path.realpath(real)
    if now != real or not inside(now, root):
        return False
    try:
        again = os.stat(now)
    except OSError:
        return False
    return (again.st_dev, again.st_ino) == (info.st_dev, info.st_ino)


@lru_cache(maxsize=256)
def _real_root(root: str) -> str:
    return os.path.realpath(root)


def read_fd(fd: int, limit: int | None) -> bytes:
    """Up to ``limit + 1`` bytes from ``fd`` (everything when ``limit`` is ``None``)."""
    want = None if limit is None else limit + 1
    chunks: list[bytes] = []
    got = 0
    while want is None or got < want:
        chunk = os.read(fd, _CHUNK if want is None else min(_CHUNK, want - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_checked(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str] | None,
    limit: int | None,
    *,
    edge: str = "the project",
) -> Content:
    """Open ``path``, check the opened file, read at most ``limit + 1`` bytes.

    ``root`` is the project root the file's real path must lie in (``None``
    only for files the user put outside any project, like the global
    AGENTS.md). Raises :class:`Refused` for a file that escapes ``root``, lies
    in a ``.git`` folder below it (git's own data: ``.git/config`` can hold a
    token) or is not a regular file, and ``OSError`` like :func:`open` otherwise.

    The usual path (a canonical path, on Linux) costs an ``open``, an
    ``fstat``, a ``readlink`` of ``/proc/self/fd/N`` and the reads: the
    kernel's name for the opened file is what is checked against ``root``.
    A path whose last component is a symlink is resolved first, checked, and
    opened by its real path; where the kernel gives no name, the real path is
    resolved after the open and its device and inode compared with the
    opened file's. ``edge`` names ``root`` in refusals (``the home folder``).
    """
    given = os.fspath(path)
    base = None if root is None else _real_root(os.fspath(root))
    fd, real = _open(given, base, edge)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused("is not a regular file")
        if base is not None and info.st_nlink > 1:
            raise Refused(HARD_LINKED)
        if base is not None and real is None:
            name = _kernel_name(fd)
            if name is not None and not inside(name, base):  # a folder on the way is a symlink out
                again = os.path.realpath(given)
                raise Refused(outside_clause(name, edge), transient=inside(again, base))  # inside now: it was swapped
            if name is None:
                real = os.path.realpath(given)
                if not inside(real, base):
                    raise Refused(outside_clause(real, edge))
                if not _opened_is(fd, info, real, base):
                    raise Refused("changed while it was opened (a symlink swapped in)", transient=True)
            else:
                real = name
        elif base is not None and real is not None and not _opened_is(fd, info, real, base):
            raise Refused("changed while it was opened (a symlink swapped in)", transient=True)
        if base is not None and real is not None and in_git_dir(os.path.dirname(real), base):
            raise Refused(GIT_FOLDER)  # (a linked worktree's own ".git" file, which only points, is read)
        data = read_fd(fd, limit)
    finally:
        os.close(fd)
    size = max(info.st_size, len(data))
    return Content(data, size, limit is not None and len(data) > limit, real or given, signature(info))


def _open(given: str, base: str | None, edge: str = "the project") -> tuple[int, str | None]:
    """A descriptor on ``given`` (never following a symlink as its last component), and its real path if known.

    When ``given`` itself is a symlink, it is resolved and checked against
    ``base`` before its target is opened; a target outside is refused unopened.
    """
    try:
        return os.open(given, _OPEN_FLAGS), None
    except OSError as exc:
        if exc.errno in _NOT_A_FILE:
            raise Refused("is not a regular file") from None
        if exc.errno != errno.ELOOP:
            raise
    real = os.path.realpath(given)  # the last component is a symlink
    if base is not None and not inside(real, base):
        raise Refused(outside_clause(real, edge))
    try:
        return os.open(real, _OPEN_FLAGS), real
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # swapped again since it was resolved
            raise Refused("changed into a symlink while it was opened", transient=True) from None
        if exc.errno in _NOT_A_FILE:
            raise Refused("is not a regular file") from None
        raise


_NOT_A_FILE = frozenset({errno.ENXIO, errno.ENODEV, errno.EOPNOTSUPP})
"""What ``open`` says of a file that is no regular file and cannot even be opened (a socket, a device without
its driver): refused like the special files that can be opened, so a reader leaves it out instead of
retrying it forever."""


class StatCache:
    """Checked file contents keyed by path, re-read when the ``stat`` signature changes.

    An unchanged file costs one ``stat`` and hands back the very same object
    as last time; a changed one goes through :func:`read_checked`, and its
    signature is taken from the opened file (``fstat``), so what is cached
    matches the bytes read. A read that fails the checks drops the entry, so a
    refused file's content is never handed out.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str | None, int | None], tuple[Signature, Content]] = {}
        self._texts: dict[tuple[str, str | None, int | None], tuple[Signature, str]] = {}
        self._vouched: dict[str, tuple[Signature, float]] = {}
        self._live: dict[tuple[str, str | None, int | None], int] = {}
        """How many :class:`CachedFile` loaders of each slot exist (they decide when bytes may be let go)."""
        self._derived: dict[tuple[str, str | None, int | None], tuple[Content, int]] = {}
        """How many of them hold a value derived from the slot's current content."""
        self._lock = threading.RLock()  # re-entrant: a collected loader's __del__ may run inside a locked section
        _caches.add(self)

    def files(self) -> dict[str, Signature]:
        """Each file this cache holds, as an absolute path, with the signature of what it holds."""
        with self._lock:
            held = [(slot[0], sig) for slot, (sig, _) in self._entries.items()]
            held += [(slot[0], sig) for slot, (sig, _) in self._texts.items()]
        return {os.path.abspath(path): sig for path, sig in held}

    @staticmethod
    def _unchanged(key: str, cached: tuple[Signature, object] | None) -> bool:
        if cached is None:
            return False
        return signature(os.stat(key)) == cached[0]  # raises OSError like open() would

    def read(
        self,
        path: str | os.PathLike[str],
        *,
        root: str | os.PathLike[str] | None = None,
        limit: int | None = None,
        data: bool = True,
    ) -> Content:
        """The checked :class:`Content` of ``path`` (see :func:`read_checked`); cached while unchanged.

        With ``data=False``, a content whose bytes were let go (:meth:`done_with`)
        comes back as it is (``released``, no data) while the file is unchanged:
        for a caller that keeps what it made from the bytes and compares the
        content by identity. Otherwise such a file is read again.
        """
        return self._read(os.fspath(path), None if root is None else os.fspath(root), limit, released=not data)

    def done_with(
        self,
        path: str | os.PathLike[str],
        content: Content,
        *,
        root: str | os.PathLike[str] | None = None,
        limit: int | None = None,
    ) -> Content:
        """The content to keep once the caller made what it needs from ``content``'s bytes.

        The bytes are let go unless a loader of the file has yet to derive its
        value from them. Compare what comes back by identity with what
        :meth:`read` gives with ``data=False``.
        """
        slot = (os.fspath(path), None if root is None else os.fspath(root), limit)
        return self._derived_from(slot, content, loader=False)

    def _read(self, key: str, base: str | None, limit: int | None, *, released: bool) -> Content:
        """:meth:`read`; a released content is handed back only when ``released`` (else the file is read again)."""
        slot = (key, base, limit)
        cached = self._entries.get(slot)
        try:
            if cached is not None and self._unchanged(key, cached) and (released or not cached[1].released):
                return cached[1]
            content = read_checked(key, base, limit)
        except OSError:
            self.forget(key)
            raise
        with self._lock:
            self._entries[slot] = (content.sig, content)
        return content

    def read_bytes(
        self, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, limit: int | None = None
    ) -> bytes:
        """The file's bytes (at most ``limit + 1``); raises ``OSError`` like :func:`open`."""
        return self.read(path, root=root, limit=limit).data

    def stat_unchanged(
        self, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, limit: int | None = None
    ) -> bytes | None:
        """The cached bytes if a ``stat`` shows the file unchanged, else ``None``."""
        key = os.fspath(path)
        cached = self._entries.get((key, None if root is None else os.fspath(root), limit))
        try:
            unchanged = cached is not None and not cached[1].released and self._unchanged(key, cached)
        except OSError:
            return None
        return cached[1].data if unchanged and cached is not None else None

    def read_text(
        self, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None, limit: int | None = None
    ) -> str:
        """Decoded text (UTF-8, undecodable bytes replaced); the same ``str`` while the file is unchanged."""
        key = os.fspath(path)
        base = None if root is None else os.fspath(root)
        slot = (key, base, limit)
        cached = self._texts.get(slot)
        try:
            if cached is not None and self._unchanged(key, cached):
                return cached[1]
        except OSError:
            self.forget(key)
            raise
        content = self.read(key, root=base, limit=limit)
        text = content.data.decode("utf-8", errors="replace")
        with self._lock:
            self._texts[slot] = (content.sig, text)
        return text

    def loader(
        self,
        path: str | os.PathLike[str],
        *,
        root: str | os.PathLike[str] | None = None,
        limit: int | None = None,
        derive: Callable[[Content], Any] | None = None,
        on_error: Callable[[OSError], Any] | None = None,
    ) -> CachedFile:
        """A loader for ``path`` the engine knows to be fast while the file is unchanged (:class:`CachedFile`)."""
        made = CachedFile(self, os.fspath(path), None if root is None else os.fspath(root), limit, derive, on_error)
        with self._lock:
            self._live[made._slot] = self._live.get(made._slot, 0) + 1
        return made

    def _gone(self, slot: tuple[str, str | None, int | None]) -> None:
        """A :class:`CachedFile` of ``slot`` was collected."""
        with self._lock:
            left = self._live.get(slot, 0) - 1
            if left > 0:
                self._live[slot] = left
            else:
                self._live.pop(slot, None)
                self._derived.pop(slot, None)

    def _derived_from(
        self, slot: tuple[str, str | None, int | None], content: Content, *, loader: bool = True
    ) -> Content:
        """A loader now holds a value derived from ``content``: the content it should keep.

        Once every live loader of the slot holds its value, the bytes are
        needed by no one (an unchanged file hands back the values; a changed
        one is read again): the entry keeps a released copy with the same
        signature and no data, so a file is not held as bytes beside its text.
        """
        with self._lock:
            entry = self._entries.get(slot)
            if entry is None or entry[1] is not content or content.released:
                return content
            prior = self._derived.get(slot)
            count = prior[1] if prior is not None and prior[0] is content else 0
            count += loader  # a loader's own value counts; another reader only asks
            if count < self._live.get(slot, 0):
                self._derived[slot] = (content, count)
                return content
            self._derived.pop(slot, None)
            slim = Content(b"", content.size, content.oversize, content.real, content.sig, released=True)
            self._entries[slot] = (entry[0], slim)
            return slim

    def vouch(self, path: str, sig: Signature, at: float | None = None) -> None:
        """Hand the next :meth:`CachedFile.peek` of ``path`` the ``stat`` a directory walk just took of it.

        The walk that decides which files a boundary includes has just stat'ed
        each of them; the engine's peek, a moment later in the same boundary,
        would stat them again. ``sig`` is :func:`signature` of that ``stat``
        (which followed symlinks, as the peek's would), ``at`` its
        :func:`time.monotonic` time when the caller has it. A vouch is used at most once, and only within
        :data:`VOUCH_SECONDS` of the stat; it never stands in for a read, and a
        signature that differs from the cached one is a miss as usual.
        """
        self._vouched[path] = (sig, time.monotonic() if at is None else at)

    def forget(self, path: str | os.PathLike[str] | None = None) -> None:
        with self._lock:
            if path is None:
                self._entries.clear()
                self._texts.clear()
                self._vouched.clear()
                self._derived.clear()
                return
            key = os.fspath(path)
            self._vouched.pop(key, None)
            for table in (self._entries, self._texts, self._derived):
                for slot in [slot for slot in table if slot[0] == key]:
                    del table[slot]


_caches: weakref.WeakSet[StatCache] = weakref.WeakSet()


def files_read() -> dict[str, Signature]:
    """Every file a :class:`StatCache` of this process holds, with the signature of what it holds.

    A source's value came from these files, so whoever follows a project live
    (``nia dev``, ``nia mcp``) watches them too, wherever they are.
    """
    found: dict[str, Signature] = {}
    for cache in list(_caches):
        found.update(cache.files())
    return found


class _Miss:
    """The type of :data:`MISS`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISS"


MISS = _Miss()
"""What :meth:`CachedFile.peek` says when only a real read can answer."""

VOUCH_SECONDS = 1.0
"""How long a walk's ``stat`` may stand in for a peek's own (:meth:`StatCache.vouch`): one boundary, not the next."""


def _text(content: Content) -> str:
    return content.data.decode("utf-8", errors="replace")


class CachedFile:
    """A loader over one file of a :class:`StatCache`: calling it reads (checked, cached) and derives a value.

    Made by :meth:`StatCache.loader`. It exists so the engine can *know* a
    loader is fast: :meth:`peek` is one ``stat`` and two identity checks, runs
    no plugin code and reads nothing, so the engine runs it inline on the
    caller's thread; only a miss (changed, new, gone or refused file) calls the
    loader, on a worker under its timeout. ``derive`` turns the checked
    :class:`Content` into the value (UTF-8 text by default); it runs only when
    the content object changed, so an unchanged file hands back the very same
    value. ``on_error`` turns an ``OSError`` (a :class:`Refused` included) into
    a value (``UNAVAILABLE``, say); without it the error is raised.
    """

    __slots__ = ("__weakref__", "_cache", "_derive", "_last", "_on_error", "_slot", "limit", "path", "root")

    def __init__(
        self,
        cache: StatCache,
        path: str,
        root: str | None,
        limit: int | None,
        derive: Callable[[Content], Any] | None,
        on_error: Callable[[OSError], Any] | None,
    ) -> None:
        self._cache = cache
        self.path, self.root, self.limit = path, root, limit
        self._slot = (path, root, limit)
        self._derive = derive or _text
        self._on_error = on_error
        self._last: tuple[Content, Any] | None = None

    def __call__(self) -> Any:
        cache, last = self._cache, self._last
        try:
            content = cache._read(self.path, self.root, self.limit, released=last is not None)
            if content.released:
                assert last is not None
                if last[0].sig == content.sig:  # the bytes this loader derived from, let go since
                    self._last = (content, last[1])
                    return last[1]
                content = cache._read(self.path, self.root, self.limit, released=False)
        except OSError as exc:
            if self._on_error is None:
                raise
            return self._on_error(exc)
        if last is not None and last[0] is content:
            return last[1]
        value = self._derive(content)
        self._last = (cache._derived_from(self._slot, content), value)
        return value

    def __del__(self) -> None:
        try:
            self._cache._gone(self._slot)
        except Exception:  # noqa: BLE001 - at interpreter exit the cache may be half torn down
            pass

    def peek(self) -> Any:
        """The last value if one ``stat`` shows the file unchanged since it was read and checked, else :data:`MISS`.

        Never reads, never raises, never runs ``derive``: what it hands back
        was derived from the content the cache holds for this file now, and the
        cache only holds content that passed :func:`read_checked`. The
        ``stat`` is the one the boundary's directory walk just took, when it
        vouched for the file (:meth:`StatCache.vouch`).
        """
        cache = self._cache
        vouched = cache._vouched.pop(self.path, None) if cache._vouched else None  # used now or never
        last = self._last
        if last is None:
            return MISS
        cached = cache._entries.get(self._slot)
        if cached is None or cached[1] is not last[0]:
            return MISS
        if vouched is not None and vouched[0] == cached[0] and time.monotonic() - vouched[1] < VOUCH_SECONDS:
            return last[1]
        try:
            info = os.stat(self.path)
        except OSError:
            return MISS
        if (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino, info.st_dev) != cached[0]:
            return MISS
        return last[1]

    def __repr__(self) -> str:
        return f"CachedFile({self.path!r})"


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def open_folder_inside(root: str | os.PathLike[str], parts: tuple[str, ...], *, create: bool = True) -> int:
    """A descriptor on the folder ``root/parts...``, which is checked to lie inside ``root``.

    Each folder is opened relative to the one before it with ``O_NOFOLLOW``
    (and created when missing, if ``create``), so what nia writes through the
    descriptor (``dir_fd=``) lands inside the project even when a folder on the
    way is swapped for a symlink. A folder that *is* a symlink is followed only
    when its real path lies inside ``root``; otherwise :class:`Refused` names
    the folder and the realm of its target. The caller closes the descriptor.
    """
    base = os.path.realpath(root)
    fd = os.open(base, _DIR_FLAGS)
    here = base
    try:
        for part in parts:
            if part in ("", ".", "..") or os.sep in part:
                raise ValueError(f"not a plain folder name: {part!r}")
            shown = os.path.relpath(os.path.join(here, part), base)
            try:
                step = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass  # made by a concurrent run, or a symlink appeared: the open below decides
                step = _open_step(fd, part, here, base, shown)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                step = _open_step(fd, part, here, base, shown)
            os.close(fd)
            fd = step
            here = os.path.join(here, part)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_step(fd: int, part: str, here: str, base: str, shown: str) -> int:
    """Open ``part`` under ``fd``; a symlink only when its real target is a folder inside ``base``."""
    try:
        return os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise
    target = os.path.realpath(os.path.join(here, part))
    if not inside(target, base):
        raise Refused(f"{shown} is a symlink that {outside_clause(target)}")
    step = os.open(target, _DIR_FLAGS | _NOFOLLOW)
    if not _opened_is(step, os.fstat(step), target, base):
        os.close(step)
        raise Refused(f"{shown} changed while it was opened (a symlink swapped in)", transient=True)
    return step


# -- writing inside a root ------------------------------------------------------------------------


def relative_parts(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> tuple[tuple[str, ...], str]:
    """``path`` as folder names below ``root`` and its own name; :class:`Refused` when it is not below ``root``.

    ``path`` may be spelled from ``root`` as given or from its real path (a
    :class:`Content`'s ``real``). ``..`` is resolved by spelling alone, so
    ``root/a/../../x`` is outside.
    """
    given = os.path.abspath(path)
    for base in dict.fromkeys((os.path.abspath(root), _real_root(os.fspath(root)))):
        if given != base and inside(given, base):
            *folders, name = os.path.relpath(given, base).split(os.sep)
            return tuple(folders), name
    raise Refused("does not lie inside the folder it must stay in")


def link_out(root: str | os.PathLike[str], path: str | os.PathLike[str], edge: str = "the project") -> str | None:
    """The first link on the way from ``root`` to ``path`` whose target lies outside ``root``, as a clause.

    For refusals that name the link the user must look at
    (``.claude is a symlink that resolves outside the project``); ``None``
    when no link on the way leads out (the refusal had another cause).
    """
    base = _real_root(os.fspath(root))
    try:
        folders, name = relative_parts(root, path)
    except Refused:
        return None
    here = os.path.abspath(root)
    for step, part in enumerate((*folders, name)):
        here = os.path.join(here, part)
        if os.path.islink(here):
            target = os.path.realpath(here)
            if not inside(target, base):
                shown = os.path.join(*(*folders, name)[: step + 1])
                return f"{shown} is a symlink that {outside_clause(target, edge)}"
    return None


def replace_inside(root: str | os.PathLike[str], path: str | os.PathLike[str], data: bytes) -> None:
    """Replace the file ``path`` below ``root`` with ``data`` in one rename; a reader sees the old or the new file.

    The folder is opened one level at a time from ``root``
    (:func:`open_folder_inside`, creating missing folders), and everything
    happens through its descriptor: the temporary file is created
    exclusively without following a link, then renamed over the name. So a
    folder on the way that leads outside ``root`` is refused
    (:class:`Refused`) and nothing is written; a FIFO, a device or a symlink
    at the name is replaced, never opened or followed. An existing regular
    file's permission bits are kept. Other failures raise ``OSError``.
    """
    folders, name = relative_parts(root, path)
    folder = open_folder_inside(root, folders)
    try:
        _replace_at(folder, name, data)
    finally:
        os.close(folder)


def _replace_at(folder: int, name: str, data: bytes) -> None:
    temporary = _new_file(folder, f".{name}", data)
    try:
        try:
            existing = os.stat(name, dir_fd=folder, follow_symlinks=False)
            if stat.S_ISREG(existing.st_mode):
                os.chmod(temporary, stat.S_IMODE(existing.st_mode), dir_fd=folder)
        except FileNotFoundError:
            pass
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=folder)
        except FileNotFoundError:
            pass
        raise


def _new_file(folder: int, prefix: str, data: bytes) -> str:
    """A new file in ``folder`` (a descriptor) holding ``data``, created exclusively; its name."""
    import secrets

    while True:
        name = f"{prefix}.{secrets.token_hex(6)}.tmp"
        try:
            handle = os.open(name, _NEW_FILE_FLAGS, 0o666, dir_fd=folder)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
    except BaseException:
        os.unlink(name, dir_fd=folder)
        raise
    return name


def create_inside(root: str | os.PathLike[str], path: str | os.PathLike[str], data: bytes) -> bool:
    """Write ``data`` to ``path`` below ``root`` only if nothing has that name yet; whether it was written.

    Exclusive and without following a link, through a folder opened as
    :func:`replace_inside` opens it: for a file nia writes once and then
    leaves to the user (a ``.gitignore``).
    """
    folders, name = relative_parts(root, path)
    folder = open_folder_inside(root, folders)
    try:
        try:
            handle = os.open(name, _NEW_FILE_FLAGS, 0o666, dir_fd=folder)
        except FileExistsError:
            return False
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        return True
    finally:
        os.close(folder)


def remove_inside(root: str | os.PathLike[str], path: str | os.PathLike[str], *, folder: bool = False) -> bool:
    """Remove ``path`` below ``root`` (a file, or with ``folder`` an empty folder); whether it was removed.

    Through a folder opened as :func:`replace_inside` opens it, never
    following a link at the name: a link is removed, not its target. A
    folder that is not empty stays.
    """
    folders, name = relative_parts(root, path)
    try:
        parent = open_folder_inside(root, folders, create=False)
    except FileNotFoundError:
        return False
    try:
        if folder:
            os.rmdir(name, dir_fd=parent)
        else:
            os.unlink(name, dir_fd=parent)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if folder and exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            return False
        raise
    finally:
        os.close(parent)
    return True


# -- Files nia keeps for itself (the user cache folder) -------------------------------------------

PRIVATE_LIMIT = 16 * 1024 * 1024
"""The largest file nia reads back from its own folders (a listing of hundreds of plugins is well under 1 MiB)."""
_GROUP_OR_WORLD_WRITABLE = stat.S_IWGRP | stat.S_IWOTH


def _not_private(info: os.stat_result, what: str) -> str | None:
    """Why ``what`` (stat ``info``) cannot be trusted as the current user's alone, else ``None``."""
    if info.st_uid != os.geteuid():
        return f"{what} is owned by another user (uid {info.st_uid})"
    if info.st_mode & _GROUP_OR_WORLD_WRITABLE:
        return f"{what} is writable by other users (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def open_private_folder(path: str | os.PathLike[str], *, create: bool = False) -> int:
    """A descriptor on a folder of nia's own (its cache folder), checked to be the current user's alone.

    Another user who owns the folder, or may write in it (a shared
    ``XDG_CACHE_HOME``), could plant what a later run trusts: :class:`Refused`
    then says who owns it or its mode. ``create`` makes a missing folder
    (``0o700``). Every file in it is then opened through the descriptor, so a
    folder swapped after the check is never the one read. The caller closes it.
    """
    try:
        fd = os.open(path, _DIR_FLAGS)
    except FileNotFoundError:
        if not create:
            raise
        os.makedirs(path, 0o700, exist_ok=True)
        fd = os.open(path, _DIR_FLAGS)
    try:
        problem = _not_private(os.fstat(fd), "the folder")
    except BaseException:
        os.close(fd)
        raise
    if problem is not None:
        os.close(fd)
        raise Refused(problem)
    return fd


def _open_private(folder: str | os.PathLike[str], name: str, flags: int, *, create: bool = False) -> int:
    """A descriptor on ``folder/name`` opened with ``flags`` through a folder :func:`open_private_folder` trusts,
    checked to be a regular file the current user owns that no one else may write (:class:`Refused` else)."""
    folder_fd = open_private_folder(folder, create=create)
    try:
        try:
            fd = os.open(name, flags, 0o600, dir_fd=folder_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Refused("is a symbolic link") from None
            raise
    finally:
        os.close(folder_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused("is not a regular file")
        problem = _not_private(info, "it")
        if problem is not None:
            raise Refused(problem)
    except BaseException:
        os.close(fd)
        raise
    return fd


def tighten_own_folder(path: str | os.PathLike[str]) -> None:
    """Make a folder of nia's own that the current user owns, but others may write to, writable by its owner only.

    A plain ``mkdir`` under a ``002`` umask (the default for users of many
    Linux distributions) leaves a folder group-writable, which
    :func:`open_private_folder` refuses: for a folder nia made for itself
    with such a ``mkdir`` in an earlier release, that would lose what it
    keeps there for good. Only the write bits of group and others are
    removed, through a descriptor opened without following a link and
    checked to be a folder of the current user; anything else is left alone
    (and refused by :func:`open_private_folder`, as before).
    """
    try:
        fd = os.open(path, _DIR_FLAGS | _NOFOLLOW)
    except OSError:
        return
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & _GROUP_OR_WORLD_WRITABLE:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) & ~_GROUP_OR_WORLD_WRITABLE)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_private(folder: str | os.PathLike[str], name: str, limit: int = PRIVATE_LIMIT) -> bytes:
    """The bytes of ``folder/name``, a file nia wrote for itself; :class:`Refused` unless it can be trusted.

    The same rules as :func:`read_checked`, with the current user in place of
    the project root: the folder passes :func:`open_private_folder`; the file
    is opened through it with ``O_NOFOLLOW | O_NONBLOCK`` and must be a regular
    file the current user owns that no one else may write; at most
    ``limit + 1`` bytes are read, and more is refused. Raises ``OSError`` like
    :func:`open` for a missing file.
    """
    fd = _open_private(folder, name, _OPEN_FLAGS)
    try:
        data = read_fd(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Refused(f"is larger than {limit} bytes")
    return data


def read_private_end(folder: str | os.PathLike[str], name: str, size: int) -> bytes:
    """The last ``size`` bytes of ``folder/name`` (the whole of a shorter file), by :func:`read_private`'s rules.

    For a log nia appends to, whose newest lines are what a reader wants.
    """
    fd = _open_private(folder, name, _OPEN_FLAGS)
    try:
        end = os.fstat(fd).st_size
        os.lseek(fd, max(0, end - size), os.SEEK_SET)
        return read_fd(fd, size)[:size]
    finally:
        os.close(fd)


def append_private(folder: str | os.PathLike[str], name: str, data: bytes) -> int:
    """Add ``data`` at the end of ``folder/name`` (made ``0o600`` if missing); the file's size after it.

    By :func:`read_private`'s rules (a link, a FIFO or a device, another
    user's file or one others may write is :class:`Refused`, never waited on);
    the folder is made if missing, as by :func:`write_private`.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
    fd = _open_private(folder, name, flags | getattr(os, "O_CLOEXEC", 0), create=True)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def write_private(folder: str | os.PathLike[str], name: str, data: bytes) -> None:
    """Replace ``folder/name`` with ``data`` whole, in a folder :func:`open_private_folder` trusts (made if missing).

    A reader sees the old file or the new one. The temporary file is created
    through the folder's descriptor with ``O_EXCL | O_NOFOLLOW`` (mode
    ``0o600``) and named after this process, not made by :mod:`tempfile`
    (whose import costs a cached start more than the write). Raises
    ``OSError`` (:class:`Refused` for a folder another user could write to).
    """
    folder_fd = open_private_folder(folder, create=True)
    temporary = f".{name}-{os.getpid()}-{time.monotonic_ns()}.tmp"
    try:
        fd = os.open(temporary, _NEW_FILE_FLAGS, 0o600, dir_fd=folder_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=folder_fd)
        except OSError:
            pass
        raise
    finally:
        os.close(folder_fd)
