"""The resident processes of this user, for ``nia hook status`` and ``nia hook stop``.

Each resident keeps three files in the private folder (:mod:`nia_core.resident.folder`):
``KEY.sock`` (its socket), ``KEY.lock`` (held while it runs) and ``KEY.json``
(what it serves, for people). Listing reads them and changes nothing; a file
left by a resident that was killed is not listed (its lock is free).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from nia_core.files import read_private
from nia_core.resident import folder


def metadata_path(place: str, key: str) -> str:
    return os.path.join(place, key + ".json")


@dataclass(frozen=True)
class Resident:
    """One running resident process."""

    key: str
    pid: int
    started: float
    cwd: str
    projects: tuple[str, ...] = ()
    memory: int | None = None
    """Resident set size in bytes (``/proc``), when known."""
    nia: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    ready: bool = True
    """Whether it answers hooks yet (``False``: still loading)."""

    @property
    def age(self) -> float:
        return max(0.0, time.time() - self.started)

    def as_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "projects": list(self.projects),
            "cwd": self.cwd,
            "age_seconds": round(self.age, 1),
            "memory_bytes": self.memory,
            "nia": self.nia,
            "key": self.key,
            "ready": self.ready,
        }


def running() -> tuple[list[Resident], str]:
    """The resident processes running now (starting ones too), oldest first, and a problem with the folder."""
    try:
        place = folder.folder(create=False)
    except FileNotFoundError:
        return [], ""
    except OSError as exc:
        return [], str(exc)
    found: list[Resident] = []
    for name in sorted(os.listdir(place)):
        if not name.endswith(".json") or name.startswith("."):
            continue
        key = name[: -len(".json")]
        if not _locked(os.path.join(place, key + ".lock")):
            continue
        resident = _read(place, key)
        if resident is not None:
            found.append(resident)
    return sorted(found, key=lambda r: r.started), ""


def _locked(path: str) -> bool:
    """Whether a running resident holds this lock file (read-only: the file is never created)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _read(place: str, key: str) -> Resident | None:
    try:
        data = json.loads(read_private(place, key + ".json", 1 << 20))
        pid = int(data["pid"])
        started = float(data["started"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    projects = data.get("projects")
    return Resident(
        key,
        pid,
        started,
        str(data.get("cwd") or ""),
        tuple(str(p) for p in projects) if isinstance(projects, list) else (),
        _memory(pid),
        str(data.get("nia") or ""),
        data.get("options") if isinstance(data.get("options"), dict) else {},
        bool(data.get("ready", True)),
    )


def _memory(pid: int) -> int | None:
    """``VmRSS`` of ``/proc/PID/status`` in bytes (Linux), else ``None``."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def stop(resident: Resident, timeout: float = 5.0) -> bool:
    """Ask ``resident`` to end (over its socket, with a hook's user check); ``SIGTERM`` when it does not answer."""
    from nia_core.resident.client import NoAnswer, peer

    try:
        place = folder.folder(create=False)
    except OSError:
        return False
    path = os.path.join(place, resident.key + ".sock")
    if not resident.ready:
        return _terminate(place, resident, timeout)
    with contextlib.suppress(OSError, NoAnswer), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        folder.socket_ok(path)
        conn.settimeout(timeout)
        folder.connect(conn, path)
        pid = peer(conn)
        conn.sendall(json.dumps({"stop": True}).encode("ascii"))
        conn.shutdown(socket.SHUT_WR)
        reply = conn.recv(4096)
        if pid == resident.pid and reply and _ended(place, resident.key, timeout):
            return True
    return _terminate(place, resident, timeout)


def _terminate(place: str, resident: Resident, timeout: float) -> bool:
    """``SIGTERM`` to a resident still holding its lock (one loading plugins, or one that does not answer)."""
    if _locked(os.path.join(place, resident.key + ".lock")):
        import signal

        with contextlib.suppress(OSError):
            os.kill(resident.pid, signal.SIGTERM)
    return _ended(place, resident.key, timeout)


def _ended(place: str, key: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _locked(os.path.join(place, key + ".lock")):
            return True
        time.sleep(0.05)
    return False
