"""The server as a process: only protocol on stdout, protocol errors for bad input, clean exits."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading

import pytest

from tests.mcp.helpers import TIMEOUT, make_project, plugin_source, server_args

pytestmark = pytest.mark.slow

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


class Server:
    """A raw ``nia mcp`` over pipes: write lines, read the JSON lines it answers."""

    def __init__(self, project) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *server_args(project)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def request(self, message: dict) -> None:
        self.send(json.dumps(message))

    def answer(self) -> dict:
        line = self.lines.get(timeout=TIMEOUT)
        assert line is not None, "the server closed stdout"
        return json.loads(line)  # every line on stdout is a protocol message

    def handshake(self) -> None:
        self.request(INITIALIZE)
        assert self.answer()["id"] == 1
        self.request({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read()


def test_malformed_input_gets_protocol_errors_and_the_server_goes_on(tmp_path):
    noisy = 'print("plugin noise at import")\n' + plugin_source("greet/hello", "hi")
    server = Server(make_project(tmp_path / "p", plugins={"greet": noisy}))
    try:
        server.handshake()
        server.send("this is not json")
        assert server.answer()["error"]["code"] == -32700
        server.request({"neither": "a request"})
        assert server.answer()["error"]["code"] == -32600
        server.request({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": 42}})
        answer = server.answer()
        assert answer["id"] == 2 and answer["error"]["code"] == -32602
        server.request({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"})
        assert server.answer()["error"]["code"] == -32601
        server.request({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "nia://context"}})
        answer = server.answer()
        assert "greet/hello: hi" in answer["result"]["contents"][0]["text"]
        server.process.stdin.close()  # EOF: a clean exit
        assert server.process.wait(TIMEOUT) == 0
        stderr = server.stderr()
        assert "plugin noise at import" in stderr
        assert "Traceback" not in stderr
    finally:
        if server.process.poll() is None:
            server.process.kill()


def test_sigterm_stops_the_server_cleanly(tmp_path):
    server = Server(make_project(tmp_path / "p"))
    try:
        server.handshake()
        server.request({"jsonrpc": "2.0", "id": 2, "method": "resources/list"})
        assert "resources" in server.answer()["result"]
        server.process.send_signal(signal.SIGTERM)  # stdin stays open: the signal alone must end it
        assert server.process.wait(TIMEOUT) == 0
        assert "Traceback" not in server.stderr()
    finally:
        if server.process.poll() is None:
            server.process.kill()
