"""The ``nia-git`` plugin's code: the repository's branch, HEAD and working tree, kept current during a session.

:mod:`nia_plugins.git` is the plugin; it imports this module only at a
Location with a ``.git`` above it (or with settings to check).

The first built-in whose value changes while the agent works: a checkout in
another terminal, a commit, a stash. It exists only at Locations inside a git
work tree. Observation is cheap when nothing changed: a dozen ``stat`` calls
on the files git itself updates (``HEAD``, the ref it points to, the index,
``packed-refs``, ...); ``git status`` runs only when one of them moved, or when
the working-tree refresh interval elapsed (an edit does not touch ``.git/``).

nia runs in freshly cloned, possibly hostile repositories, so every git
process gets a timeout, a clean environment, and ``-c`` options that switch
off whatever the repository's own config could make git run (an fsmonitor
hook, filter drivers, hooks, fetches from a promisor remote).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from functools import lru_cache
from typing import Any

from nia_core import UNAVAILABLE, ContextSource, Location, StatCache
from nia_core.lazylog import lazy_logger
from nia_core.records import record

KEY = "nia/git"

log = lazy_logger("nia.plugins.git")
_files = StatCache()

# -- settings -----------------------------------------------------------------------------


@record(frozen=True)
class Settings:
    """``[plugins.nia-git]`` in ``.nia/project.toml``."""

    paths: int = 10
    """Changed paths named in the summary; the rest are counted ("and N more")."""
    refresh: float = 2.0
    """Seconds after which the working tree is looked at again although nothing under ``.git/`` moved."""
    untracked: bool = True
    """Whether untracked files are looked for and counted."""
    timeout: float = 3.0
    """Seconds the git calls of one observation may take together before they are killed."""


def _number(config: dict[str, Any], name: str, default: float, *, integer: bool, positive: bool) -> Any:
    value = config.get(name, default)
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < 0 or (positive and value == 0):
        what = "a whole number" if integer else "a number of seconds"
        sign = "greater than 0" if positive else "0 or more"
        raise ValueError(f"[plugins.nia-git] {name} must be {what}, {sign}, not {value!r}")
    return value


def settings_from(config: dict[str, Any]) -> Settings:
    """Validate the plugin's table; a bad value is one line naming the key."""
    unknown = sorted(set(config) - {f.name for f in dataclasses.fields(Settings)})
    if unknown:
        raise ValueError(f"[plugins.nia-git] has no setting {unknown[0]!r} (known: paths, refresh, timeout, untracked)")
    untracked = config.get("untracked", True)
    if not isinstance(untracked, bool):
        raise ValueError(f"[plugins.nia-git] untracked must be true or false, not {untracked!r}")
    return Settings(
        paths=_number(config, "paths", 10, integer=True, positive=False),
        refresh=float(_number(config, "refresh", 2.0, integer=False, positive=False)),
        untracked=untracked,
        timeout=float(_number(config, "timeout", 3.0, integer=False, positive=True)),
    )


# -- finding the repository ---------------------------------------------------------------


@record(frozen=True)
class Repository:
    worktree: str
    """The folder holding ``.git``."""
    dotgit: str
    """``worktree/.git``: a folder, or a file naming the git dir (linked worktrees, submodules)."""
    gitdir: str
    """Per-worktree files: ``HEAD``, ``index``, in-progress operations."""
    commondir: str
    """Shared files: refs, ``packed-refs``, ``config``, the stash."""


SMALL_FILE = 1024 * 1024
"""At most this much of a file nia reads from a git directory (HEAD, a ref, ``commondir``, config)."""


def _read_small(path: str, folder: str) -> str | None:
    """The text of ``path``, through the checked reader: a regular file really inside ``folder``, bounded.

    A FIFO, a device, a symlink leading out of ``folder`` or a file that does
    not exist is ``None``: what git keeps is described only from inside it.
    """
    try:
        return _files.read_text(path, root=folder, limit=SMALL_FILE)
    except OSError:
        return None


def _is_git_dir(path: str) -> bool:
    """What git checks before taking a ``.git`` folder as a repository (else it looks further up)."""
    common = path
    pointer = _read_small(os.path.join(path, "commondir"), path)
    if pointer is not None and pointer.strip():
        common = os.path.normpath(os.path.join(path, pointer.strip()))
    return (
        os.path.isfile(os.path.join(path, "HEAD"))
        and os.path.isdir(os.path.join(common, "objects"))
        and os.path.isdir(os.path.join(common, "refs"))
    )


def _repository(worktree: str, dotgit: str, is_dir: bool) -> Repository:
    gitdir = dotgit
    if not is_dir:
        text = _read_small(dotgit, worktree) or ""
        first = text.splitlines()[0] if text else ""
        if first.startswith("gitdir:"):
            gitdir = os.path.normpath(os.path.join(worktree, first[len("gitdir:") :].strip()))
    commondir = gitdir
    pointer = _read_small(os.path.join(gitdir, "commondir"), gitdir)
    if pointer is not None and pointer.strip():
        commondir = os.path.normpath(os.path.join(gitdir, pointer.strip()))
    return Repository(worktree, dotgit, gitdir, commondir)


