"""The GitHub token: from the environment, else from ``gh auth token``; never printed, never logged.

``gh`` is the user's own program, but nia runs at every prompt in
repositories it has never seen, so it runs ``gh`` the way it runs git: the
first ``gh`` on ``PATH`` outside the project (relative entries and folders
inside the project are skipped, and ``gh`` gets that ``PATH``), in the home
folder rather than the project (no repository's ``.git`` or config is in
reach), with stdin closed, its own process group, and a deadline after which
the group is killed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

ENV_TOKENS = ("GH_TOKEN", "GITHUB_TOKEN")
ENTERPRISE_TOKENS = ("GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
GH_SECONDS = 3.0
KEEP_SECONDS = 600.0
"""How long a token ``gh`` gave is reused before ``gh`` is asked again (a refused one is dropped at once)."""
NONE_SECONDS = 60.0
"""How long "``gh`` gave none" stands (so a ``gh auth login`` during a session is seen within a minute)."""


@dataclass(frozen=True)
class Token:
    value: str
    source: str
    """Where it came from, for messages: ``GH_TOKEN``, ``gh auth token``."""

    def __repr__(self) -> str:  # a token in a traceback or a debug print is a leak
        return f"Token(source={self.source!r})"


def usable(value: str) -> bool:
    """A value HTTP can carry as a bearer token (no space, no control character)."""
    return 0 < len(value) <= 1024 and all(33 <= ord(ch) < 127 for ch in value)


def _inside(path: str, root: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


def outside_path(root: str) -> str:
    """``PATH`` without relative entries and folders whose real path lies in the project."""
    kept = [
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and os.path.isabs(entry) and not _inside(entry, root)
    ]
    return os.pathsep.join(dict.fromkeys(kept))


def run_gh(host: str, root: str, seconds: float = GH_SECONDS) -> str | None:
    """``gh auth token --hostname HOST``'s answer, or ``None`` (no gh, no login, an error, past the deadline)."""
    path = outside_path(root)
    program = shutil.which("gh", path=path)
    if program is None or _inside(program, root):
        return None
    home = os.path.expanduser("~")
    keep = (
        "HOME",
        "USER",
        "LOGNAME",
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_DATA_HOME",
        "GH_CONFIG_DIR",
        "LANG",
        "LC_ALL",
        "TMPDIR",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    )
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(PATH=path, GH_PROMPT_DISABLED="1", GH_NO_UPDATE_NOTIFIER="1", NO_COLOR="1", GH_PAGER="cat")
    try:
        process = subprocess.Popen(
            [program, "auth", "token", "--hostname", host],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=home if os.path.isdir(home) and not _inside(home, root) else "/",
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return None
    try:
        out, _ = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.communicate()
        return None
    if process.returncode != 0:
        return None
    lines = out[: 64 * 1024].decode("ascii", errors="replace").splitlines()
    return lines[0].strip() if lines and usable(lines[0].strip()) else None


class Tokens:
    """The token for a host, remembered for a while (``gh`` is not asked at every prompt)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gh: dict[str, tuple[float, Token | None]] = {}

    def get(self, host: str, root: str, *, enterprise: bool) -> Token | None:
        for name in ENTERPRISE_TOKENS if enterprise else ENV_TOKENS:
            value = os.environ.get(name, "").strip()
            if usable(value):
                return Token(value, name)
        with self._lock:
            known = self._gh.get(host)
            if known is not None and time.monotonic() - known[0] < (KEEP_SECONDS if known[1] else NONE_SECONDS):
                return known[1]
        answer = run_gh(host, root)
        token = Token(answer, "gh auth token") if answer else None
        with self._lock:
            self._gh[host] = (time.monotonic(), token)
        return token

    def refused(self, host: str) -> None:
        """The server said 401: ask ``gh`` again next time."""
        with self._lock:
            self._gh.pop(host, None)
