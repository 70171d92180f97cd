"""The resident context process: one warm runtime answering the hooks of one scope, until it is idle.

It is started by a hook (:func:`nia_core.resident.client.start`) with that
hook's environment, working directory and ``sys.path``, and serves every hook
whose scope (:mod:`nia_core.resident.scope`) is the same as its own. Each hook
goes through the door every hook goes through, :func:`nia_core.agents.answer.run`,
on one :class:`~nia_core.runtime.Runtime` kept warm between hooks, with the
store the hook would open itself (kept open between hooks while it is the same
database at nia's schema: :meth:`Resident.kept_store`); what it prints (stdout, and stderr with the
plugins' own output) is sent back for the client to print.

Hooks are answered one at a time (the process's environment and standard
streams are the hook's while it runs). What a fresh process would load
differently is checked before every hook, and the warm state is dropped when
it differs:

- the plugins' code: each project's ``.nia/plugins``, its ``.nia/project.toml``
  (which plugins are switched off) and the editable-installed plugins' source,
  compared by content; a change rebuilds the runtime (local and editable
  plugin modules are imported afresh, as a new process would);
- nia's own code, and modules imported from outside the scope's ``sys.path``
  folders (a helper a plugin imports from the project): a changed module file
  ends the process; the hook is answered in-process and the next one starts a
  new resident. An upgrade or an installed plugin changes the scope itself.

It ends after :data:`IDLE` seconds without a hook (``NIA_RESIDENT_IDLE``), when
asked to (``nia hook stop``, ``SIGTERM``), when nia's code changed, after a
hook during which a plugin left a thread nia had to abandon (a hung import),
after a hook that leaves more than :data:`GIVEN_UP` loader calls past their timeout running, and after a
hook that leaves more than half its limit of open files open or more than :data:`THREADS` threads running, and
after a hook past which its memory grew by more than :data:`MEMORY_GROWTH` since its latest first hook of a project.
It never polls: between hooks it sleeps in one ``poll`` on its socket and a wake-up pipe.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib
import io
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nia_core.sessions import Store

IDLE = 1800.0
"""Seconds without a hook after which a resident process ends (``NIA_RESIDENT_IDLE``)."""

BUSY = 1.0
"""Seconds a hook waits for the one before it; past that it is answered in-process."""

MAX_REQUEST = 64 * 1024 * 1024

LISTED_PROJECTS = 100
"""Projects a resident lists for ``nia hook status`` (the latest it answered for): its listing must stay small
enough to be read (a resident hooked from a folder above thousands of projects would outgrow the reader's limit,
and ``nia hook status`` and ``nia hook stop`` would no longer see it)."""

GIVEN_UP = 8
"""Loader or producer calls past their timeout that may still be running after a hook: each holds a thread (and
whatever it holds) until it returns, and a loader that never returns would leave one more at every hook. A slow
first load of a ``refresh`` source, and the hooks waiting for it meanwhile, stay well under it."""

THREADS = 256
"""Threads after a hook past which a resident ends: a plugin that starts one at every hook and never ends it
would otherwise add threads (and what they hold) for as long as the resident lives; nia's own are a few, and
one per ``refresh`` source."""


MEMORY_GROWTH = 256 * 1024 * 1024
"""Bytes of peak memory a resident may gain after its first hook: a plugin that keeps something at every hook (a
cache without a bound, a list it only appends to) would otherwise grow it for as long as the resident lives,
where a hook's own process frees it at its end. The first hook's own needs (a large model, a big index) are in
the figure it is measured from, and so are those of each project's first hook in this resident (with what the
loads it began kept by the project's second hook)."""


def idle_seconds() -> float:
    try:
        value = float(os.environ.get("NIA_RESIDENT_IDLE", IDLE))
    except ValueError:
        return IDLE
    return value if value > 0 else IDLE