def _within(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _configured_worktree(gitdir: str) -> str | None:
    """``core.worktree`` of a git dir's own config file (what a submodule's git dir points back with)."""
    text = _read_small(os.path.join(gitdir, "config"), gitdir)
    if text is None:
        return None
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped[1:].split("]")[0].strip().lower()
        elif section == "core" and "=" in stripped:
            key, _, value = stripped.partition("=")
            if key.strip().lower() == "worktree":
                value = value.strip().strip('"')
                return os.path.normpath(os.path.join(gitdir, value))
    return None


def untrusted(repo: Repository, root: str) -> str | None:
    """Why the repository's git dir is not read, or ``None``.

    A ``.git`` file or a ``commondir`` file can point anywhere: a cloned
    repository would make nia describe another repository of the user's to
    the model (its branch, its last commit, its file names); so can a ``.git``
    folder that is a symlink (an unpacked archive). A git dir outside the
    project is read only when it points back, as linked worktrees (``gitdir``)
    and submodules (``core.worktree``) do; a ``commondir`` must hold the git
    dir, as in ``.git/worktrees/NAME``.
    """
    if repo.commondir != repo.gitdir and not _within(repo.gitdir, repo.commondir):
        return "its git directory names a `commondir` elsewhere, which nia does not follow"
    if _within(repo.gitdir, repo.worktree) or _within(repo.gitdir, root):
        return None
    back = _read_small(os.path.join(repo.gitdir, "gitdir"), repo.gitdir)
    if (
        back is not None
        and back.strip()
        and os.path.realpath(os.path.join(repo.gitdir, back.strip())) == os.path.realpath(repo.dotgit)
    ):
        return None
    configured = _configured_worktree(repo.gitdir)
    if configured is not None and os.path.realpath(configured) == os.path.realpath(repo.worktree):
        return None
    if repo.gitdir == repo.dotgit:
        return "the `.git` folder is a symlink to a git directory outside the project that does not point back to it"
    return "the `.git` file points to a git directory outside the project that does not point back to it"


def _ceilings() -> tuple[str, ...]:
    value = os.environ.get("GIT_CEILING_DIRECTORIES", "")
    return tuple(os.path.normpath(p) for p in value.split(os.pathsep) if os.path.isabs(p))


def find_repository(start: str) -> Repository | None:
    """The repository whose work tree holds ``start``, found as git finds it (``None`` outside one).

    Like git, the search upward stops at a filesystem boundary (unless
    ``GIT_DISCOVERY_ACROSS_FILESYSTEM``) and before any ``GIT_CEILING_DIRECTORIES``.
    """
    ceilings = _ceilings()
    across = os.environ.get("GIT_DISCOVERY_ACROSS_FILESYSTEM", "").lower() in ("1", "true", "yes", "on")
    try:
        device = os.stat(start).st_dev
    except OSError:
        return None
    folder = start
    while True:
        dotgit = os.path.join(folder, ".git")
        if os.path.isfile(dotgit) or (os.path.isdir(dotgit) and _is_git_dir(dotgit)):
            if start == dotgit or start.startswith(dotgit + os.sep):
                return None  # inside the git dir itself: not a work tree
            return _repository(folder, dotgit, os.path.isdir(dotgit))
        parent = os.path.dirname(folder)
        if parent == folder or parent in ceilings:
            return None
        if not across:
            try:
                if os.stat(parent).st_dev != device:
                    return None
            except OSError:
                return None
        folder = parent


# -- the value ----------------------------------------------------------------------------


@record(frozen=True)
class GitStatus:
    """What the model is told; compared by value, so equal states cost no message."""

    error: str = ""
    """Why git could not tell (then every other field is empty)."""
    branch: str = ""
    detached: bool = False
    oid: str = ""
    """HEAD's full id; empty before the first commit."""
    head: str = ""
    """HEAD's short id."""
    subject: str = ""
    parents: tuple[str, ...] = ()
    upstream: str = ""
    ahead: int | None = None
    behind: int | None = None
    """``None`` with an upstream: the upstream branch is gone."""
    operations: tuple[str, ...] = ()
    rebasing: str = ""
    """The branch being rebased, during a rebase."""
    stashes: int = 0
    staged: int = 0
    modified: int = 0
    untracked: int | None = 0
    """``None``: untracked files are not looked for (``untracked = false``)."""
    conflicted: int = 0
    entries: tuple[tuple[str, str], ...] = ()
    """``(path, label)`` of the changed paths named, project-relative and escaped."""
    more: int = 0
    """Changed paths not named."""

    @property
    def clean(self) -> bool:
        return not self.entries and not self.more


class GitStatusCodec:
    """A frozen dataclass of JSON-compatible fields; lists come back as tuples."""

    def encode(self, value: GitStatus) -> Any:
        return dataclasses.asdict(value)

    def decode(self, data: Any) -> GitStatus:
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for GitStatus, got {type(data).__name__}")
        return GitStatus(**{key: _tuples(item) for key, item in data.items()})


def _tuples(value: Any) -> Any:
    return tuple(_tuples(item) for item in value) if isinstance(value, list) else value


# -- escaping -----------------------------------------------------------------------------

MAX_PATH = 300
MAX_TEXT = 200


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if ch in named:
        return named[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return text[:half] + "…" + text[-half:]


def plain(text: str, limit: int = MAX_TEXT) -> str:
    """One line of text from the repository: anything that is not printable is escaped."""
    return _shorten("".join(ch if ch.isprintable() else _escape_char(ch) for ch in text), limit)


def quoted(name: str, limit: int = MAX_PATH) -> str:
    """A path or ref name for a code span: as is when harmless, else C-quoted like git does.

    No character of the result can end the code span or the line it is on.
    """
    if name and all(ch.isprintable() and ch not in '`"\\' for ch in name):
        return _shorten(name, limit)
    out = []
    for ch in name:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "`":
            out.append("\\x60")
        else:
            out.append(ch if ch.isprintable() else _escape_char(ch))
    return '"' + _shorten("".join(out), limit) + '"'


# -- running git --------------------------------------------------------------------------

SAFE_OPTIONS = (
    "--no-pager",
    "--no-optional-locks",  # never take (or wait for) the index lock, never rewrite the index
)
"""Options every git call gets; its configuration overrides go through the environment (:func:`git_environment`)."""

SWITCHED_OFF: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),  # a program git status asks which files changed
    ("core.hooksPath", "/dev/null"),  # hooks (post-index-change, ...)
    ("core.pager", "cat"),
    ("status.submoduleSummary", "false"),  # would run `git submodule summary`
    ("log.showSignature", "false"),  # would run gpg.program
    ("credential.helper", ""),  # an empty value empties the list of helpers
    ("protocol.allow", "never"),
    ("color.ui", "never"),
    ("i18n.logOutputEncoding", "UTF-8"),
)
"""Configuration every git call gets, whatever any config file says (the command scope wins over all files)."""

NO_PROTOCOL = "nia_allows_none"
"""``GIT_ALLOW_PROTOCOL``: a list naming no transport (``_`` is in no URL scheme nor remote-helper name).

It overrides every ``protocol.*`` setting, so no fetch can start: no lazy
fetch from a promisor remote, and so no ssh, proxy, askpass, credential
helper, upload-pack or remote helper a repository's config names.
"""


class GitFailed(Exception):
    """git could not tell; ``str()`` is the one-line reason the model and the log get."""


class GitTimedOut(GitFailed):
    pass


