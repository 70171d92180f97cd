"""Variations on the MCP server's limits: other files turned hostile, other floods, other ids, other huge values.

Each case drives the real ``nia mcp`` process over its stdin/stdout as a
hostile client (or a hostile repository) would; what counts as a failure is
a server that stops answering, stops following the project, grows with what
it is sent, hands a value back at full size, or prints a traceback.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from nia_core.mcp.limits import MAX_MESSAGE_BYTES
from tests.mcp.helpers import TIMEOUT, Flood, RawServer, make_project, peak_rss_mb, write
from tests.unix_sockets import bind_unix_socket

pytestmark = pytest.mark.slow

SLOW = 3 * TIMEOUT


def isolated(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".config" / "nia").mkdir(parents=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "NIA_DB": str(home / "nia.db")}


def context_text(server: RawServer, ident: int) -> str:
    server.send({"jsonrpc": "2.0", "id": ident, "method": "resources/read", "params": {"uri": "nia://context"}})
    answer = server.reply(ident, SLOW)
    return str(answer["result"]["contents"][0]["text"])


def wait_for_context(server: RawServer, marker: str, first_id: int) -> None:
    deadline = time.monotonic() + SLOW
    ident = first_id
    while marker not in context_text(server, ident):
        assert time.monotonic() < deadline, f"{marker!r} never reached nia://context"
        ident += 1
        time.sleep(0.2)


def clean_stderr(server: RawServer) -> None:
    err = server.stderr()
    assert "Traceback" not in err and "Exception in thread" not in err and "unexpected" not in err, err[-3000:]


def hostile(kind: str, path: Path) -> None:
    """Turn ``path`` into something no reader may block on, read whole, or follow out."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "urandom":
        path.symlink_to("/dev/urandom")
    elif kind == "socket":
        bind_unix_socket(path).close()
    elif kind == "folder":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path.name)
    else:
        raise AssertionError(kind)