class Resident:
    """The warm state, and the answering of one hook at a time."""

    def __init__(self, options: dict[str, Any], found: dict[str, Any], place: str, key: str) -> None:
        from nia_core.resident.freshness import Freshness
        from nia_core.runtime import Runtime

        self.options = options
        self.scope = found
        self.place = place
        self.key = key
        self.socket_path = os.path.join(place, key + ".sock")
        self.freshness = Freshness(
            tuple(options.get("plugins_dirs") or ()), tuple(found["path"]), tuple(found["installed"])
        )
        self.runtime = Runtime(**self._runtime_options())
        self.answering = threading.Lock()
        self.active = 0
        self.last = time.monotonic()
        self.started = time.time()
        self.ending = ""
        self.projects: list[str] = []
        self.bound: tuple[int, int] | None = None
        self.streams = (sys.stdin, sys.stdout, sys.stderr)
        """The process's own streams, which every hook starts with (a plugin may replace them)."""
        self.wake = os.pipe()
        """Written to by :meth:`end`: the accept loop wakes up without polling."""
        self.store: Store | None = None
        """The store hooks use, kept open between them while :meth:`Store.still_current` says it may be."""
        self.settled: int | None = None
        """Peak memory (bytes) after the latest first hook of a project (or at the start of its second): what
        :data:`MEMORY_GROWTH` is measured from."""
        self.settled_for: dict[str, int] = {}
        """The projects (roots) whose first hook :attr:`settled` has seen, with how many of their hooks it saw (2 at
        most)."""

    def _runtime_options(self) -> dict[str, Any]:
        return {
            "plugins_dirs": tuple(self.options.get("plugins_dirs") or ()),
            "flags": tuple(self.options.get("flags") or ()),
            "strict": bool(self.options.get("strict")),
        }

    # -- start and end ----------------------------------------------------------------

    def warm(self) -> None:
        """Load what every hook needs before the first one arrives: the host of this folder's project, the store."""
        from nia_core.agents import ADAPTERS

        for module in ADAPTERS.values():
            importlib.import_module(module)
        importlib.import_module("nia_core.agents.answer")
        with contextlib.suppress(Exception), self.kept_store():  # one that cannot open is the first hook's to report
            pass
        try:
            location = self.runtime.locate(os.getcwd())
        except Exception:  # noqa: BLE001 - nothing to warm; each hook locates its own project
            return
        from nia_core.resident.freshness import TooLarge

        try:
            self.freshness.check(location)
        except TooLarge:
            return  # each hook of that project is answered in-process
        with contextlib.suppress(Exception):
            host, view = self.runtime.open(location)
            host.assemble(view)
        self.freshness.remember_code()

    @contextlib.contextmanager
    def kept_store(self) -> Iterator[Store]:
        """The store a hook uses (opened as the hook's own process would open it), kept open for the next hook.

        Opening a SQLite store (connect, pragmas, the schema check) cost about
        as much as the rest of an unchanged prompt. Before each hook the kept
        one is checked (:meth:`Store.still_current`: the same file, nia's
        schema); one that fails the check, or a hook that raised through it,
        closes it, and the next hook opens the store anew. A store that cannot
        tell (PostgreSQL: its pool holds a connection and threads of its own)
        is closed when its hook is done, as in a hook's own process.
        """
        from nia_core.sessions import open_store

        if self.store is not None and not self.store.still_current():
            self.close_store()
        if self.store is None:
            self.store = open_store()
        try:
            yield self.store
        except BaseException:
            self.close_store()
            raise
        if not self.store.still_current():
            self.close_store()

    def close_store(self) -> None:
        store, self.store = self.store, None
        if store is not None:
            with contextlib.suppress(Exception):
                store.close()

    def rebuild(self) -> None:
        """Drop the runtime (hosts, views, local and editable plugin modules): the next hook loads them afresh.

        What the dropped modules kept is freed here, before the new ones load theirs: a module is a reference
        cycle (its functions hold its globals), which only the cyclic collector frees, whenever it happens to
        run; a plugin keeping a model loaded the new one beside the old, and the resident ended for its memory.
        """
        import gc

        from nia_core.runtime import Runtime

        old = self.runtime
        self.runtime = Runtime(**self._runtime_options())
        with contextlib.suppress(Exception):
            old.close()
        del old
        self.freshness.forget_modules()
        gc.collect()

    def end(self, why: str) -> None:
        """Stop taking hooks; the process ends once the hooks being answered are answered (safe in a signal handler)."""
        if self.ending:
            return
        self.ending = why
        self._unlink_socket()
        with contextlib.suppress(OSError):
            os.write(self.wake[1], b"x")  # the accept loop waits on this too

    def _unlink_socket(self) -> None:
        """Remove the socket file, but only while it is the one this process bound."""
        with contextlib.suppress(OSError):
            info = os.lstat(self.socket_path)
            if (info.st_dev, info.st_ino) == self.bound:
                os.unlink(self.socket_path)

    def write_metadata(self) -> None:
        from nia_core.files import write_private

        data = {
            "ready": self.bound is not None,
            "pid": os.getpid(),
            "started": self.started,
            "cwd": self.scope.get("cwd"),
            "projects": self.projects,
            "nia": self.scope.get("nia"),
            "python": self.scope.get("python"),
            "options": self.options,
        }
        write_private(self.place, self.key + ".json", json.dumps(data).encode("utf-8"))

    def _fresh_process(self, argv: list[str]) -> None:
        """Give the hook's plugins the process a new hook process would start with, whatever an earlier hook's did.

        The working directory, ``sys.path``, the umask (part of the scope), the
        standard streams and ``sys.argv`` (the hook's own) are set anew; the
        environment is set by :func:`_environment`, before. The C library's
        time zone is read again from it (``tzset``): a plugin that set ``TZ``
        and called ``tzset`` would otherwise leave its zone to later hooks, and
        a changed ``/etc/localtime`` (a laptop that travelled) would never be seen.
        """
        with contextlib.suppress(OSError):
            os.chdir(self.scope["cwd"])  # also when the folder was replaced by another of that name
        sys.path[:] = self.scope["path"]
        os.umask(self.scope["umask"])
        sys.stdin, sys.stdout, sys.stderr = self.streams
        sys.argv[:] = argv
        time.tzset()

    # -- serving ----------------------------------------------------------------------

    def serve(self, listener: socket.socket) -> None:
        """Accept hooks until idle or asked to end; each connection on a thread of its own (kept between hooks).

        The loop sleeps in one ``poll`` on the socket and the wake-up pipe, with
        the idle time left as its timeout: an idle resident makes no system call.
        """
        import select

        import nia_core.workers as workers

        idle = idle_seconds()
        listener.setblocking(False)
        waiting = select.poll()
        waiting.register(listener, select.POLLIN)
        waiting.register(self.wake[0], select.POLLIN)
        while not self.ending:
            remaining = idle - (time.monotonic() - self.last)
            if remaining <= 0:
                if self.active == 0:
                    self.end(f"idle for {idle:g}s")
                    break
                remaining = idle
            ready = waiting.poll(max(1, int(remaining * 1000)))
            if self.ending:
                break
            if not any(fd == listener.fileno() for fd, _ in ready):
                continue
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                continue
            conn.setblocking(True)
            self.last = time.monotonic()
            workers.start(functools.partial(self.connection, conn), "nia-resident-hook")
        deadline = time.monotonic() + 30
        while self.active and time.monotonic() < deadline:
            time.sleep(0.05)  # the hooks being answered finish (bounded)

    def connection(self, conn: socket.socket) -> None:
        self.active += 1
        try:
            with conn:
                self._connection(conn)
        except Exception:  # noqa: BLE001 - one broken connection never ends the resident
            pass
        finally:
            self.active -= 1
            self.last = time.monotonic()

    def _connection(self, conn: socket.socket) -> None:
        from nia_core.resident.client import peer  # the same check as the client's, the other way round

        try:
            peer(conn)
        except Exception:  # noqa: BLE001 - another user: nothing is read, nothing is said
            return
        conn.settimeout(10)
        raw = _receive(conn, MAX_REQUEST)
        if raw is None:
            return
        try:
            request = json.loads(raw)
        except ValueError:
            return
        if not isinstance(request, dict):
            return
        if request.get("stop"):
            _send(conn, {"stopped": os.getpid()})
            self.end("asked to stop")
            return
        reply = self.answer(request)
        _send(conn, reply)
        store = self.store
        if store is not None:  # once answered: the database file alone holds what the hook admitted
            with contextlib.suppress(Exception):
                store.rest()

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.ending:
            return {"refused": f"the resident process is ending ({self.ending})", "start": True}
        if request.get("scope") != self.scope:
            return {"refused": "the resident process serves another environment"}
        host, data, per_hook = request.get("host"), request.get("input"), request.get("per_hook")
        parent, argv = request.get("parent_pid"), _hook_argv(request.get("argv"))
        if not isinstance(host, str) or not isinstance(data, str) or not isinstance(per_hook, dict) or argv is None:
            return {"refused": "not a hook request"}
        if not isinstance(parent, int) or isinstance(parent, bool):
            return {"refused": "not a hook request"}
        if not self.answering.acquire(timeout=BUSY):
            return {"refused": f"the resident process was busy for {BUSY:g}s"}
        try:
            if self.store is not None and self.store.shared_files_replaced():
                self.end("the database's -wal or -shm was replaced")  # never closed: see shared_files_replaced
                return {
                    "refused": "the database's -wal or -shm was replaced; a new resident process starts",
                    "start": True,
                }
            changed = self.freshness.code_changed()
            if changed:
                self.end(f"{changed} changed")
                why = "nia's code" if _is_nias(changed) else "code a plugin imported"
                return {"refused": f"{why} changed ({changed}); a new resident process starts", "start": True}
            return self._answer(host, data.encode("utf-8", "surrogateescape"), per_hook, parent, argv)
        finally:
            self.answering.release()

    def _answer(self, host: str, data: bytes, per_hook: dict[str, Any], parent: int, argv: list[str]) -> dict[str, Any]:
        from nia_core import stdio
        from nia_core.agents import adapter, hook_log
        from nia_core.agents.answer import emit, record_logged, run, session_of
        from nia_core.agents.contract import HostInputError
        from nia_core.agents.hook_settings import resident_enabled
        from nia_core.context.concurrent import still_running
        from nia_core.process import abandoned_threads
        from nia_core.resident.freshness import TooLarge
        from nia_core.resident.scope import PER_HOOK

        try:
            door = adapter(host)
        except KeyError as exc:
            return {"refused": str(exc)}
        # The hook's process first, then its project: a relative folder in the hook is the hook's working
        # directory's, not the one a plugin of an earlier hook left this process in.
        _environment(self.scope["env"], {k: v for k, v in per_hook.items() if k in PER_HOOK and isinstance(v, str)})
        self._fresh_process(argv)
        try:
            hook = door.parse(data)
            location = self.runtime.locate(hook.cwd)
        except (HostInputError, OSError, ValueError):
            location = None  # the door says what is wrong with it, as in-process
        except Exception:  # noqa: BLE001 - likewise: run() reports it
            location = None
        first_of_project = False
        if location is not None:
            allowed, _ = resident_enabled(location.root)
            if not allowed:
                return {"refused": f"resident processes are off for {location.root} ([hooks] resident = false)"}
            try:
                if self.freshness.check(location):
                    self.rebuild()
            except TooLarge as exc:
                return {"refused": str(exc)}
            root = str(location.root)
            seen = self.settled_for.get(root, 0)
            first_of_project = seen == 0
            if seen == 1:  # what the first hook's loads went on to need once it was answered (a slow refresh load)
                self._memory_growth(settle=True)
            self.settled_for[root] = min(seen + 1, 2)
            if root not in self.projects:
                self.projects = [*self.projects[-(LISTED_PROJECTS - 1) :], root]
                with contextlib.suppress(Exception):
                    self.write_metadata()
        abandoned = len(abandoned_threads())
        answer = io.StringIO()
        record_logged()  # this hook's warnings, said once each, as in a hook's own process
        with stdio.captured() as stderr, hook_log.conversation_lock(session_of(door, data)):  # as an in-process hook
            with stdio.protect():  # a plugin's prints go to stderr (fd 1 is captured with fd 2 meanwhile)
                caller = door.caller(parent)  # the hook's parent, not this process's
                result = run(door, data, self.runtime, caller, self.kept_store, location)  # the project checked
            result.entry.answered_by = "resident"
            saved = sys.stdout
            sys.stdout = answer
            try:
                emit(result)
            finally:
                sys.stdout = saved
        self.freshness.remember_code()
        if len(abandoned_threads()) > abandoned:
            self.end("a plugin left a thread nia had to abandon")
        elif still_running() > GIVEN_UP:
            self.end(f"{still_running()} loader or producer calls past their timeout are still running")
        elif (files := _open_files()) > _open_files_allowed():
            self.end(f"{files} files are open (plugins left them open)")
        elif threading.active_count() > THREADS:
            self.end(f"{threading.active_count()} threads are running (plugins left them running)")
        elif (grown := self._memory_growth(settle=first_of_project)) > MEMORY_GROWTH:
            self.end(f"its memory grew by {grown >> 20} MiB since its first hook (plugins keep what they made)")
        return {"stdout": answer.getvalue(), "stderr": stderr.getvalue().decode("utf-8", "surrogateescape")}

    def _memory_growth(self, *, settle: bool) -> int:
        """Bytes of peak memory gained since the latest first hook of a project (0 when ``settle``: at such a hook,
        and at the start of its second).

        A project's first hook loads its plugins and whatever they keep for the process's life (a model, an
        index), as the resident's first hook does: measured from the resident's first hook alone, a project
        whose first hook needs more than :data:`MEMORY_GROWTH` ended the resident at every visit when another
        project's hook started it (one resident answers an agent's hooks in every project it works in). A load
        that first hook began may outlive it (a ``refresh`` source slower than its timeout): what it kept by the
        project's second hook is in the figure too, or every resident would end at its second hook.
        """
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux, where residents run
        if self.settled is None or settle:
            self.settled = max(peak, self.settled or 0)
        return peak - self.settled