def git_environment(search: str, overrides: tuple[tuple[str, str], ...] = ()) -> dict[str, str]:
    """The environment of every git call: nothing that could point git elsewhere, page, prompt or fetch.

    Configuration goes in as ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``
    pairs: a key is never split at ``=`` as ``-c KEY=VALUE`` is, so a name the
    repository chose (``[filter "x=y"]``, ``[filter ""]``) is overridden as it
    is. ``search`` is the ``PATH`` git gets: the folders outside the project.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("LANGUAGE", "PAGER")}
    config = (*SWITCHED_OFF, *overrides)
    env.update(
        PATH=search,
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",  # set and empty: neither core.askPass nor SSH_ASKPASS is asked
        GIT_ALLOW_PROTOCOL=NO_PROTOCOL,
        GIT_OPTIONAL_LOCKS="0",
        GIT_NO_LAZY_FETCH="1",
        GIT_PAGER="cat",
        PAGER="cat",
        LC_ALL="C",
        GIT_CONFIG_COUNT=str(len(config)),
    )
    for index, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def _git_in(folder: str) -> str | None:
    """``shutil.which("git", path=folder)``; on POSIX without importing shutil (and bz2, lzma), ~2 ms a process."""
    if os.name == "nt":  # PATHEXT and friends
        import shutil

        return shutil.which("git", path=folder)
    candidate = os.path.join(folder, "git")
    if os.path.exists(candidate) and os.access(candidate, os.F_OK | os.X_OK) and not os.path.isdir(candidate):
        return candidate
    return None


@record(frozen=True)
class GitProgram:
    """The git nia runs, and the ``PATH`` it runs with."""

    path: str
    search: str
    """``PATH`` without relative entries nor folders inside the project: where git finds what it runs."""


def _inside_any(path: str, folders: tuple[str, ...]) -> bool:
    real = os.path.realpath(path)
    return any(real == folder or real.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


@lru_cache(maxsize=8)
def find_git(path_variable: str, project: tuple[str, ...]) -> GitProgram | str:
    """The first ``git`` on PATH outside ``project`` (real folders), or why there is none; once per PATH and project.

    A PATH entry that is relative ("." would run a ``git`` shipped in the
    repository) or whose real folder lies inside the project is left out, as
    is a ``git`` that is a link into it; git itself gets the PATH that is left,
    so neither does it run a program of the project's by name.
    """
    kept: list[str] = []
    for folder in path_variable.split(os.pathsep):
        if folder and os.path.isabs(folder) and not _inside_any(folder, project):
            kept.append(folder)
    search = os.pathsep.join(kept)
    planted = False
    for folder in kept:
        found = _git_in(folder)
        if found is None:
            continue
        if _inside_any(found, project):
            planted = True
            continue
        left_out = len([f for f in path_variable.split(os.pathsep) if f]) - len(kept)
        log.debug("%s: runs %s (the first `git` on PATH outside the project; %d left out)", KEY, found, left_out)
        return GitProgram(found, search)
    if planted or any(_git_in(folder) for folder in path_variable.split(os.pathsep) if folder and folder not in kept):
        return "the only `git` executables on PATH are inside the project, which nia never runs"
    return "no `git` executable was found on PATH"


def git_program(repo: Repository, root: str) -> GitProgram | str:
    project = tuple(dict.fromkeys(os.path.realpath(folder) for folder in (root, repo.worktree)))
    return find_git(os.environ.get("PATH", os.defpath), project)


@record(frozen=True)
class Budget:
    """The time one observation's git calls share: together they never take longer than ``seconds``."""

    seconds: float
    deadline: float

    @classmethod
    def of(cls, seconds: float) -> Budget:
        return cls(seconds, time.monotonic() + seconds)


class Started:
    """A git process started in a session (so a process group) of its own, collected or killed exactly once.

    POSIX: ``os.posix_spawn`` with pipes read through ``select.poll``, because
    importing :mod:`subprocess` (with ``selectors``, ``signal``, ``locale``)
    costs ~3.5 ms, more than a git call, in every fresh hook process.
    """

    def __init__(self, pid: int, out: int, err: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pipes = {out: bytearray(), err: bytearray()}
        self._out, self._err = out, err
        self._closed = False

    def collect(self, deadline: float) -> tuple[bytes, bytes] | None:
        """Its stdout and stderr once it exited; ``None`` when ``deadline`` (monotonic) came first."""
        import select

        open_fds = [fd for fd in self._pipes if fd >= 0]
        poller = select.poll()
        for fd in open_fds:
            poller.register(fd, select.POLLIN)
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            for fd, _event in poller.poll(int(left * 1000) + 1):
                data = os.read(fd, 65536)
                if data:
                    self._pipes[fd] += data
                else:
                    poller.unregister(fd)
                    open_fds.remove(fd)
        while self.returncode is None:  # the pipes closed; the process ends a moment later
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
            elif time.monotonic() >= deadline:
                return None
            else:
                time.sleep(0.0005)
        self._close()
        return bytes(self._pipes[self._out]), bytes(self._pipes[self._err])

    def kill(self) -> None:
        """Kill its whole process group and reap it; never waits on a pipe a stray process may hold."""
        if self.returncode is None:
            import signal  # the error path only

            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        self._close()

    def _close(self) -> None:
        """Once: a second close could hit a descriptor another thread has opened since."""
        if not self._closed:
            self._closed = True
            for fd in self._pipes:
                os.close(fd)


class _Popened(Started):
    """Where ``posix_spawn`` cannot start a session (Windows, old libcs): :mod:`subprocess`."""

    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.returncode = None

    def collect(self, deadline: float) -> tuple[bytes, bytes] | None:
        import subprocess

        try:
            out, err = self.proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None
        self.returncode = self.proc.returncode
        return out, err

    def kill(self) -> None:
        if self.returncode is None:
            import signal

            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (OSError, AttributeError):  # AttributeError: no process groups (Windows)
                self.proc.kill()
            self.proc.communicate()
            self.returncode = self.proc.returncode


def _inheritable_fds() -> list[int] | None:
    """Descriptors past stderr a child would inherit (Linux; ``None``: cannot tell here).

    ``posix_spawn`` cannot close every descriptor as ``subprocess``'s
    ``close_fds`` does, so these are closed one by one in the child. nia opens
    none; the process that started nia may have left some.
    """
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        return None
    inheritable = []
    for fd in fds:
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    inheritable.append(fd)
            except OSError:
                pass  # the listing's own descriptor, closed by now
    return inheritable


def _spawn(command: list[str], env: dict[str, str]) -> Started:
    """``command`` in a new session, stdin ``/dev/null``, no descriptor but its stdio inherited."""
    inherited = _inheritable_fds() if hasattr(os, "posix_spawn") else None
    if inherited is not None:
        out_r, out_w = os.pipe()  # both ends close on exec: git gets them only as its fd 1 and 2
        err_r, err_w = os.pipe()
        actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_CLOSE, fd) for fd in inherited]
        actions += [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
        ]
        try:
            pid = os.posix_spawn(command[0], command, env, file_actions=actions, setsid=True)
        except BaseException as exc:
            os.close(out_r)
            os.close(err_r)
            # No POSIX_SPAWN_SETSID in this libc, or one that fails closing a descriptor closed meanwhile.
            if not isinstance(exc, NotImplementedError) and not (isinstance(exc, OSError) and inherited):
                raise
        else:
            return Started(pid, out_r, err_r)
        finally:
            os.close(out_w)
            os.close(err_w)
    import subprocess

    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    return _Popened(proc)


def start_git(
    git: GitProgram,
    repo: Repository,
    name: str,
    args: list[str],
    budget: Budget,
    overrides: tuple[tuple[str, str], ...] = (),
) -> Started:
    """Start ``git ... NAME`` in the work tree, in a process group of its own; :func:`wait_git` collects it."""
    if budget.deadline - time.monotonic() <= 0:
        raise GitTimedOut(f"`git {name}` did not answer within {budget.seconds:g}s")
    try:
        return _spawn([git.path, *SAFE_OPTIONS, "-C", repo.worktree, *args], git_environment(git.search, overrides))
    except OSError as exc:
        raise GitFailed(f"git could not be started ({exc.strerror or exc})") from None


