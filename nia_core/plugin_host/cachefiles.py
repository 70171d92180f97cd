"""The user cache folder and its files: what a later run may reuse, read back only when it can be trusted.

Every file nia keeps in the cache folder (the entry-point scans, the
``--help`` rows) is read with :func:`read_cache` and written with
:func:`write_cache`, on top of :func:`nia_core.files.read_private` and
:func:`~nia_core.files.write_private`. A cache file is used only when it is a
regular file of at most :data:`~nia_core.files.PRIVATE_LIMIT` bytes of JSON,
owned by the current user, and neither it nor its folder is writable by
anyone else; otherwise it is ignored, and ``--debug`` says why. The caller then
checks the JSON's shape (:func:`shaped`) before it trusts any value in it, so a
damaged file is a cache miss, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
from typing import Any

from nia_core.files import Refused, open_private_folder, read_private, tighten_own_folder, write_private

log = logging.getLogger("nia.cache")


def cache_folder() -> str:
    """``NIA_CACHE_DIR``, else ``$XDG_CACHE_HOME/nia``, else ``~/.cache/nia``."""
    explicit = os.environ.get("NIA_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "nia")


_TIGHTENED: set[str] = set()


def _own_folder() -> str:
    """:func:`cache_folder`, once per process made writable by its owner only if an earlier nia left it writable
    by its group (a plain ``mkdir`` under a ``002`` umask): else every cache would be ignored for good.

    What the folder held then is removed, not trusted: a cache decides which modules nia imports, and any
    file in it may have been planted while others could write there. A folder anyone may write to is not
    what such a ``mkdir`` makes: it is left as it is, and ignored.
    """
    folder = cache_folder()
    if folder not in _TIGHTENED:
        _TIGHTENED.add(folder)
        try:
            mode = os.stat(folder).st_mode
        except OSError:
            return folder
        if mode & stat.S_IWGRP and not mode & stat.S_IWOTH:
            tighten_own_folder(folder)  # only a folder of the current user's, reached without a link
            _forget_planted(folder, stat.S_IMODE(mode))
    return folder


def _forget_planted(folder: str, mode: int) -> None:
    try:
        fd = open_private_folder(folder)  # refused unless the folder is now the current user's alone
    except OSError:
        return
    try:
        for name in os.listdir(fd):
            if name.endswith(".json"):
                log.debug(
                    "cache file %s ignored: the folder was writable by other users (mode %o); now %o, the file removed",
                    os.path.join(folder, name),
                    mode,
                    mode & ~0o022,
                )
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
    except OSError:
        return
    finally:
        os.close(fd)


def cache_enabled() -> bool:
    """``NIA_NO_CACHE=1`` turns every cache off."""
    return os.environ.get("NIA_NO_CACHE", "") in ("", "0")


def digest(text: str) -> str:
    """A short stable name for ``text`` (the first 64 bits of its SHA-256): for file names only, each file holds
    its full key."""
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def read_cache(name: str) -> Any:
    """The JSON in the cache file ``name``, or ``None`` when it is absent or cannot be trusted (said under --debug).

    ``None`` is never a valid cache: every cache file holds an object.
    """
    folder = _own_folder()
    try:
        data = read_private(folder, name)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.debug("cache file %s ignored: %s", os.path.join(folder, name), _reason(exc))
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested past the parser's depth
        log.debug("cache file %s ignored: not JSON nia wrote (%s)", os.path.join(folder, name), type(exc).__name__)
        return None


def ignored(name: str, why: str) -> None:
    """Say under ``--debug`` that the cache file ``name`` was read but its content is not what nia writes."""
    log.debug("cache file %s ignored: %s", os.path.join(cache_folder(), name), why)


def write_cache(name: str, value: Any) -> bool:
    """Replace the cache file ``name`` with ``value`` as JSON; ``False`` (said under --debug) when it was not written.

    A read-only home, or a cache folder another user could write to, is no
    reason to fail a command: the next run computes again.
    """
    try:
        write_private(_own_folder(), name, json.dumps(value).encode("utf-8"))
    except OSError as exc:
        log.debug("cache file %s not written: %s", os.path.join(cache_folder(), name), _reason(exc))
        return False
    return True


def prune(prefix: str, keep: int) -> None:
    """Remove the oldest cache files named ``prefix*.json`` beyond ``keep``, in a folder nia trusts."""
    try:
        folder = open_private_folder(_own_folder())
    except OSError:
        return
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(".json")]
        if len(names) <= keep:
            return
        dated = sorted(names, key=lambda n: _mtime_in(folder, n), reverse=True)
        for name in dated[keep:]:
            try:
                os.unlink(name, dir_fd=folder)
            except OSError:
                pass
    except OSError:
        return
    finally:
        os.close(folder)


def _mtime_in(folder: int, name: str) -> int:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False).st_mtime_ns
    except OSError:
        return 0


def _reason(exc: OSError) -> str:
    return exc.problem if isinstance(exc, Refused) else (exc.strerror or type(exc).__name__)


def shaped(value: Any, shape: Any) -> bool:
    """Whether JSON ``value`` has ``shape``, checked whole before any value in it is used.

    A shape is a type or a tuple of types (any of them; ``int`` never matches
    a bool), ``[item]`` (a list of items of that shape), :class:`Pair`
    (a list of exactly those shapes) or ``{key: shape}`` (an object with at
    least those keys). Iterative: a deep value costs no recursion of nia's own.
    """
    stack = [(value, shape)]
    while stack:
        item, want = stack.pop()
        if isinstance(want, dict):
            if not isinstance(item, dict) or not all(k in item for k in want):
                return False
            stack.extend((item[k], v) for k, v in want.items())
        elif isinstance(want, list):
            if not isinstance(item, list):
                return False
            stack.extend((element, want[0]) for element in item)
        elif isinstance(want, Pair):
            if not isinstance(item, list) or len(item) != len(want.items):
                return False
            stack.extend(zip(item, want.items, strict=True))
        else:
            kinds = want if isinstance(want, tuple) else (want,)
            if not any(type(item) is kind or (kind is not int and isinstance(item, kind)) for kind in kinds):
                return False
    return True


class Pair:
    """A shape for :func:`shaped`: a JSON list of exactly these shapes, in order."""

    __slots__ = ("items",)

    def __init__(self, *items: Any) -> None:
        self.items = items
