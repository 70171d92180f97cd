"""Driving a real ``nia mcp`` with the SDK's own client: projects, servers, events with a timeout."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

NIA = [sys.executable, "-c", "from nia_core.cli import main; main()"]
TIMEOUT = 20.0
"""Generous: the machine is shared. A passing test waits tens of milliseconds per event."""
QUIET = ("-p", "no:nia-date")
"""The date changes at midnight; no test should see that."""


def plugin_source(key: str, value: str, *, extra: str = "") -> str:
    """A local plugin contributing one source ``key`` with value ``value`` (update and removal texts too)."""
    return (
        "from nia_core import ContextSource, hookimpl\n"
        + textwrap.dedent(extra)
        + "\n\n@hookimpl\ndef nia_context_sources(location):\n"
        + f"    return [ContextSource(key={key!r}, load=lambda: {value!r}, "
        + f"baseline=lambda v: {key!r} + ': ' + v, update=lambda old, new: {key!r} + ' is now ' + new, "
        + f"removal=lambda v: {key!r} + ' is gone')]\n"
    )


def write(path: Path, text: str) -> None:
    """Save like most editors do: a temporary file renamed over the original."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def make_project(root: Path, *, agents: str = "# Agents\n\nBe brief.\n", plugins: dict[str, str] | None = None) -> Path:
    (root / ".nia" / "plugins").mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    write(root / "AGENTS.md", agents)
    for name, text in (plugins or {}).items():
        write(root / ".nia" / "plugins" / f"{name}.py", text)
    return root


def server_args(project: Path, *extra: str) -> list[str]:
    return [*NIA[1:], *QUIET, "mcp", "--location", str(project), "--interval", "0", *extra]


@contextlib.asynccontextmanager
async def stdio_client(project: Path, *extra: str, mode: str = "auto", **kwargs: Any) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=server_args(project, *extra), env=dict(os.environ))
    async with Client(params, mode=mode, cache=None, read_timeout_seconds=TIMEOUT, **kwargs) as client:  # type: ignore[arg-type]
        yield client


def nia(*args: str, cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NIA, *QUIET, *args], cwd=cwd, capture_output=True, text=True, timeout=60, input=input, env=dict(os.environ)
    )