def wait_git(proc: Started, name: str, budget: Budget) -> tuple[int, bytes, bytes]:
    """What a started git said; its whole process group is killed when the budget runs out."""
    said = proc.collect(budget.deadline)
    if said is None or proc.returncode is None:
        proc.kill()
        raise GitTimedOut(f"`git {name}` did not answer within {budget.seconds:g}s")
    return proc.returncode, said[0], said[1]


def stop_git(proc: Started) -> None:
    """Kill a started git's process group (if it still runs) and reap it: nothing is left behind."""
    proc.kill()


def run_git(
    git: GitProgram,
    repo: Repository,
    name: str,
    args: list[str],
    budget: Budget,
    overrides: tuple[tuple[str, str], ...] = (),
) -> tuple[int, bytes, bytes]:
    """Run ``git ... NAME`` in the work tree; its whole process group is killed when the budget runs out."""
    return wait_git(start_git(git, repo, name, args, budget, overrides), name, budget)


def _first_line(err: bytes) -> str:
    lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    return plain(lines[0]) if lines else ""


# -- the repository's configuration: what it names that git could run ---------------------

CONFIG_LISTING = ["config", "--list", "--null", "--name-only", "--show-scope"]
"""Every key git sees, with where it comes from (``--show-scope``: git 2.26; includes count as their includer)."""

TRUSTED_SCOPES = (b"system", b"global")
"""The user's own configuration: what it names runs as in the user's own ``git status``."""

SWITCHED_OFF_KEYS = (
    "core.fsmonitor", "core.hookspath", "core.pager", "pager.*", "status.submodulesummary",
    "log.showsignature", "gpg.*", "filter.*", "protocol.*", "core.worktree",
)  # fmt: skip
"""Keys naming what ``git status``/``git log -1``/``git config`` could run: each is overridden on every call
(``filter.NAME.*`` per name, below; ``core.worktree`` by ``--work-tree``; pagers by ``--no-pager``)."""

TRANSPORT_KEYS = (
    "core.sshcommand", "core.gitproxy", "core.askpass", "ssh.*", "credential.*", "remote.*", "url.*", "http.*",
)  # fmt: skip
"""Keys only a fetch or push runs a program from: no transport can start (:data:`NO_PROTOCOL`)."""

NEVER_RUN_KEYS = (
    "core.editor", "sequence.editor", "core.alternaterefscommand", "diff.*", "merge.*", "difftool.*",
    "mergetool.*", "interactive.*", "web.*", "help.*", "browser.*", "man.*", "instaweb.*", "guitool.*",
    "gui.*", "alias.*", "sendemail.*", "imap.*", "submodule.*", "trailer.*", "uploadpack.*", "receive.*",
    "tar.*", "column.*",
)  # fmt: skip
"""Keys only other git commands run a program from (editors, diff and merge drivers, textconv, tools,
aliases, browsers, mail, submodule updates, servers, archives): nia runs ``status``, ``log`` and ``config``."""

PROGRAM_WORDS = (
    "command", "cmd", "program", "helper", "driver", "textconv", "process", "clean", "smudge", "filter",
    "hookspath", "hook", "fsmonitor", "editor", "pager", "askpass", "proxy", "uploadpack", "receivepack",
    "browser", "viewer", "tool", "external", "httpd", "exec",
)  # fmt: skip
"""How a key that names a program ends: such a key outside the lists above is one nia cannot switch off."""

MAX_FILTERS = 64
"""Filter drivers of the repository's own that nia overrides; more is refused (each costs four variables)."""


def _known(pattern: str, section: str, variable: str) -> bool:
    wanted_section, _, wanted_variable = pattern.partition(".")
    return section == wanted_section and wanted_variable in ("*", variable)


def repository_overrides(listing: bytes) -> tuple[tuple[str, str], ...]:
    """What to override so that git runs nothing the repository's config names; :class:`GitFailed` if it cannot.

    ``listing`` is :data:`CONFIG_LISTING`'s answer, run with
    :func:`git_environment`. Keys of the user's global and system config are
    trusted. Every other key (the repository's ``config``, ``config.worktree``
    and whatever they include, from anywhere) is judged by name alone, so no
    name can slip through: a filter driver is switched off by its exact name,
    a known key is covered by the lists above, and any other key that names a
    program is refused.
    """
    fields = listing.split(b"\0")
    pairs = list(zip(fields[0::2], fields[1::2], strict=False))
    if (b"command", b"core.fsmonitor") not in pairs:  # GIT_CONFIG_COUNT (git 2.31) was not understood
        raise GitFailed("the `git` found is too old to be run safely here (nia needs git 2.31 or later)")
    filters: dict[str, None] = {}
    for scope, raw in pairs:
        if scope in TRUSTED_SCOPES or scope == b"command" or not raw:
            continue
        name = raw.decode("utf-8", "surrogateescape")
        section, _, rest = name.partition(".")
        subsection, dot, variable = rest.rpartition(".")
        if section == "filter" and dot:
            filters[subsection] = None
            continue
        if any(_known(p, section, variable) for p in (*SWITCHED_OFF_KEYS, *TRANSPORT_KEYS, *NEVER_RUN_KEYS)):
            continue
        if variable.endswith(PROGRAM_WORDS):
            key = quoted(name, 80)
            raise GitFailed(f"its git configuration names a program in `{key}`, which nia cannot switch off")
    if len(filters) > MAX_FILTERS:
        raise GitFailed(f"its git configuration defines {len(filters)} filter drivers, more than nia switches off")
    return tuple(
        (f"filter.{name}.{key}", value)
        for name in filters
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
    )


def read_configuration(proc: Started, budget: Budget) -> tuple[tuple[str, str], ...]:
    """Collect a started :data:`CONFIG_LISTING` and judge it; a listing git could not give refuses the repository."""
    code, out, err = wait_git(proc, "config", budget)
    if code not in (0, 1):  # 1: no key at all
        detail = _first_line(err)
        if detail:
            log.warning("%s: git config said: %s", KEY, detail)
        if code == 129:  # an option this git does not know (--show-scope, git 2.26)
            raise GitFailed("the `git` found is too old to be run safely here (nia needs git 2.31 or later)")
        raise GitFailed("git cannot read this repository's configuration")
    return repository_overrides(out)


# -- reading the status -------------------------------------------------------------------

CONFLICTS = {
    "DD": "both deleted",
    "AU": "added by us",
    "UD": "deleted by them",
    "UA": "added by them",
    "DU": "deleted by us",
    "AA": "both added",
    "UU": "both modified",
}
INDEX_WORDS = {"M": "staged", "T": "staged", "A": "staged (new file)", "D": "staged (deleted)"}
INDEX_WORDS |= {"R": "staged (renamed)", "C": "staged (copied)"}
TREE_WORDS = {"M": "modified", "T": "modified", "D": "deleted"}
OPERATIONS = {
    "merge": "merge",
    "rebase": "rebase",
    "am": "git am session",
    "cherry-pick": "cherry-pick",
    "revert": "revert",
    "bisect": "bisect",
}


def _label(xy: str) -> str:
    words = [w for w in (INDEX_WORDS.get(xy[0], ""), TREE_WORDS.get(xy[1], "")) if w]
    return " and ".join(words) or "changed"


