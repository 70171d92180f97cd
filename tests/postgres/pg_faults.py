"""Fault injection for the PostgreSQL tests: a connection-cutting proxy, a held session lock, hooks.

- :class:`CuttingProxy` forwards a TCP connection to the server and, when armed,
  cuts it at the next ``COMMIT``: ``before`` the server sees it (the transaction
  is rolled back) or ``after`` the server committed but before the client hears
  so, the case where only the transaction's status can tell what happened.
- :class:`SessionLock` holds a session's row lock from outside nia, so nia's
  next write to it waits inside its transaction, where a test can terminate
  its backend or let a statement timeout fire.
- :class:`HookedStore` runs a callback just before one store method.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import psycopg

COMMIT = b"COMMIT\x00"
"""``COMMIT`` as it appears on the wire, in a Query message or (pipeline mode) a Parse message."""


class CuttingProxy:
    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        user = parts.username or ""
        if parts.password:
            user += f":{parts.password}"
        self.url = urllib.parse.urlunsplit(parts._replace(netloc=f"{user}@127.0.0.1:{self.port}"))
        self.armed: str | None = None
        self.cuts = 0
        self.on_cut: Callable[[], None] | None = None
        """Runs at the cut, before the client notices it (to restart the server in between, say)."""
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, when: str) -> None:
        assert when in ("before", "after")
        with self._lock:
            self.armed = when

    def _take(self) -> str | None:
        with self._lock:
            when, self.armed = self.armed, None
            return when

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:  # the server is down (restarting): this client sees a refused connection
                client.close()
                continue
            for sock in (client, server):  # as libpq does: no Nagle delay on small messages
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            cut_reply = threading.Event()
            threading.Thread(target=self._client_to_server, args=(client, server, cut_reply), daemon=True).start()
            threading.Thread(target=self._server_to_client, args=(client, server, cut_reply), daemon=True).start()

    def _cut(self, *sockets: socket.socket) -> None:
        with self._lock:
            self.cuts += 1
        if self.on_cut is not None:
            self.on_cut()
        _close(*sockets)

    def _client_to_server(self, client: socket.socket, server: socket.socket, cut_reply: threading.Event) -> None:
        try:
            while data := client.recv(65536):
                if COMMIT in data and self.armed:
                    when = self._take()
                    if when == "before":
                        self._cut(client, server)
                        return
                    if when == "after":
                        cut_reply.set()
                server.sendall(data)
        except OSError:
            pass
        _close(client, server)

    def _server_to_client(self, client: socket.socket, server: socket.socket, cut_reply: threading.Event) -> None:
        try:
            while data := server.recv(65536):
                if cut_reply.is_set():
                    self._cut(client, server)
                    return
                client.sendall(data)
        except OSError:
            pass
        _close(client, server)

    def close(self) -> None:
        self.listener.close()


def _close(*sockets: socket.socket) -> None:
    """Shut down, then close: a bare close() neither wakes the other pump's recv() nor tells the peer."""
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()


class SessionLock:
    """Holds ``SELECT … FOR UPDATE`` on a session's row (in the URL's schema) until released."""

    def __init__(self, url: str, session_id: str) -> None:
        self.conn = psycopg.connect(url, application_name="nia-test-lock")
        self.conn.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,))

    def release(self) -> None:
        self.conn.commit()
        self.conn.close()


def waiting_backends(admin_url: str) -> list[int]:
    """nia's backends blocked on a lock right now."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'nia' AND wait_event_type = 'Lock'"
        ).fetchall()
    return [int(row[0]) for row in rows]


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {predicate}")
        time.sleep(0.01)


def terminate(admin_url: str, pid: int) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


class HookedStore:
    """Delegates to a store; ``before[name]`` runs (once) just before the method ``name``."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.before: dict[str, Callable[[], None]] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            hook = self.before.pop(name, None)
            if hook is not None:
                hook()
            return attr(*args, **kwargs)

        return call
