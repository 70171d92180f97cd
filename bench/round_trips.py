"""Round trips to PostgreSQL counted on the wire, per store step of a turn.

A TCP relay sits between the store and the server, reads the messages the
client sends, and counts each time the server answers after the client sent a
message that asks for an answer now (``Sync``, ``Flush``, a simple ``Query``,
or a start-up message): one round trip, however many statements the client
pipelined ahead of it, and however the bytes were split on the way (a server
may answer the first statements of a batch before its end arrives; the client
does not wait for that). Counting on the wire rather than in psycopg means
nothing the driver does (pipeline flushes, prepares, pool checks) can hide
from the count.

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
            reader = _ClientMessages()
            threading.Thread(target=self._pump, args=(client, server, reader, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, reader, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, reader: _ClientMessages, from_client: bool) -> None:
        try:
            while data := source.recv(65536):
                with self._lock:
                    if from_client:
                        reader.feed(data)
                    elif reader.waiting:
                        reader.waiting = False
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


WAITS_FOR_ANSWER = frozenset(b"SHQ")
"""Sync, Flush and Query: after these the client waits for the server."""
UNTYPED_REQUESTS = {80877103, 80877104}
"""SSLRequest and GSSENCRequest: still before the start-up message, which is untyped too."""


class _ClientMessages:
    """Follows the client's message framing across chunks; ``waiting`` once it asked for an answer."""

    def __init__(self) -> None:
        self.waiting = False
        self._typed = False  # after the start-up message every message starts with its type byte
        self._buffer = b""
        self._skip = 0

    def feed(self, data: bytes) -> None:
        if self._skip:
            taken = min(self._skip, len(data))
            self._skip -= taken
            data = data[taken:]
        self._buffer += data
        while True:
            header = 5 if self._typed else 8
            if len(self._buffer) < header:
                return
            if self._typed:
                kind = self._buffer[0]
                length = int.from_bytes(self._buffer[1:5], "big") + 1
                if kind in WAITS_FOR_ANSWER:
                    self.waiting = True
            else:
                length = int.from_bytes(self._buffer[0:4], "big")
                code = int.from_bytes(self._buffer[4:8], "big")
                self.waiting = True
                self._typed = code not in UNTYPED_REQUESTS
            if len(self._buffer) >= length:
                self._buffer = self._buffer[length:]
            else:
                self._skip = length - len(self._buffer)
                self._buffer = b""
                return


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
