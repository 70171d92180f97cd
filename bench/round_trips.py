"""Round trips to PostgreSQL counted on the wire, per store step of a turn.

A TCP relay sits between the store and the server and follows the protocol's
messages both ways. A round trip is the client asking for an answer now
(``Sync``, a simple ``Query``, a start-up message, or a ``Flush`` while no
``Sync`` is still unanswered) and the server then answering: one, however many
statements were pipelined ahead of it and however the bytes were split on the
way. (A server may answer the first statements of a batch before its end
arrives, and psycopg may add a ``Flush`` behind a ``Sync`` to collect the rest
of that same answer; the client waits once for all of it.) Counting on the wire
rather than in psycopg means nothing the driver does (pipeline flushes,
prepares, pool checks) can hide from the count.

Per step: the store's methods are wrapped, so the round trips made while one of
them runs are charged to it (one runner, one thread: nothing else talks).
"""

from __future__ import annotations

import socket
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable
from typing import Any

STEPS = (
    "view",
    "state",
    "history",
    "enqueue",
    "promote",
    "admit_update",
    "start_epoch",
    "append",
    "create_session",
    "session",
)
"""The store methods a turn may call (``view`` exists from schema 3 on)."""


class CountingRelay:
    """Relays TCP connections to ``url``'s server; ``trips`` counts server answers that follow client sends."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.listener = socket.create_server(("127.0.0.1", 0))
        user = parts.username or ""
        if parts.password:
            user += f":{parts.password}"
        port = self.listener.getsockname()[1]
        self.url = urllib.parse.urlunsplit(parts._replace(netloc=f"{user}@127.0.0.1:{port}"))
        self.trips = 0
        self.syncs = 0
        """``Sync`` and ``Query`` messages the clients sent: each ends with a wait for the server's
        ReadyForQuery. Unlike ``trips`` it does not depend on how the answers were split, so tests count it."""
        self.connections = 0
        self.received = 0
        """Bytes the server sent the clients: what reads cost on the wire."""
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
            wire = _Conversation()
            threading.Thread(target=self._pump, args=(client, server, wire, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, wire, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, wire: _Conversation, from_client: bool) -> None:
        try:
            while data := source.recv(65536):
                with self._lock:
                    if from_client:
                        self.syncs += wire.client_sent(data)
                    else:
                        self.received += len(data)
                        if wire.server_sent(data):
                            self.trips += 1
                target.sendall(data)
        except OSError:
            pass
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.listener.close()


UNTYPED_REQUESTS = {80877103, 80877104}
"""SSLRequest and GSSENCRequest: answered by one untyped byte, before the (untyped) start-up message."""


class _Frames:
    """Splits one direction's bytes into protocol messages, across chunks: ``(type, whole message)``."""

    def __init__(self, typed: bool) -> None:
        self.typed = typed
        """After the start-up message every message starts with its type byte (the server's always do)."""
        self.raw = 0
        """Untyped single bytes to take first (the answer to an SSL or GSS request)."""
        self._buffer = b""

    def feed(self, data: bytes) -> list[int]:
        """The types of the messages ``data`` completes (0 for an untyped one)."""
        self._buffer += data
        done: list[int] = []
        while True:
            if self.raw:
                if not self._buffer:
                    return done
                self.raw -= 1
                self._buffer = self._buffer[1:]
                done.append(0)
                continue
            header = 5 if self.typed else 4
            if len(self._buffer) < header:
                return done
            if self.typed:
                kind, length = self._buffer[0], int.from_bytes(self._buffer[1:5], "big") + 1
            else:
                kind, length = 0, int.from_bytes(self._buffer[0:4], "big")
            if len(self._buffer) < length:
                return done
            message, self._buffer = self._buffer[:length], self._buffer[length:]
            done.append(kind)
            if not self.typed:
                code = int.from_bytes(message[4:8], "big")
                if code in UNTYPED_REQUESTS:
                    self.on_untyped_request()
                else:
                    self.typed = True

    def on_untyped_request(self) -> None:
        """Set by :class:`_Conversation`: the server answers this one with a single untyped byte."""


class _Conversation:
    """One connection's two directions; says when an answer from the server ends a round trip."""

    def __init__(self) -> None:
        self._client = _Frames(typed=False)
        self._server = _Frames(typed=True)
        self._client.on_untyped_request = self._expect_byte  # type: ignore[method-assign]
        self._waiting = False
        self._unanswered = 0  # Syncs and Queries whose ReadyForQuery has not come yet

    def _expect_byte(self) -> None:
        self._server.raw += 1

    def client_sent(self, data: bytes) -> int:
        """How many ``Sync`` and ``Query`` messages ``data`` completes."""
        syncs = 0
        for kind in self._client.feed(data):
            if kind in (0, ord("S"), ord("Q")):
                self._waiting = True
                self._unanswered += kind != 0
                syncs += kind != 0
            elif kind == ord("H") and not self._unanswered:
                self._waiting = True  # a fetch in the middle of a pipeline
        return syncs

    def server_sent(self, data: bytes) -> bool:
        """Whether this answer ends a round trip (the first bytes after a request)."""
        answered = self._waiting
        self._waiting = False
        for kind in self._server.feed(data):
            if kind == ord("Z"):
                self._unanswered = max(0, self._unanswered - 1)
        return answered


class StepCounter:
    """Wraps ``store``'s step methods in place; ``calls[step]`` and ``trips[step]`` add up what each cost."""

    def __init__(self, store: Any, relay: CountingRelay) -> None:
        self.relay = relay
        self.calls: Counter[str] = Counter()
        self.trips: Counter[str] = Counter()
        self._depth = 0
        for step in STEPS:
            method = getattr(store, step, None)
            if method is not None:
                setattr(store, step, self._wrap(step, method))

    def _wrap(self, step: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            if self._depth:  # a step calling another is charged to the outer one
                return method(*args, **kwargs)
            self._depth += 1
            before = self.relay.trips
            try:
                return method(*args, **kwargs)
            finally:
                self._depth -= 1
                self.calls[step] += 1
                self.trips[step] += self.relay.trips - before

        return counted

    def reset(self) -> None:
        self.calls.clear()
        self.trips.clear()