def _open_files() -> int:
    """The descriptors this process has open (``/proc``: resident processes need Linux)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def _open_files_allowed() -> int:
    """Half the process's limit of open files: a plugin that leaves some open at every hook (a ``Popen`` never
    waited for, a file never closed) would otherwise use them all up, and every later hook's files (the
    project's, the plugins', the store's) would fail to open, where a hook in its own process starts with none."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft // 2 if soft != resource.RLIM_INFINITY else 1 << 20


def _is_nias(path: str) -> bool:
    import nia_core
    import nia_plugins

    return any(path.startswith(os.path.join(os.path.dirname(p.__file__ or ""), "")) for p in (nia_core, nia_plugins))


def _hook_argv(value: Any) -> list[str] | None:
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        return value
    return None


def _environment(scope: dict[str, str], per_hook: dict[str, str]) -> None:
    """Make ``os.environ`` exactly the hook's: the scope's variables and the hook's own :data:`PER_HOOK` ones.

    What a plugin set or removed during an earlier hook is undone, as a new process would start without it.
    """
    wanted = {**scope, **per_hook}
    for name in [name for name in os.environ if name not in wanted]:
        del os.environ[name]
    for name, value in wanted.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _receive(conn: socket.socket, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            chunk = conn.recv(1 << 16)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
    except OSError:
        return None


def _send(conn: socket.socket, reply: dict[str, Any]) -> None:
    """Send ``reply`` and end the connection for the client, also when a process a plugin forked holds a copy."""
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(reply).encode("ascii"))
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)  # closing would not: the copy keeps the connection open


