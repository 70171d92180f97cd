"""The folder of the resident processes' sockets: one per user, which only that user can enter.

``$XDG_RUNTIME_DIR/nia`` when the session has a runtime folder, else
``${TMPDIR:-/tmp}/nia-UID``. Only the user's environment and user id choose
it: nothing a repository contains does. Before a socket in it is used or made,
the folder is checked with ``lstat``: a real folder (not a symlink), owned by
this user, with no permission for anyone else, inside a folder no one else
can rename it out of (the parent is not writable by others, or is sticky like
``/tmp``). Anything else (someone else made ``/tmp/nia-1000`` first, say) is
refused, and the hooks answer in-process.

Standard library only: the thin client imports this module.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

TYPE_CHECKING = False  # not typing's: the thin client imports this module
if TYPE_CHECKING:
    import socket


class Unsafe(OSError):
    """The folder (or a socket in it) is not this user's alone: no resident process is used."""


def location() -> str:
    """Where the folder is (it may not exist yet)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "nia")
    base = os.environ.get("TMPDIR", "")
    return os.path.join(base if os.path.isabs(base) else "/tmp", f"nia-{os.getuid()}")


def folder(*, create: bool) -> str:
    """The checked folder, made (``0700``) when missing and ``create``; :class:`Unsafe` or ``FileNotFoundError``."""
    path = location()
    parent = os.path.dirname(path)
    try:
        above = os.stat(parent)
    except OSError as exc:
        raise Unsafe(f"{parent} cannot be used ({exc.strerror})") from None
    if above.st_mode & 0o022 and not above.st_mode & stat.S_ISVTX:
        raise Unsafe(f"{parent} can be written by others and is not sticky")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # made meanwhile (by another hook, or someone else): checked below
        info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise Unsafe(f"{path} is not a folder")
    if info.st_uid != os.getuid():
        raise Unsafe(f"{path} belongs to another user")
    if info.st_mode & 0o077:
        raise Unsafe(f"{path} can be entered by other users (mode {stat.S_IMODE(info.st_mode):o})")
    return path


def socket_ok(path: str) -> None:
    """Raise :class:`Unsafe` unless ``path`` is a socket owned by this user (``FileNotFoundError`` if absent)."""
    info = os.lstat(path)
    if not stat.S_ISSOCK(info.st_mode):
        raise Unsafe(f"{path} is not a socket")
    if info.st_uid != os.getuid():
        raise Unsafe(f"{path} belongs to another user")


def connect(conn: socket.socket, path: str) -> None:
    """``conn.connect(path)``, also for a path longer than ``AF_UNIX`` takes (see :func:`address`)."""
    _at(conn.connect, path)


def bind(conn: socket.socket, path: str) -> None:
    """``conn.bind(path)``, also for a path longer than ``AF_UNIX`` takes (see :func:`address`)."""
    _at(conn.bind, path)


def _at(use: Callable[[str], None], path: str) -> None:
    where, held = address(path)
    try:
        use(where)
    finally:
        if held is not None:
            os.close(held)


def address(path: str) -> tuple[str, int | None]:
    """An ``AF_UNIX`` address for ``path`` and the descriptor to close once it is used.

    A socket's address holds at most 107 bytes, and a runtime folder or
    ``TMPDIR`` can be longer. Such a path is reached as
    ``/proc/self/fd/N/NAME`` through a descriptor on its folder (Linux, where
    resident processes run), so the folder's length never matters.
    """
    if len(os.fsencode(path)) < 108:
        return path, None
    held = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return f"/proc/self/fd/{held}/{os.path.basename(path)}", held
