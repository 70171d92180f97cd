"""``nia hook HOST`` as a thin client: send the hook to the resident process, print its answer.

It imports the standard library modules it needs to talk to the resident
(``socket``, ``json``, ``os``, ``zlib``) and nothing of nia's engine. Whenever
the resident cannot answer (none yet, starting, busy, hung, crashed, of
another version, switched off, an unsafe folder), the hook is answered
in-process by the caller's ``fallback`` within what is left of the hook's
deadline, exactly as without a resident; a missing resident is then started
for the next hook. ``NIA_RESIDENT=0`` never asks one.

A hung resident (no answer within half the deadline) is killed before the
hook is answered in-process: it must not admit anything after the fallback did.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable

from nia_core.agents import deadline
from nia_core.resident import folder, scope

TYPE_CHECKING = False  # not typing's: a thin client imports what it uses (typing costs it ~4 ms)
if TYPE_CHECKING:
    import socket
    from typing import Any

MAX_REPLY = 64 * 1024 * 1024
"""A reply larger than this is no answer (a hook prints at most the host's limit, some kilobytes)."""

Fallback = Callable[[bytes, str, float], None]
"""Answers in-process: ``(hook input, why the resident did not, seconds left)``."""


class NoAnswer(Exception):
    """The resident did not answer; the text says why (for ``nia hook log``)."""

    def __init__(self, why: str, *, start: bool = False) -> None:
        super().__init__(why)
        self.start = start
        """Whether to start a resident process for the next hook."""


def enabled() -> bool:
    return os.environ.get("NIA_RESIDENT", "1").strip().lower() not in ("0", "false", "no", "off")


def main(host: str) -> int:
    """``nia hook HOST`` as the installed hooks run it; always 0 (the host's turn never fails because of nia).

    A hook answered in-process ends through :func:`nia_core.process.exit_command`, as every nia command
    that ran plugins does (their threads and ``atexit`` handlers never keep the agent waiting).
    """
    answered_here = False

    def fallback(data: bytes, why: str, seconds: float) -> None:
        nonlocal answered_here
        from nia_core.agents.answer import in_process

        answered_here = True
        in_process(host, data, why, seconds)

    hook(host, fallback)
    if answered_here:
        from nia_core.process import exit_command

        exit_command(0)
    return 0


def hook(host: str, fallback: Fallback, options: dict[str, Any] | None = None) -> None:
    """Answer one hook: stdin to stdout, through the resident when it can, else through ``fallback``."""
    started = time.monotonic()
    seconds = deadline()
    data = read_input(started + seconds)
    if data is None:
        from nia_core.agents.answer import gave_up

        gave_up(host, seconds, "the hook's input did not end")
        return
    if not enabled():
        fallback(data, "NIA_RESIDENT=0", seconds)
        return
    found: dict[str, Any] | None = None
    try:
        found = scope.scope(options)
        hook_values = scope.per_hook()
        reply = ask(host, data, found, seconds / 2)
    except NoAnswer as missed:
        fallback(data, str(missed), max(1.0, seconds - (time.monotonic() - started)))
        if missed.start and found is not None:
            start(found, hook_values, options, seconds - (time.monotonic() - started))
        return
    except OSError as exc:  # the working directory is gone, say: nothing to share a resident with
        left = max(1.0, seconds - (time.monotonic() - started))
        fallback(data, f"no resident process: {exc.strerror or exc}", left)
        return
    write(reply)


def read_input(ends: float) -> bytes | None:
    """The hook's stdin, read to its end by ``ends`` (``time.monotonic``); ``None`` if it did not end by then.

    An agent that writes the input and never closes the pipe must not hold the hook past its deadline.
    """
    import select

    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # no descriptor (click's CliRunner, an embedding program)
        try:
            return sys.stdin.buffer.read()
        except (AttributeError, OSError, ValueError):
            return b""
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    chunks: list[bytes] = []
    while True:
        left = ends - time.monotonic()
        if left <= 0 or not waiting.poll(max(1, int(left * 1000))):
            return None
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            continue
        except OSError:
            return b"".join(chunks)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def ask(host: str, data: bytes, found: dict[str, Any], wait: float) -> dict[str, Any]:
    """The resident's reply to this hook, or :class:`NoAnswer`."""
    try:
        place = folder.folder(create=False)
        path = os.path.join(place, scope.key(found) + ".sock")
        folder.socket_ok(path)
    except FileNotFoundError:
        raise NoAnswer("no resident process yet", start=True) from None
    except folder.Unsafe as exc:
        raise NoAnswer(f"resident processes refused: {exc}") from None
    except OSError as exc:
        raise NoAnswer(f"resident processes unavailable: {exc.strerror or exc}") from None
    request = {
        "scope": found,
        "per_hook": scope.per_hook(),
        "parent_pid": os.getppid(),
        "argv": sys.argv,
        "host": host,
        "input": data.decode("utf-8", "surrogateescape"),
        "wait": wait,
    }
    import socket  # here, once there is a resident to ask: a hook answered in-process never connects

    ends = time.monotonic() + wait
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(wait)
        try:
            folder.connect(conn, path)
        except (FileNotFoundError, ConnectionRefusedError):
            raise NoAnswer("no resident process (it ended)", start=True) from None
        except OSError as exc:
            raise NoAnswer(f"could not reach the resident process: {exc.strerror or exc}", start=True) from None
        pid = peer(conn)
        try:
            conn.settimeout(max(0.001, ends - time.monotonic()))
            conn.sendall(json.dumps(request).encode("ascii"))
            conn.shutdown(socket.SHUT_WR)
            raw = receive(conn, ends)
        except TimeoutError:
            stop(pid)
            raise NoAnswer(
                f"the resident process did not answer within {wait:g}s; it was stopped", start=True
            ) from None
        except OSError as exc:
            raise NoAnswer(f"the resident process went away ({exc.strerror or exc})", start=True) from None
    try:
        reply = json.loads(raw)
    except (ValueError, RecursionError):  # cut short, or nested past the parser's limit
        raise NoAnswer("the resident process ended before it answered", start=True) from None
    if not isinstance(reply, dict):
        raise NoAnswer("the resident process gave no answer", start=True)
    if "refused" in reply:
        raise NoAnswer(str(reply["refused"])[:200], start=bool(reply.get("start")))
    if not isinstance(reply.get("stdout"), str) or not isinstance(reply.get("stderr"), str):
        raise NoAnswer("the resident process gave no answer", start=True)
    if not printable(reply["stdout"]):
        raise NoAnswer("the resident process gave an answer stdout cannot take", start=True)
    return reply


def printable(text: str) -> bool:
    """Whether ``text`` can be written to stdout whole (a lone surrogate cannot, in UTF-8)."""
    stream = sys.stdout
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8", getattr(stream, "errors", None) or "strict")
    except (LookupError, UnicodeError):
        return False
    return True


def peer(conn: socket.socket) -> int:
    """The resident's process id, after checking that it runs as this user (``SO_PEERCRED``)."""
    import socket

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        raise NoAnswer("resident processes need SO_PEERCRED (Linux)")
    creds = conn.getsockopt(socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid
    pid = int.from_bytes(creds[0:4], sys.byteorder, signed=True)
    uid = int.from_bytes(creds[4:8], sys.byteorder)
    if uid != os.getuid():
        raise NoAnswer(f"the resident socket is served by another user (uid {uid}); refused")
    return pid


def receive(conn: socket.socket, ends: float) -> bytes:
    """The whole reply, by ``ends`` (``time.monotonic``): a reply that trickles in never outlasts the wait."""
    chunks: list[bytes] = []
    size = 0
    while True:
        left = ends - time.monotonic()
        if left <= 0:
            raise TimeoutError
        conn.settimeout(left)
        chunk = conn.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_REPLY:
            raise NoAnswer("the resident process answered too much")
        chunks.append(chunk)


def stop(pid: int) -> None:
    """End a resident that stopped answering (same user, checked with ``SO_PEERCRED``)."""
    import signal

    if pid > 0:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def write(reply: dict[str, Any]) -> None:
    """Print the resident's answer as the in-process hook would have printed it."""
    if reply["stdout"]:
        try:
            sys.stdout.write(reply["stdout"])
            sys.stdout.flush()
        except (OSError, ValueError):
            pass  # the host went away; the resident logged what it answered
    if reply["stderr"]:
        data = reply["stderr"].encode("utf-8", "surrogateescape")
        try:
            if os.isatty(2):  # a person running the hook by hand: the plugins' output is shown, not obeyed
                from nia_core.terminal import written_to

                data = written_to(2, data)
            stream = getattr(sys.stderr, "buffer", None)
            if stream is not None:
                sys.stderr.flush()
                stream.write(data)
                stream.flush()
            else:
                sys.stderr.write(reply["stderr"])
        except (OSError, ValueError):
            pass


BOOT = (
    "import os, select, sys\n"
    "os.closerange(3, 1 << 16)\n"
    "listed, wake = os.pipe()\n"
    "if os.fork() == 0:\n"
    "    os.close(listed)\n"
    "    from nia_core.resident.server import main\n"
    "    main(sys.argv[1:], wake)\n"
    "    os._exit(0)\n"
    "os.close(wake)\n"
    "select.select([listed], [], [], float(sys.argv[3]))\n"
    "os._exit(0)"
)
"""The resident's first lines. It keeps none of the hook's other files open (an agent's pipe held by a resident
would keep the agent waiting for its end). It forks, so that the resident is nobody's child (the hook's own
process may be long-lived: a test runner); the process this hook waits for ends once the resident holds its
lock and is listed (or gave up), so that ``nia hook status`` and ``nia hook stop`` right after the hook see it,
but not past the hook's deadline (an interpreter slow to start on a loaded machine)."""


def start(
    found: dict[str, Any], hook_values: dict[str, str], options: dict[str, Any] | None, left: float = 10.0
) -> None:
    """Start a resident process for ``found`` (detached, in a session of its own) and return within ``left`` s.

    The interpreter is started in a session of its own with this hook's exact
    environment; it forks at once and the hook reaps the parent, so nothing is
    left for this process to wait for. Its standard streams are ``/dev/null``
    (never the agent's pipes, which the agent waits on). It runs with ``-P``
    (no working directory on ``sys.path``) and takes the hook's ``sys.path``
    from its arguments. Its environment and working directory are the hook's
    as they were before the hook was answered in-process (where a plugin may
    have changed both), and so is its umask.
    """
    python = sys.executable
    if not python:
        return
    flags = ["-P"] + ["-O"] * sys.flags.optimize + (["-X", "utf8"] if sys.flags.utf8_mode else [])
    wait = f"{max(0.1, min(10.0, left)):.3f}"  # for it to be listed: at most 10 s, never past the deadline
    argv = [python, *flags, "-c", BOOT, json.dumps(found["path"]), json.dumps(options or {}), wait]
    null = os.devnull
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0),
    ]
    try:
        os.chdir(found["cwd"])
        os.umask(found["umask"])
        pid = os.posix_spawn(python, argv, {**found["env"], **hook_values}, file_actions=actions, setsid=True)
        reap(pid, float(wait))
    except OSError:
        pass  # no resident this time; the next hook tries again


def reap(pid: int, seconds: float) -> None:
    """Wait at most ``seconds`` for child ``pid`` to end, and reap it if it did.

    One that has not (an interpreter slow to start) goes on by itself: the hook does not wait past its deadline,
    and the child is reaped by whoever inherits it when the hook's process ends.
    """
    import select

    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd (Linux before 5.3): wait as long as it takes
        os.waitpid(pid, 0)
        return
    try:
        waiting = select.poll()
        waiting.register(handle, select.POLLIN)
        waiting.poll(int(seconds * 1000))
        os.waitpid(pid, os.WNOHANG)
    finally:
        os.close(handle)
