"""Running the server: stdio (the default) or streamable HTTP, until EOF, SIGTERM or Ctrl-C."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import signal
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage

from nia_core.context import Location
from nia_core.errors import UsageError
from nia_core.mcp import missing_sdk, wire
from nia_core.mcp.client_config import client_views
from nia_core.mcp.cursors import Cursors
from nia_core.mcp.limits import MAX_MESSAGE_BYTES
from nia_core.mcp.live import DEFAULT_INTERVAL, LiveContext
from nia_core.mcp.prompts import Prompts
from nia_core.mcp.server import NiaServer
from nia_core.mcp.stdio import ClaimedStdio, Lines, Output, Oversize, claim_stdio
from nia_core.mcp.wire import InFlight
from nia_core.plugin_host.watch import WatchSettings
from nia_core.sessions.open import open_store

log = logging.getLogger("nia.mcp")

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class Options:
    location: Location
    plugins_dirs: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    interval: float | None = DEFAULT_INTERVAL
    watch: WatchSettings | None = None
    http: tuple[str, int] | None = None
    allow_remote: bool = False
    allowed_hosts: tuple[str, ...] = field(default=())
    client: str | None = None
    """The client served (``--client``): the files it loads itself are left out of what it gets."""


def build(options: Options) -> NiaServer:
    """Load the plugins, render the first view and assemble the server (plugins run here)."""
    live = LiveContext(
        options.location,
        plugins_dirs=options.plugins_dirs,
        flags=options.flags,
        interval=options.interval,
        settings=options.watch,
        narrow=client_views(options.client, options.location.root),
    ).open()
    timeout = live.session.host.timeout
    cursors = Cursors(open_store, str(options.location.path), live.context, timeout=timeout)
    prompts = Prompts(options.location, lambda: live.context(whole=True), timeout=timeout)
    return NiaServer(live, cursors, prompts)


# -- stdio -----------------------------------------------------------------------------------


def serve_stdio(options: Options) -> None:
    """Serve on stdin/stdout; the real descriptors are claimed before any plugin is imported."""
    claimed = claim_stdio()
    server: NiaServer | None = None
    try:
        server = build(options)
        anyio.run(_stdio_main, server, claimed)
    finally:
        if server is not None:
            server.live.stop()
        claimed.release()


async def _stdio_main(server: NiaServer, claimed: ClaimedStdio) -> None:
    server.bind_loop()
    server.live.start()
    stdout = await Output.open(claimed.stdout)
    lines = Lines(claimed.stdin)
    in_flight = InFlight()
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as group:
        group.start_soon(_stop_on_signals, group.cancel_scope)
        group.start_soon(_write, from_server, stdout, in_flight)
        group.start_soon(_read, lines, to_server, to_client, in_flight)
        low = server._lowlevel_server
        await low.run(from_client, to_client, low.create_initialization_options())
        group.cancel_scope.cancel()  # EOF: the client is gone


async def _read(lines: Lines, forward: Any, answer: Any, in_flight: InFlight) -> None:
    """Parse each line, answer what is not a JSON-RPC message, and admit requests within the in-flight bounds."""
    async with forward:
        while (line := await lines.next()) is not None:
            message: types.JSONRPCMessage | None = None
            refusal: types.JSONRPCError | None = None
            if isinstance(line, Oversize):
                refusal = wire.oversize(line)
            elif line.isspace():
                continue
            else:
                message, refusal = wire.parse(line)
                size = len(line)
            if refusal is not None:
                try:
                    await answer.send(SessionMessage(refusal))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
                continue
            if isinstance(message, types.JSONRPCRequest):
                await in_flight.admit(message.id, size)
            elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
                in_flight.cancelled(message.params)
            if message is not None:
                await forward.send(SessionMessage(message))


async def _write(messages: Any, stdout: Output, in_flight: InFlight) -> None:
    """Write each message as one line; a request counts as answered once its answer is written."""
    async with messages:
        async for session_message in messages:
            message = session_message.message
            await stdout.write(message.model_dump_json(by_alias=True, exclude_unset=True) + "\n")
            if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
                in_flight.answered(message.id)


async def _stop_on_signals(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


# -- streamable HTTP ---------------------------------------------------------------------------


def parse_address(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` (``[::1]:PORT`` for IPv6); the host defaults to 127.0.0.1."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise UsageError(f"--http {value!r}: expected [HOST:]PORT, e.g. 8765 or 127.0.0.1:8765") from None
    if not 0 <= number <= 65535:
        raise UsageError(f"--http {value!r}: port {number} is out of range")
    return host, number


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def security(host: str, allowed_hosts: Iterable[str]) -> TransportSecuritySettings:
    """Host and Origin checks against DNS rebinding: only names this server is reached by, only local origins.

    A web page the user visits cannot talk to the server: its Origin is not
    local (403), and a rebound DNS name does not pass the Host check (421).
    """
    names = [*LOOPBACK_NAMES]
    if not is_loopback(host) and host not in ("0.0.0.0", "::"):
        names.append(f"[{host}]" if ":" in host else host)
    names += [name for name in allowed_hosts if name not in names]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in names] + list(names),
        allowed_origins=[f"http://{name}:*" for name in LOOPBACK_NAMES] + [f"http://{name}" for name in LOOPBACK_NAMES],
    )


def check_remote(options: Options) -> None:
    assert options.http is not None
    host = options.http[0]
    if is_loopback(host):
        return
    if not options.allow_remote:
        raise UsageError(
            f"--http {host}: not a loopback address; nia mcp serves your project's whole context, "
            "so it binds 127.0.0.1 unless you pass --allow-remote"
        )


def serve_http(options: Options) -> None:
    check_remote(options)
    try:
        import uvicorn  # noqa: F401 - the SDK's dependency, imported only for HTTP
    except ImportError as exc:
        raise UsageError(missing_sdk(exc)) from None
    assert options.http is not None
    host, port = options.http
    if not is_loopback(host):
        print(
            f"WARNING: nia mcp is listening on {host}:{port} with no authentication: anyone who can reach "
            "this port reads this project's context (every source, every workflow prompt).",
            file=sys.stderr,
            flush=True,
        )
    server = build(options)
    try:
        anyio.run(_http_main, server, host, port, security(host, options.allowed_hosts))
    finally:
        server.live.stop()


async def _http_main(server: NiaServer, host: str, port: int, settings: TransportSecuritySettings) -> None:
    import uvicorn

    class Web(uvicorn.Server):
        """uvicorn, minus its signal capture: it re-raises SIGTERM after shutting down, an unclean exit."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    app = wire.ScreenHttp(
        server.streamable_http_app(host=host, transport_security=settings, max_request_body_size=MAX_MESSAGE_BYTES)
    )
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=2)
    web = Web(config)
    server.bind_loop()
    server.live.start()

    async def announce() -> None:
        while not web.started:
            await anyio.sleep(0.02)
        bound = [s.getsockname() for server_ in web.servers for s in server_.sockets]
        shown = bound[0][1] if bound else port
        name = f"[{host}]" if ":" in host else host
        print(f"nia mcp: serving http://{name}:{shown}/mcp", file=sys.stderr, flush=True)

    async def stop_on_signals() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                web.force_exit = web.should_exit  # a second signal: stop waiting for open streams
                web.should_exit = True

    async with anyio.create_task_group() as group:
        group.start_soon(announce)
        group.start_soon(stop_on_signals)
        await web.serve()
        group.cancel_scope.cancel()
