"""The server as a process: only protocol on stdout, protocol errors for bad input, clean exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import pytest

import nia_core
from tests.mcp.helpers import TIMEOUT, RawServer, make_project, plugin_source

pytestmark = pytest.mark.slow


def test_malformed_input_gets_protocol_errors_and_the_server_goes_on(tmp_path):
    noisy = 'print("plugin noise at import")\n' + plugin_source("greet/hello", "hi")
    server = RawServer(make_project(tmp_path / "p", plugins={"greet": noisy}))
    try:
        server.handshake()
        server.send("this is not json")
        assert server.answer()["error"]["code"] == -32700
        server.send({"neither": "a request"})
        assert server.answer()["error"]["code"] == -32600
        server.send({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": 42}})
        answer = server.answer()
        assert answer["id"] == 2 and answer["error"]["code"] == -32602
        server.send({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"})
        assert server.answer()["error"]["code"] == -32601
        server.send({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "nia://context"}})
        answer = server.answer()
        assert "greet/hello: hi" in answer["result"]["contents"][0]["text"]
        assert server.close() == 0  # EOF: a clean exit
        stderr = server.stderr()
        assert "plugin noise at import" in stderr
        assert "Traceback" not in stderr
    finally:
        if server.process.poll() is None:
            server.process.kill()


def test_sigterm_stops_the_server_cleanly(tmp_path):
    server = RawServer(make_project(tmp_path / "p"))
    try:
        server.handshake()
        server.send({"jsonrpc": "2.0", "id": 2, "method": "resources/list"})
        assert "resources" in server.answer()["result"]
        server.process.send_signal(signal.SIGTERM)  # stdin stays open: the signal alone must end it
        assert server.process.wait(TIMEOUT) == 0
        assert "Traceback" not in server.stderr()
    finally:
        if server.process.poll() is None:
            server.process.kill()


def test_without_the_mcp_extra_the_server_says_which_extra_to_install(tmp_path):
    """A Python whose site-packages lacks the SDK (``mcp``, ``mcp_types``): one line naming the extra."""
    site = Path(sysconfig.get_paths()["purelib"])
    without = tmp_path / "site-packages"
    without.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().startswith("mcp"):
            (without / entry.name).symlink_to(entry)
    repository = Path(nia_core.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(without), str(repository)])}
    project = make_project(tmp_path / "p")
    for args in (["mcp", "--location", str(project)], ["mcp", "--location", str(project), "--http", "0"]):
        done = subprocess.run(
            [sys.executable, "-S", "-c", "from nia_core.cli import main; main()", *args],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=TIMEOUT * 3,
        )
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "the 'mcp' extra: pip install 'mcp<3,>=2.3'" in lines[0], done.stderr
        assert "Traceback" not in done.stderr and "unexpected" not in done.stderr


def test_sigterm_stops_a_server_whose_client_stopped_reading(tmp_path):
    server = RawServer(make_project(tmp_path / "p"))
    try:
        server.handshake(keep_reading=False)
        assert server.process.stdin is not None

        def flood() -> None:
            try:
                for n in range(100, 30_000):
                    server.send({"jsonrpc": "2.0", "id": n, "method": "ping"})
            except (BrokenPipeError, ValueError, OSError):
                pass

        threading.Thread(target=flood, daemon=True).start()
        time.sleep(3.0)  # its stdout pipe is full: the server waits to write
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(TIMEOUT) == 0
        assert "Traceback" not in server.stderr()
    finally:
        if server.process.poll() is None:
            server.process.kill()