@record
class _Parsed:
    oid: str = ""
    head: str = ""
    upstream: str = ""
    ahead: int | None = None
    behind: int | None = None
    staged: int = 0
    modified: int = 0
    untracked: int = 0
    conflicted: int = 0
    conflicts: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    tracked: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    new: list[tuple[str, str]] = dataclasses.field(default_factory=list)


def parse_status(out: bytes, relative: Any) -> _Parsed:
    """``git status --porcelain=v2 --branch -z`` output; ``relative`` maps a repository path to its display."""
    parsed = _Parsed()
    records = out.split(b"\0")
    index = 0
    while index < len(records):
        record = records[index].decode("utf-8", "surrogateescape")
        index += 1
        if not record:
            continue
        kind = record[0]
        if kind == "#":
            name, _, value = record[2:].partition(" ")
            if name == "branch.oid":
                parsed.oid = "" if value == "(initial)" else value
            elif name == "branch.head":
                parsed.head = value
            elif name == "branch.upstream":
                parsed.upstream = value
            elif name == "branch.ab":
                ahead, _, behind = value.partition(" ")
                try:
                    parsed.ahead, parsed.behind = int(ahead.lstrip("+")), int(behind.lstrip("-"))
                except ValueError:
                    pass
        elif kind in "12":
            fields = record.split(" ", 8 if kind == "1" else 9)
            xy, path = fields[1], fields[-1]
            if kind == "2":
                index += 1  # the original path of a rename or copy
            parsed.staged += xy[0] != "."
            parsed.modified += xy[1] != "."
            parsed.tracked.append((relative(path), _label(xy)))
        elif kind == "u":
            fields = record.split(" ", 10)
            parsed.conflicted += 1
            parsed.conflicts.append((relative(fields[-1]), f"in conflict: {CONFLICTS.get(fields[1], 'unmerged')}"))
        elif kind == "?":
            parsed.untracked += 1
            parsed.new.append((relative(record[2:]), "untracked"))
    return parsed


def _operations(repo: Repository) -> tuple[tuple[str, ...], str]:
    """In-progress operations, from the files git leaves in the git dir; and the branch being rebased."""
    g = repo.gitdir
    found = []
    rebased = ""
    if os.path.exists(os.path.join(g, "MERGE_HEAD")):
        found.append("merge")
    for folder in ("rebase-merge", "rebase-apply"):
        path = os.path.join(g, folder)
        if os.path.isdir(path):
            if folder == "rebase-apply" and os.path.exists(os.path.join(path, "applying")):
                found.append("am")
                continue
            found.append("rebase")
            name = (_read_small(os.path.join(path, "head-name"), g) or "").strip()
            rebased = name.removeprefix("refs/heads/") if name.startswith("refs/") else ""
            break
    if os.path.exists(os.path.join(g, "CHERRY_PICK_HEAD")):
        found.append("cherry-pick")
    if os.path.exists(os.path.join(g, "REVERT_HEAD")):
        found.append("revert")
    if os.path.exists(os.path.join(g, "BISECT_LOG")):
        found.append("bisect")
    return tuple(found), rebased


def _stashes(repo: Repository) -> int:
    """Lines of the stash's reflog (read checked and bounded: a FIFO or ``/dev/zero`` there counts nothing)."""
    text = _read_small(os.path.join(repo.commondir, "logs", "refs", "stash"), repo.commondir) or ""
    return sum(1 for line in text.splitlines() if line.strip())


# -- observing ----------------------------------------------------------------------------

WATCHED_IN_GITDIR: tuple[str, ...] = ("HEAD", "index", "config.worktree")
WATCHED_IN_GITDIR += ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_LOG", "rebase-merge", "rebase-apply")
WATCHED_IN_COMMONDIR = ("packed-refs", "config", os.path.join("logs", "refs", "stash"), "reftable/tables.list")
PER_WORKTREE_REFS = ("refs/bisect/", "refs/worktree/", "refs/rewritten/")


def _stat(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _ref_file(repo: Repository, ref: str) -> str | None:
    if not ref.startswith("refs/") or ".." in ref.split("/"):
        return None
    base = repo.gitdir if ref.startswith(PER_WORKTREE_REFS) else repo.commondir
    return os.path.join(base, *ref.split("/"))


def ref_leaves_repository(repo: Repository) -> bool:
    """Whether HEAD's chain of refs, or ``packed-refs``, is a link out of the git directory.

    git follows a loose ref that is a symlink, and reads a file of the form
    ``ref: NAME`` there as a symbolic ref: a cloned repository (or an archive)
    could make the branch name nia reports come from a file outside it.
    """
    bases = (repo.gitdir, repo.commondir)

    def outside(path: str) -> bool:
        return os.path.lexists(path) and not any(_within(path, base) for base in bases)

    if outside(os.path.join(repo.commondir, "packed-refs")):
        return True
    path: str | None = os.path.join(repo.gitdir, "HEAD")
    for _hop in range(6):  # git itself gives up on longer chains of symbolic refs
        if path is None:
            return False
        if outside(path):
            return True
        text = (_read_small(path, repo.gitdir if _within(path, repo.gitdir) else repo.commondir) or "").strip()
        if not text.startswith("ref:"):
            return False
        path = _ref_file(repo, text[4:].strip())
    return False


MAX_ALTERNATES_DEPTH = 5
"""git follows alternates of alternates this deep; so does the check."""

_C_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}


def _c_unquoted(line: str) -> str:
    """An alternates line as git reads it: C-quoted when it starts with ``"`` (else, or if malformed, as is)."""
    if not line.startswith('"'):
        return line
    out = bytearray()
    index = 1
    while index < len(line):
        ch = line[index]
        if ch == '"':
            return os.fsdecode(bytes(out)) if index == len(line) - 1 else line
        if ch != "\\":
            out += ch.encode("utf-8", "surrogateescape")
            index += 1
            continue
        escape = line[index + 1 : index + 2]
        octal = line[index + 1 : index + 4]
        if escape in _C_ESCAPES:
            out.append(_C_ESCAPES[escape])
            index += 2
        elif len(octal) == 3 and all(c in "01234567" for c in octal) and octal[0] in "0123":
            out.append(int(octal, 8))
            index += 4
        else:
            return line
    return line


def _links_out(folder: str, inside: tuple[str, ...], depth: int) -> str | None:
    """The first entry under ``folder`` (``depth`` levels) that is a symlink whose real path is outside ``inside``.

    ``os.scandir`` tells a symlink from the directory entry itself, so an
    ordinary folder costs no ``stat`` per entry.
    """
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return None
    for entry in entries:
        if entry.is_symlink():
            if not _inside_any(entry.path, inside):
                return entry.path
        elif depth > 1 and entry.is_dir(follow_symlinks=False):
            found = _links_out(entry.path, inside, depth - 1)
            if found is not None:
                return found
    return None


