"""A scriptable HTTP server on 127.0.0.1 for answers no real API gives: redirects, lies, floods, stalls.

Each request is recorded (method, path, headers, body) and answered by the
next scripted function, which writes whatever bytes it likes to the socket.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class RawServer:
    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.answers: deque[Answer] = deque()
        self.default: Answer | None = None
        self.stop_event = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def start(self) -> RawServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def then(self, answer: Answer) -> None:
        self.answers.append(answer)

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        self.seen.append(Seen(handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body))
        answer = self.answers.popleft() if self.answers else self.default
        if answer is None:
            respond(handler, 404, b'{"error": {"message": "nothing scripted"}}')
            return
        answer(handler)


def respond(
    handler: BaseHTTPRequestHandler,
    status: int,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    *,
    length: int | None = None,
) -> None:
    handler.send_response(status)
    for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(body) if length is None else length))
    handler.end_headers()
    handler.wfile.write(body)
    handler.wfile.flush()


def start_stream(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
    handler.close_connection = True


def _handler(server: RawServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            try:
                server.handle(self)
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                pass  # the client gave up: part of the tests
            self.close_connection = True

        do_POST = do_GET = do_CONNECT = _any

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