# -- the process ------------------------------------------------------------------------


def main(argv: list[str], listed: int | None = None) -> None:
    """The resident process: ``argv`` is the hook's ``sys.path`` and the command's plugin options (JSON).

    ``listed`` is a pipe's writing end, closed once this process holds its lock and is listed (starting)
    or gave up: the process that started it waits for that.
    """
    try:
        path = json.loads(argv[0])
        options = json.loads(argv[1]) if len(argv) > 1 else {}
    except (IndexError, ValueError):
        return
    if not isinstance(path, list) or not all(isinstance(p, str) for p in path) or not isinstance(options, dict):
        return
    sys.path[:] = path
    from nia_core.resident import folder, scope

    try:
        found = scope.scope(options)
        place = folder.folder(create=True)
    except OSError:
        return
    key = scope.key(found)
    lock = _lock(os.path.join(place, key + ".lock"))
    if lock is None:
        return  # another resident of this scope is running (or starting)
    _closed_in_children(lock)
    try:
        _log_to(place, key + ".log")
        _starting(place, key, found, options)
        if listed is not None:
            with contextlib.suppress(OSError):
                os.close(listed)
        _run(options, found, place, key)
    finally:
        with contextlib.suppress(OSError):  # before the lock is let go: a new resident makes a new lock file
            os.unlink(os.path.join(place, key + ".lock"))
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        from nia_core.process import end

        end(0)  # threads a plugin left behind must not keep a finished resident alive