def _store_outside(objects: str, inside: tuple[str, ...], depth: int) -> str | None:
    """Why the object store ``objects`` (or one it borrows from) holds data from outside ``inside``, or ``None``."""
    if not _inside_any(objects, inside):
        return "leads outside the project"
    link = _links_out(objects, inside, 3)  # objects/xx/<loose>, pack/<pack>, info/commit-graphs/<graph>
    if link is not None:
        return f"has `{quoted(os.path.relpath(link, objects), 80)}` leading outside the project"
    alternates = os.path.join(objects, "info", "alternates")
    if not os.path.lexists(alternates):
        return None
    text = _read_small(alternates, objects)
    if text is None:
        return "has an `info/alternates` nia cannot read as a plain file"
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        borrowed = os.path.join(objects, _c_unquoted(line))
        if not _inside_any(borrowed, inside):
            return "borrows objects from outside the project (`info/alternates`)"
        if depth >= MAX_ALTERNATES_DEPTH:
            return "borrows objects through more alternates than git follows"
        further = _store_outside(borrowed, inside, depth + 1)
        if further is not None:
            return further
    return None


def reaches_outside(repo: Repository, root: str) -> str | None:
    """Why git would read this repository's data from outside the project, or ``None``.

    What reaches the model (the commit's subject, the paths of the trees and
    of the index, the ahead/behind counts) comes from the object store, the
    index and the refs. Any of them may lead outside only through a symlink or
    an alternates file, which an unpacked archive can hold: then git is not
    asked. Inside means the repository's own git directory (trusted by
    :func:`untrusted`) or the project.
    """
    inside = tuple(dict.fromkeys(os.path.realpath(folder) for folder in (repo.gitdir, repo.commondir, root)))
    objects = os.path.join(repo.commondir, "objects")
    problem = _store_outside(objects, inside, 1)
    if problem is not None:
        return f"its object store {problem}, which nia does not follow"
    candidates = [os.path.join(repo.gitdir, "index"), os.path.join(repo.commondir, "shallow")]
    candidates.append(os.path.join(repo.commondir, "info", "grafts"))
    try:
        candidates += [entry.path for entry in os.scandir(repo.gitdir) if entry.name.startswith("sharedindex.")]
    except OSError:
        pass
    for path in candidates:
        if os.path.lexists(path) and not _inside_any(path, inside):
            name = os.path.relpath(path, repo.commondir if path.startswith(repo.commondir) else repo.gitdir)
            return f"its `{quoted(name, 80)}` leads outside the project, which nia does not follow"
    for base in dict.fromkeys((repo.commondir, repo.gitdir)):
        link = _links_out(os.path.join(base, "refs"), inside, 64)
        if link is not None:
            name = quoted(os.path.relpath(link, base), 80)
            return f"its ref `{name}` leads outside the project, which nia does not follow"
    return None