CASES = {
    "global AGENTS.md as a FIFO": ("fifo", "HOME/.config/nia/AGENTS.md"),
    "global AGENTS.md linked to /dev/urandom": ("urandom", "HOME/.config/nia/AGENTS.md"),
    "commands.toml as a socket": ("socket", ".nia/commands.toml"),
    "commands.toml as a folder": ("folder", ".nia/commands.toml"),
    "project.toml as a symlink loop": ("loop", ".nia/project.toml"),
    "a new plugin linked to /dev/urandom": ("urandom", ".nia/plugins/evil.py"),
    "a nested AGENTS.md as a FIFO": ("fifo", "src/AGENTS.md"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_server_follows_the_project_whatever_a_file_becomes(tmp_path, case):
    kind, where = CASES[case]
    env = isolated(tmp_path)
    root = make_project(tmp_path / "p")
    write(root / ".nia" / "commands.toml", '[[workflows]]\ntarget = "a"\n\n[[workflows.operations]]\nname = "b"\n')
    target = Path(where.replace("HOME", env["HOME"])) if where.startswith("HOME") else root / where
    server = RawServer(root, env=env)
    try:
        server.handshake()
        wait_for_context(server, "Be brief.", 100)
        hostile(kind, target)
        time.sleep(1.0)
        for n, method in enumerate(["prompts/list", "resources/list", "tools/list"], start=200):
            server.send({"jsonrpc": "2.0", "id": n, "method": method})
            server.reply(n, SLOW)  # an answer (or an error): the server serves
        write(root / "AGENTS.md", "# Agents\n\nedited after the swap\n")
        wait_for_context(server, "edited after the swap", 300)
        assert server.close() == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()
    clean_stderr(server)


FLOODS = {
    "lines that are not JSON": lambda n: b"{not json " + b"x" * 1000,
    "requests of another method": lambda n: json.dumps(
        {"jsonrpc": "2.0", "id": n, "method": "resources/list", "params": {"_meta": {"pad": "x" * 1000}}}
    ).encode(),
    "requests with ids that are not ids": lambda n: json.dumps(
        {"jsonrpc": "2.0", "id": None, "method": "ping", "params": {"_meta": {"pad": "x" * 1000}}}
    ).encode(),
}


@pytest.mark.parametrize("flood", sorted(FLOODS))
def test_every_flood_that_is_not_read_is_held_back(tmp_path, flood):
    make = FLOODS[flood]
    server = RawServer(make_project(tmp_path / "p"), env=isolated(tmp_path))
    lines = [make(n) + b"\n" for n in range(1000, 9000)]
    try:
        server.handshake(keep_reading=False)
        before = peak_rss_mb(server.process.pid)
        flood = Flood(server, lines)
        assert flood.held_back(SLOW), f"took {flood.accepted} of {flood.offered} bytes unread"
        assert peak_rss_mb(server.process.pid) - before < 64
        server.start_reading()
        flood.writer.join(SLOW)
        server.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        assert server.reply("after", SLOW)["result"] == {}
        assert server.close() == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()
    clean_stderr(server)


def test_ids_out_of_bounds_and_oversize_lines_of_every_shape(tmp_path):
    server = RawServer(make_project(tmp_path / "p"), env=isolated(tmp_path))
    try:
        server.handshake()
        for ident in ["x" * 257, 2**63, -(2**63) - 1, 1e3, -0.5, {"id": 1}]:
            server.send({"jsonrpc": "2.0", "id": ident, "method": "ping"})
            answer = server.answer(SLOW)
            assert answer["id"] is None and answer["error"]["code"] == -32600, (str(ident)[:40], answer)
        for ident in ["", "x" * 256, 2**63 - 1, -(2**63), 0]:  # at the bounds: ids, answered with them
            server.send({"jsonrpc": "2.0", "id": ident, "method": "ping"})
            assert server.reply(ident, SLOW)["result"] == {}
        hidden = {"jsonrpc": "2.0", "method": "ping", "params": {"a": "z" * (MAX_MESSAGE_BYTES + 10), "id": 5}}
        server.send(json.dumps(hidden))  # an "id" only inside params: nothing to answer it by
        refused = server.answer(SLOW)
        assert refused["id"] is None and refused["error"]["code"] == -32600
        exact = json.dumps({"jsonrpc": "2.0", "id": "exact", "method": "ping", "params": {"_meta": {"p": ""}}})
        pad = MAX_MESSAGE_BYTES - len(exact)
        server.send(exact.replace('"p": ""', '"p": "' + "e" * pad + '"'))  # 16 MiB with its newline: read
        assert server.reply("exact", SLOW)["result"] == {}
        assert server.process.stdin is not None
        server.process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 77, "method": "ping"}).encode()[:-1])
        server.process.stdin.write(b', "p": "' + b"t" * (MAX_MESSAGE_BYTES + 1) + b'"}')  # no newline, then EOF
        server.process.stdin.close()
        last = server.reply(77, SLOW)
        assert last["error"]["code"] == -32600 and len(json.dumps(last)) < 1000
        assert server.process.wait(SLOW) == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()
    clean_stderr(server)


def test_huge_values_in_other_places_are_never_handed_back(tmp_path):
    root = make_project(tmp_path / "p")
    write(root / ".nia" / "commands.toml", '[[workflows]]\ntarget = "a"\n\n[[workflows.operations]]\nname = "b"\n')
    server = RawServer(root, env=isolated(tmp_path))
    value = "v" * (4 * 1024 * 1024)
    calls = [
        ("resources/unsubscribe", {"uri": value}),
        ("resources/read", {"uri": "nia://context/" + value}),
        ("prompts/get", {"name": "a b", "arguments": {"input": value}}),
        ("prompts/get", {"name": value + " b"}),
        ("logging/setLevel", {"level": value}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": value}, "argument": {"name": "x", "value": ""}}),
        ("tools/call", {"name": "context_changes", "arguments": {"cursor": value, "extra": value}}),
        ("tools/call", {"name": "context_changes", "arguments": {"cursor": "mcp-" + "a" * 20 + "." + value}}),
        ("resources/templates/list", {"cursor": value}),
        ("notifications/" + value, {}),
    ]
    try:
        server.handshake()
        for n, (method, params) in enumerate(calls, start=10):
            server.send({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
            shown = json.dumps(server.reply(n, SLOW))
            assert len(shown) < 2000, (method, shown[:300])
        server.send({"jsonrpc": "2.0", "id": "alive", "method": "ping"})
        assert server.reply("alive", SLOW)["result"] == {}
        assert server.close() == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()
    clean_stderr(server)
