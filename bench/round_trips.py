"""Round trips to PostgreSQL counted on the wire, per store step of a turn.

A TCP relay sits between the store and the server and counts each time the
server answers after the client has sent something: one round trip, however
many statements the client pipelined into it. Counting on the wire rather than
in psycopg means nothing the driver does (pipeline flushes, prepares, pool
checks) can hide from the count.

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
            sent = [False]  # per connection: the client spoke since the server last answered
            threading.Thread(target=self._pump, args=(client, server, sent, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, sent, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, sent: list[bool], from_client: bool) -> None:
        try:
            while data := source.recv(65536):
                with self._lock:
                    if from_client:
                        sent[0] = True
                    elif sent[0]:
                        sent[0] = False
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