class Observer:
    """The loader of one ``nia/git`` source: runs git only when something git keeps moved."""

    def __init__(self, repo: Repository, root: str, settings: Settings) -> None:
        self.repo = repo
        self.root = root
        self.settings = settings
        self._fixed = (
            repo.dotgit,
            *(os.path.join(repo.gitdir, name) for name in WATCHED_IN_GITDIR),
            *(os.path.join(repo.commondir, name) for name in WATCHED_IN_COMMONDIR),
        )
        self._refs: tuple[str, ...] = ()
        """The files of the ref HEAD points to and of the upstream, as of the last status."""
        self._signature: tuple[Any, ...] | None = None
        self._checked = 0.0
        self._value: GitStatus | None = None
        self._commits: dict[str, tuple[str, tuple[str, ...], str]] = {}
        self._reported = ""
        self._lock = threading.Lock()
        self._scope, self._strip, self._prepend = self._scoping()
        moving = (repo.dotgit, os.path.join(repo.gitdir, "HEAD"))
        moving += tuple(os.path.join(repo.commondir, name) for name in ("packed-refs", "reftable/tables.list"))
        self._moving = tuple(self._fixed.index(path) for path in moving)
        """Where in the signature the files that say which commit HEAD is are (the ref files follow ``_fixed``)."""

    def _scoping(self) -> tuple[list[str], str, str]:
        """A pathspec limiting the status to the project, and how a repository path becomes project-relative.

        Returns ``(pathspec, strip, prepend)``: a project inside a larger
        repository sees only its own changes, its paths without its folder; a
        repository inside the project gets its folder in front.
        """
        worktree, root = os.path.realpath(self.repo.worktree), os.path.realpath(self.root)
        if root == worktree:
            return [], "", ""
        inside = os.path.relpath(root, worktree).replace(os.sep, "/")
        if inside != ".." and not inside.startswith("../"):
            return ["--", f":(top,literal){inside}"], inside + "/", ""
        holder = os.path.relpath(worktree, root).replace(os.sep, "/")
        return [], "", "" if holder == ".." or holder.startswith("../") else holder + "/"

    def _relative(self, path: str) -> str:
        if self._strip and path.startswith(self._strip):
            path = path[len(self._strip) :] or "./"  # the project folder itself, untracked as a whole
        return quoted(self._prepend + path)

    def signature(self) -> tuple[Any, ...]:
        return tuple(_stat(path) for path in (*self._fixed, *self._refs))

    def __call__(self) -> Any:
        if not self._lock.acquire(timeout=self.settings.timeout + 1):
            return UNAVAILABLE  # another observation of the same repository is stuck; it has its own timeout
        try:
            return self._observe()
        finally:
            self._lock.release()

    def _observe(self) -> Any:
        now = time.monotonic()
        signature = self.signature()
        fresh = now - self._checked < self.settings.refresh
        if self._value is not None and signature == self._signature and fresh:
            return self._value
        refs = self._refs
        try:
            value = self._status(self._head_may_have_moved(signature))
        except GitTimedOut as exc:
            self._report(str(exc))
            if self._value is not None and not self._value.error:
                return UNAVAILABLE  # the model keeps what it was told; the next boundary tries again
            return GitStatus(error=str(exc))  # never block a session on a slow repository; retried next time
        except GitFailed as exc:
            self._report(str(exc))
            value = GitStatus(error=str(exc))
        else:
            self._report("")
        if self._refs != refs:  # HEAD now points elsewhere: watch the new ref from here on
            signature = signature[: len(self._fixed)] + tuple(_stat(path) for path in self._refs)
        self._signature, self._checked = signature, now
        if value == self._value:
            return self._value  # the very same object: compared by identity, encoded once
        self._value = value
        return value

    def _head_may_have_moved(self, signature: tuple[Any, ...]) -> bool:
        """Whether HEAD's commit may differ from the last observation's (always, at the first)."""
        old = self._signature
        if old is None or len(old) != len(signature):
            return True
        return any(old[i] != signature[i] for i in (*self._moving, *range(len(self._fixed), len(signature))))

    def _report(self, reason: str) -> None:
        """One warning line per new reason, not one per boundary."""
        if reason and reason != self._reported:
            log.warning("%s: %s (in %s)", KEY, reason, self.repo.worktree)
        self._reported = reason

    def _status(self, speculate: bool) -> GitStatus:
        """One observation: ``speculate`` starts ``git log -1 HEAD`` beside the config call (see :meth:`_commit`).

        While git lists the configuration, the git directory is checked for
        anything leading outside the project (:func:`reaches_outside`); what
        git read by then is thrown away if it does.
        """
        repo, settings = self.repo, self.settings
        refused = untrusted(repo, self.root)
        if refused is not None:
            raise GitFailed(refused)
        if ref_leaves_repository(repo):
            raise GitFailed("a ref of this repository is a symlink to a file outside it, which nia does not follow")
        git = git_program(repo, self.root)
        if isinstance(git, str):
            raise GitFailed(git)
        budget = Budget.of(settings.timeout)
        head = start_git(git, repo, "log", [*COMMIT_LOG, "HEAD", "--"], budget) if speculate else None
        config: Started | None = None
        try:
            config = start_git(git, repo, "config", CONFIG_LISTING, budget)
            outside = reaches_outside(repo, self.root)
            if outside is not None:
                raise GitFailed(outside)
            overrides = read_configuration(config, budget)  # before `git status`, always: it needs them
            return self._described(git, budget, head, overrides)
        finally:
            for started in (head, config):
                if started is not None:
                    stop_git(started)  # done, not needed, or the observation failed: killed if still running, reaped

    def _described(
        self, git: GitProgram, budget: Budget, head: Started | None, overrides: tuple[tuple[str, str], ...]
    ) -> GitStatus:
        """The observation proper, once the repository is known to be readable and git is found."""
        repo, settings = self.repo, self.settings
        args = ["--work-tree", repo.worktree, "status", "--porcelain=v2", "--branch", "-z"]
        args += ["--no-renames", "--ignore-submodules=dirty", "--ignored=no", "--ahead-behind"]
        args += ["--untracked-files=normal" if settings.untracked else "--untracked-files=no", *self._scope]
        code, out, err = run_git(git, repo, "status", args, budget, overrides)
        if code != 0:
            detail = _first_line(err)
            if detail:
                log.warning("%s: git status said: %s", KEY, detail)
            if "dubious ownership" in detail:
                raise GitFailed("git refuses to read this repository: it belongs to another user (see safe.directory)")
            if "not a git repository" in detail:
                raise GitFailed("git does not recognise the `.git` here as a repository")
            raise GitFailed(f"`git status` failed with exit status {code}")
        parsed = parse_status(out, self._relative)
        head_text = (_read_small(os.path.join(repo.gitdir, "HEAD"), repo.gitdir) or "").strip()
        symbolic = head_text.startswith("ref:")
        detached = parsed.head == "(detached)" and not symbolic
        refs = []
        if symbolic:
            refs.append(_ref_file(repo, head_text[4:].strip()))
        if parsed.upstream:
            refs.append(_ref_file(repo, "refs/remotes/" + parsed.upstream))
            refs.append(_ref_file(repo, "refs/heads/" + parsed.upstream))
        self._refs = tuple(ref for ref in refs if ref)
        short, parents, subject = self._commit(git, parsed.oid, budget, head) if parsed.oid else ("", (), "")
        operations, rebased = _operations(repo)
        entries = [*parsed.conflicts, *parsed.tracked, *parsed.new]
        named = tuple(entries[: settings.paths])
        return GitStatus(
            branch="" if detached else quoted(parsed.head),
            detached=detached,
            oid=parsed.oid,
            head=short,
            subject=subject,
            parents=parents,
            upstream=quoted(parsed.upstream) if parsed.upstream else "",
            ahead=parsed.ahead,
            behind=parsed.behind,
            operations=operations,
            rebasing=quoted(rebased) if rebased else "",
            stashes=_stashes(repo),
            staged=parsed.staged,
            modified=parsed.modified,
            untracked=parsed.untracked if settings.untracked else None,
            conflicted=parsed.conflicted,
            entries=named,
            more=len(entries) - len(named),
        )

    def _commit(
        self, git: GitProgram, oid: str, budget: Budget, head: Started | None
    ) -> tuple[str, tuple[str, ...], str]:
        """HEAD's short id, parents and subject; asked of git once per commit.

        ``head``, when given, is a ``git log -1 HEAD`` started beside the config
        call (it reads no work-tree file, so no filter driver can run): one git
        process less on the critical path. Its answer counts only when it names
        ``oid``, the commit ``git status`` saw; HEAD may have moved between the
        two, and then ``oid`` is asked for by id.
        """
        known = self._commits.get(oid)
        if known is None and head is not None:
            code, out, _err = wait_git(head, "log", budget)
            if code == 0:
                full, known = _commit_fields(out)
                known = known if full == oid else None
        if known is None:
            code, out, _err = run_git(git, self.repo, "log", [*COMMIT_LOG, oid, "--"], budget)
            if code != 0:
                return oid[:7], (), ""
            known = _commit_fields(out)[1]
        if len(self._commits) > 64:
            self._commits.clear()
        self._commits[oid] = known
        return known


COMMIT_LOG = ("log", "-1", "--no-show-signature", "--no-color", "--format=%H%x00%h%x00%P%x00%s")


def _commit_fields(out: bytes) -> tuple[str, tuple[str, tuple[str, ...], str]]:
    """``(full id, (short id, parents, subject))`` of one :data:`COMMIT_LOG` answer."""
    full, _, rest = out.decode("utf-8", "replace").rstrip("\n").partition("\0")
    short, _, rest = rest.partition("\0")
    parents, _, subject = rest.partition("\0")
    return full, (plain(short, 64), tuple(parents.split()), plain(subject))


# -- rendering ----------------------------------------------------------------------------

HEADER = "Git status (nia keeps this current; paths are relative to the project root):"


def _n_files(count: int, word: str = "file") -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _names(paths: list[str]) -> str:
    return ", ".join(f"`{path}`" for path in paths)


def _tracking(value: GitStatus) -> str:
    if not value.upstream:
        return "no upstream"
    if value.ahead is None or value.behind is None:
        return f"its upstream `{value.upstream}` is gone"
    if not value.ahead and not value.behind:
        return f"up to date with `{value.upstream}`"
    return f"{value.ahead} ahead, {value.behind} behind `{value.upstream}`"


def _commit_text(value: GitStatus) -> str:
    if not value.oid:
        return "no commits yet"
    return f"`{value.head}` {value.subject}".rstrip()


def _operation(value: GitStatus, op: str) -> str:
    name = OPERATIONS.get(op, op)
    return f"{name} of `{value.rebasing}`" if op == "rebase" and value.rebasing else name


def _counts(value: GitStatus) -> str:
    parts = [
        f"{count} {word}"
        for count, word in (
            (value.conflicted, "conflicted"),
            (value.staged, "staged"),
            (value.modified, "modified"),
            (value.untracked or 0, "untracked"),
        )
        if count
    ]
    changed = len(value.entries) + value.more
    text = f"{_n_files(changed, 'changed path')} ({', '.join(parts)})" if changed else "clean"
    if value.untracked is None:
        text += ", untracked files not counted"
    return text