_OWN: list[int] = []
"""The descriptors that make this process the resident: its lock, its listening socket, its wake-up pipe."""


def _closed_in_children(*fds: int) -> None:
    """Close ``fds`` in any process a plugin forks: a child that outlives this process (a ``multiprocessing``
    worker) would otherwise hold the lock and the socket, and no resident of this scope could start again."""
    if not _OWN:
        os.register_at_fork(after_in_child=_close_own)
    _OWN.extend(fds)


def _close_own() -> None:
    for fd in _OWN:
        with contextlib.suppress(OSError):
            os.close(fd)
    _OWN.clear()


def _starting(place: str, key: str, found: dict[str, Any], options: dict[str, Any]) -> None:
    """List this process as starting (``nia hook status``, ``nia hook stop``) before anything slow is loaded."""
    from nia_core.files import write_private

    data: dict[str, Any] = {
        "ready": False,
        "pid": os.getpid(),
        "started": time.time(),
        "cwd": found.get("cwd"),
        "projects": [],
        "nia": found.get("nia"),
        "python": found.get("python"),
        "options": options,
    }
    with contextlib.suppress(OSError):
        write_private(place, key + ".json", json.dumps(data).encode("utf-8"))


def _lock(path: str) -> int | None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


LOG_LIMIT = 1 << 20
"""Bytes the resident's log holds at most: past it the older half is dropped (a plugin printing all day)."""
DROPPED = f"(earlier lines dropped: the log keeps its last {LOG_LIMIT // 2 // 1024} KiB)\n".encode()