class Events:
    """Events a listening client heard, in order, with waiting."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        self.items.append(item)

    async def wait(self, predicate: Callable[[list[Any]], bool], what: str) -> None:
        with anyio.fail_after(TIMEOUT):
            while not predicate(self.items):
                await anyio.sleep(0.02)

    async def settle(self, quiet: float = 1.0) -> None:
        """Wait until nothing more arrives for ``quiet`` seconds (a storm would keep arriving)."""
        count = -1
        while count != len(self.items):
            count = len(self.items)
            await anyio.sleep(quiet)


def uris(events: Sequence[Any]) -> list[str]:
    """The URIs of the resource-updated events among ``events`` (listen events or legacy notifications)."""
    found: list[str] = []
    for event in events:
        uri = getattr(event, "uri", None)
        if uri is None and isinstance(event, types.ResourceUpdatedNotification):
            uri = event.params.uri
        if uri is not None:
            found.append(str(uri))
    return found


def named(events: Sequence[Any], kind: type) -> int:
    return sum(isinstance(event, kind) for event in events)


@contextlib.asynccontextmanager
async def listening(client: Client, **filters: Any) -> AsyncIterator[Events]:
    """Open a ``subscriptions/listen`` stream and collect its events in the background."""
    events = Events()
    async with client.listen(**filters) as subscription, anyio.create_task_group() as group:

        async def collect() -> None:
            async for event in subscription:
                events.add(event)

        group.start_soon(collect)
        yield events
        group.cancel_scope.cancel()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(project: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A real ``nia mcp --http`` process; yields its URL once it serves."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, *server_args(project, "--http", f"127.0.0.1:{port}", *extra)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            if process.poll() is not None:
                raise AssertionError(f"nia mcp --http exited: {process.stderr.read() if process.stderr else ''}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            if time.monotonic() > deadline:
                raise AssertionError("nia mcp --http did not start listening")
            time.sleep(0.05)
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


class RawServer:
    """A real ``nia mcp`` over pipes, driven byte by byte: write lines, read the JSON lines it answers."""

    def __init__(self, project: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *server_args(project, *extra)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._errors: list[bytes] = []
        self._stderr_reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_reader.start()

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._errors.append(line)

    def start_reading(self) -> None:
        """Read stdout on a thread from now on (a client that never reads simply never calls this)."""

        def read() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.lines.put(line)
            self.lines.put(None)

        threading.Thread(target=read, daemon=True).start()

    def send(self, data: bytes | str | dict[str, Any]) -> None:
        if isinstance(data, dict):
            data = json.dumps(data)
        if isinstance(data, str):
            data = data.encode()
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        assert line is not None, "the server closed stdout"
        answer: dict[str, Any] = json.loads(line)  # every line on stdout is a protocol message
        return answer

    def reply(self, ident: object, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The answer to request ``ident`` (notifications in between are skipped)."""
        while True:
            answer = self.answer(timeout)
            if "id" in answer and answer["id"] == ident:
                return answer

    def handshake(self, *, keep_reading: bool = True) -> None:
        """Initialize; without ``keep_reading`` the answer is read directly and nothing after it."""
        self.send(INITIALIZE)
        if keep_reading:
            self.start_reading()
            assert self.answer()["id"] == 1
        else:
            assert self.process.stdout is not None
            assert json.loads(self.process.stdout.readline())["id"] == 1
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def stderr(self) -> str:
        """What the server wrote on stderr so far (all of it once it exited)."""
        if self.process.poll() is not None:
            self._stderr_reader.join(TIMEOUT)
        return b"".join(self._errors).decode("utf-8", "replace")

    def close(self) -> int:
        """Close stdin (a clean end) and wait; kill on a hang."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
        except OSError:
            pass
        try:
            return self.process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("nia mcp did not exit after its stdin closed") from None
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def peak_rss_mb(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in MiB (Linux)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM in /proc status")


class HttpSession:
    """Raw JSON-RPC over a running ``nia mcp --http``: one initialized session, bodies posted as given."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = ""
        status, answer, headers = self.post(INITIALIZE)
        assert status == 200 and answer is not None and answer["id"] == 1, (status, answer)
        self.session = headers.get("mcp-session-id", "")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, body: bytes | dict[str, Any]) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        """The status, the JSON-RPC answer (``None`` when there is none) and the headers."""
        import urllib.error
        import urllib.request

        data = json.dumps(body).encode() if isinstance(body, dict) else body
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            headers |= {"mcp-session-id": self.session, "mcp-protocol-version": "2025-11-25"}
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                status, text, got = response.status, response.read().decode(), dict(response.headers)
        except urllib.error.HTTPError as error:
            status, text, got = error.code, error.read().decode(), dict(error.headers)
        got = {key.lower(): value for key, value in got.items()}
        events = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        payload = events[-1] if events else text
        try:
            answer = json.loads(payload) if payload.strip() else None
        except ValueError:
            answer = {"text": payload}
        return int(status), answer, got


class Flood:
    """Writes ``lines`` to a server's stdin on a thread, counting the bytes the pipe took."""

    def __init__(self, server: RawServer, lines: Sequence[bytes]) -> None:
        self.offered = sum(map(len, lines))
        self.accepted = 0
        self._lines = lines
        self._server = server
        self.writer = threading.Thread(target=self._write, daemon=True)
        self.writer.start()

    def _write(self) -> None:
        stdin = self._server.process.stdin
        assert stdin is not None
        try:
            for line in self._lines:
                stdin.write(line)
                self.accepted += len(line)
            stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def held_back(self, timeout: float = TIMEOUT) -> bool:
        """Wait until the pipe stops taking bytes; whether the writer is still blocked, far from done."""
        last, deadline = -1, time.monotonic() + timeout
        while self.accepted != last and time.monotonic() < deadline:
            last = self.accepted
            time.sleep(2.0)
        return self.writer.is_alive() and self.accepted < self.offered // 2