def _listing(value: GitStatus) -> list[str]:
    lines = [f"  - `{path}` ({label})" for path, label in value.entries]
    if value.more:
        lines.append(f"  - and {value.more} more")
    return lines


def render_baseline(value: GitStatus) -> str:
    """The whole state, as a list the model can scan."""
    if value.error:
        return f"Git: the status of this repository is not available ({value.error})."
    lines = [HEADER]
    if value.detached:
        lines.append("- HEAD is detached (no branch checked out)")
    else:
        lines.append(f"- Branch: `{value.branch}` ({_tracking(value)})")
    lines.append(f"- HEAD: {_commit_text(value)}")
    if value.operations:
        lines.append("- In progress: " + ", ".join(f"a {_operation(value, op)}" for op in value.operations))
    if value.stashes:
        lines.append(f"- Stashes: {value.stashes}")
    lines.append(f"- Working tree: {_counts(value)}" + (":" if not value.clean else ""))
    lines += _listing(value)
    return "\n".join(lines)


def _branch_change(old: GitStatus, new: GitStatus) -> str:
    if new.detached:
        return f"HEAD is now detached (was on branch `{old.branch}`)."
    if old.detached:
        return f"The branch is now `{new.branch}` (HEAD was detached)."
    return f"The branch is now `{new.branch}` (was `{old.branch}`)."


def _head_change(old: GitStatus, new: GitStatus) -> str:
    if not new.oid:
        return "HEAD now has no commits yet."
    if not old.oid:
        return f"The first commit was made: {_commit_text(new)}."
    if old.oid in new.parents:
        return f"A commit was made: {_commit_text(new)}."
    if new.parents and new.parents == old.parents:
        return f"The last commit was rewritten (amended): HEAD is now {_commit_text(new)} (was `{old.head}`)."
    return f"HEAD is now {_commit_text(new)} (was `{old.head}`)."


def _tracking_change(old: GitStatus, new: GitStatus, switched: bool) -> str | None:
    branch = f"`{new.branch}`"
    if switched:
        return f"{branch} has {_tracking(new)}." if not new.upstream else f"{branch} is {_tracking(new)}."
    if (old.upstream, old.ahead, old.behind) == (new.upstream, new.ahead, new.behind):
        return None
    if not new.upstream:
        return f"{branch} no longer has an upstream."
    if new.ahead is None or new.behind is None:
        return f"The upstream of {branch}, `{new.upstream}`, is gone."
    if old.upstream != new.upstream:
        return f"{branch} now tracks `{new.upstream}` ({_tracking(new)})."
    return f"{branch} is now {_tracking(new)} (was {_tracking(old)})."


def _tree_change(old: GitStatus, new: GitStatus) -> str:
    """What changed in the working tree since the last message, then (unless that says it all) where it stands."""
    if new.clean:
        extra = " (untracked files not counted)" if new.untracked is None else ""
        return f"The working tree is clean again{extra}."
    before, now = dict(old.entries), dict(new.entries)
    phrases: list[str] = []
    mentioned: set[str] = set()
    if not old.more:  # every changed path was named last time, so a path not named then is new
        groups: dict[str, list[str]] = {}
        for path, label in new.entries:
            if path not in before:
                groups.setdefault(label.split(":")[0], []).append(path)  # conflicts of every kind together
        for label, paths in groups.items():
            if label == "in conflict":
                phrases.append(f"{_n_files(len(paths))} now in conflict ({_names(paths)})")
            elif label == "untracked":
                phrases.append(f"{len(paths)} new untracked {_n_files(len(paths)).split(' ', 1)[1]} ({_names(paths)})")
            else:
                phrases.append(f"{_n_files(len(paths))} {label} since the last message ({_names(paths)})")
            mentioned.update(paths)
    for path, label in new.entries:
        if path in before and before[path] != label:
            phrases.append(f"`{path}` is now {label} (was {before[path]})")
            mentioned.add(path)
    if not new.more:
        gone = [path for path, _ in old.entries if path not in now]
        if gone:
            phrases.append(f"{_n_files(len(gone))} no longer changed ({_names(gone)})")
    text = "Working tree: " + ("; ".join(phrases) if phrases else "changed since the last message") + "."
    if old.clean and not new.more and all(path in mentioned for path, _ in new.entries):
        return text  # the change is the whole state
    return f"{text} It now has {_counts(new)}:\n" + "\n".join(_listing(new))


def render_update(old: GitStatus, new: GitStatus) -> str:
    """Only what changed, each part a statement of what is true now."""
    if new.error:
        return (
            f"Git: the status of this repository is no longer available ({new.error}); "
            "the branch and working tree described earlier may be out of date."
        )
    if old.error:
        return "The git status is available again.\n" + render_baseline(new)
    sentences: list[str] = []
    switched = old.detached != new.detached or old.branch != new.branch
    if switched:
        sentences += [_branch_change(old, new), f"HEAD: {_commit_text(new)}."]
    elif old.oid != new.oid:
        sentences.append(_head_change(old, new))
    tracking = None if new.detached else _tracking_change(old, new, switched)
    if tracking and (new.upstream or old.upstream):
        sentences.append(tracking)
    for op in new.operations:
        if op not in old.operations:
            sentences.append(f"A {_operation(new, op)} is now in progress.")
    for op in old.operations:
        if op not in new.operations:
            sentences.append(f"The {_operation(old, op)} is no longer in progress.")
    if old.stashes != new.stashes:
        sentences.append(
            f"There {'is' if new.stashes == 1 else 'are'} now {_n_files(new.stashes, 'stash')}"
            f" (was {old.stashes}).".replace("stashs", "stashes")
        )
    tree = ("entries", "more", "staged", "modified", "untracked", "conflicted")
    if any(getattr(old, name) != getattr(new, name) for name in tree):
        sentences.append(_tree_change(old, new))
    return "\n".join(sentences) if sentences else render_baseline(new)


def render_removal(_old: GitStatus) -> str:
    return "The git status given earlier is no longer maintained and may be out of date."


# -- the plugin ---------------------------------------------------------------------------


@lru_cache(maxsize=64)
def git_source(repo: Repository, root: str, settings: Settings) -> ContextSource:
    """One source per repository, project root and settings, so its observer (and its caches) live on."""
    return ContextSource(
        key=KEY,
        load=Observer(repo, root, settings),
        baseline=render_baseline,
        update=render_update,
        removal=render_removal,
        codec=GitStatusCodec(),
        timeout=settings.timeout + 1,  # the git calls share settings.timeout; a second for the rest
        description="The git branch, HEAD and working tree of the repository the agent works in.",
    )


def sources(location: Location, config: dict[str, Any]) -> list[ContextSource]:
    """What the plugin's ``nia_context_sources`` answers: one source inside a work tree, else none."""
    settings = settings_from(config)
    repo = find_repository(str(location.path))
    if repo is None:
        return []
    return [git_source(repo, str(location.root), settings)]