def _log_to(place: str, name: str) -> None:
    """nia's own stderr outside hooks (a crash, a background plugin's output) goes to the resident's log file.

    Through a pipe, drained by a thread into ``place/name`` with the checked writer for nia's own files
    (a link, a FIFO or another user's file there is never written through), and kept under
    :data:`LOG_LIMIT`: the newest half is kept, from a line's start. What cannot be written is dropped,
    never left to fill the pipe (a full pipe would block every write to stderr).
    """
    from nia_core.files import append_private, read_private_end, write_private

    try:
        write_private(place, name, b"")  # each resident's log starts empty
        readable, writable = os.pipe()
        os.dup2(writable, 2)
        os.close(writable)
    except OSError:
        return
    _closed_in_children(readable)

    def drain() -> None:
        while True:
            try:
                data = os.read(readable, 1 << 16)
            except InterruptedError:
                continue
            except OSError:
                return
            if not data:
                return
            try:
                if append_private(place, name, data) > LOG_LIMIT:
                    kept = read_private_end(place, name, LOG_LIMIT // 2)
                    kept = kept[kept.find(b"\n") + 1 :] if b"\n" in kept else kept
                    write_private(place, name, DROPPED + kept)
            except OSError:
                continue

    threading.Thread(target=drain, name="nia-resident-log", daemon=True).start()


def _run(options: dict[str, Any], found: dict[str, Any], place: str, key: str) -> None:
    from nia_core.agents.answer import log_to_stderr
    from nia_core.process import guard_exit
    from nia_core.resident.residents import metadata_path

    guard_exit()  # a plugin's os._exit is refused (raised in its code) here as in a hook's own process
    log_to_stderr()
    resident = Resident(options, found, place, key)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # listed as starting (main); until it listens, SIGTERM (the default action) ends it at once
        resident.warm()
        listener = _listen(resident)
        if listener is None:
            return
        _closed_in_children(listener.fileno(), *resident.wake)
        signal.signal(signal.SIGTERM, lambda *_: resident.end("SIGTERM"))
        try:
            with contextlib.suppress(OSError):
                resident.write_metadata()
            resident.serve(listener)
        finally:
            resident.end(resident.ending or "ended")
            listener.close()
    finally:
        with contextlib.suppress(OSError):
            os.unlink(metadata_path(place, key))
        with contextlib.suppress(Exception):
            resident.runtime.close()
        resident.close_store()


def _listen(resident: Resident) -> socket.socket | None:
    """The listening socket, bound under a temporary name and renamed into place (over a dead resident's)."""
    from nia_core.resident import folder

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temporary = os.path.join(resident.place, f".{resident.key}.{os.getpid()}.sock")
    previous = os.umask(0o077)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        folder.bind(listener, temporary)
        listener.listen(64)
        info = os.lstat(temporary)
        resident.bound = (info.st_dev, info.st_ino)
        os.replace(temporary, resident.socket_path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        listener.close()
        return None
    finally:
        os.umask(previous)
    return listener
