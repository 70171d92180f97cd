"""A client nia does not control: bounded input and memory, JSON-RPC errors that quote little, no outside paths.

Every test drives the real ``nia mcp`` process, on stdio byte by byte or over
HTTP, as a misbehaving client would.
"""

from __future__ import annotations

import json

import pytest

from nia_core.mcp.limits import MAX_MESSAGE_BYTES
from tests.mcp.helpers import TIMEOUT, Flood, HttpSession, RawServer, http_server, make_project, peak_rss_mb

pytestmark = pytest.mark.slow

SHORT = 1000
"""An error answer to a huge value is at most this long (the value itself is megabytes)."""
BIG = 8 * 1024 * 1024
"""Under the message limit, so the server reads it and must answer without echoing it."""
SLOW = 3 * TIMEOUT
"""For answers to messages of megabytes on a shared, loaded machine."""


def ping(ident: object, pad: int = 0) -> dict[str, object]:
    message: dict[str, object] = {"jsonrpc": "2.0", "id": ident, "method": "ping"}
    if pad:
        message["params"] = {"_meta": {"pad": "x" * pad}}
    return message


def test_a_client_that_writes_and_never_reads_is_held_back_then_answered(tmp_path):
    server = RawServer(make_project(tmp_path / "p"))
    count = 12_000
    lines = [json.dumps(ping(n, pad=1000)).encode() + b"\n" for n in range(100, 100 + count)]
    try:
        server.handshake(keep_reading=False)
        before = peak_rss_mb(server.process.pid)
        flood = Flood(server, lines)
        assert flood.held_back(), f"the server took {flood.accepted} of {flood.offered} bytes, none of it answered"
        assert peak_rss_mb(server.process.pid) - before < 64

        server.start_reading()  # the client reads at last: every ping is answered, in order
        answered = [server.reply(n)["id"] for n in range(100, 100 + count)]
        assert answered == list(range(100, 100 + count))
        flood.writer.join(TIMEOUT)
        assert server.close() == 0
        assert "Traceback" not in server.stderr()
    finally:
        if server.process.poll() is None:
            server.process.kill()


def test_a_message_over_the_limit_is_refused_with_its_id_and_the_server_goes_on(tmp_path):
    server = RawServer(make_project(tmp_path / "p"))
    pad = MAX_MESSAGE_BYTES + 1024
    try:
        server.handshake()
        before = peak_rss_mb(server.process.pid)
        server.send(json.dumps(ping(7, pad=pad)))  # the id first, as the Python SDK writes it
        refused = server.reply(7, SLOW)
        assert refused["error"]["code"] == -32600
        assert "16 MiB" in refused["error"]["message"] and len(json.dumps(refused)) < SHORT
        tail_first = {"method": "ping", "params": {"_meta": {"pad": "y" * pad}}, "jsonrpc": "2.0", "id": "late"}
        server.send(json.dumps(tail_first))  # the id last, as the TypeScript SDK writes it
        assert server.reply("late", SLOW)["error"]["code"] == -32600
        server.send(json.dumps(ping(8, pad=BIG)))  # large but within the limit: served
        assert server.reply(8, SLOW)["result"] == {}
        assert peak_rss_mb(server.process.pid) - before < 200
        assert server.close() == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()


NOT_IDS = [None, True, False, 1.5, {"a": 1}, [1]]


def test_a_request_whose_id_is_not_an_id_gets_invalid_request_on_stdio(tmp_path):
    server = RawServer(make_project(tmp_path / "p"))
    try:
        server.handshake()
        for ident in NOT_IDS:
            server.send(ping(ident))
            answer = server.answer()
            assert answer["id"] is None and answer["error"]["code"] == -32600, (ident, answer)
        server.send(ping("still-serving"))
        assert server.reply("still-serving")["result"] == {}
    finally:
        server.close()


def test_a_request_whose_id_is_not_an_id_gets_invalid_request_over_http(tmp_path):
    with http_server(make_project(tmp_path / "p")) as (url, _process):
        session = HttpSession(url)
        for ident in NOT_IDS:
            status, answer, _ = session.post(ping(ident))
            assert status == 400 and answer is not None, (ident, status, answer)
            assert answer["id"] is None and answer["error"]["code"] == -32600
        status, answer, _ = session.post(ping(5))
        assert status == 200 and answer is not None and answer["result"] == {}
        status, answer, _ = session.post(json.dumps(ping(6, pad=MAX_MESSAGE_BYTES + 1)).encode())
        assert status == 413 and answer is not None and answer["error"]["code"] == -32600
        assert len(json.dumps(answer)) < SHORT


def huge_requests(value: str) -> list[dict[str, object]]:
    """Requests that carry ``value`` where the server names what it refuses."""
    calls = [
        ("resources/read", {"uri": value}),
        ("resources/read", {"uri": "nia://source/" + value}),
        ("resources/subscribe", {"uri": value}),
        ("prompts/get", {"name": value}),
        ("prompts/get", {"name": "code " + value}),
        ("prompts/get", {"name": "code review", "arguments": {value: "x"}}),
        ("tools/call", {"name": "context_changes", "arguments": {"cursor": value}}),
        ("tools/call", {"name": value, "arguments": {}}),
        (value, {}),
    ]
    return [{"jsonrpc": "2.0", "id": n, "method": method, "params": params} for n, (method, params) in enumerate(calls)]


def with_workflow(project):
    (project / ".nia" / "commands.toml").write_text(
        '[[workflows]]\ntarget = "code"\n\n[[workflows.operations]]\nname = "review"\ntask_prompt = "Review."\n'
    )
    return project


def test_errors_quote_only_a_short_prefix_of_a_huge_value_on_stdio(tmp_path):
    server = RawServer(with_workflow(make_project(tmp_path / "p")))
    try:
        server.handshake()
        for request in huge_requests("q" * BIG):
            server.send(request)
            answer = server.reply(request["id"], SLOW)
            shown = json.dumps(answer)
            assert len(shown) < SHORT, (request["method"], shown[:300])
            assert "error" in answer or answer["result"].get("isError"), shown[:300]
    finally:
        server.close()


def test_errors_quote_only_a_short_prefix_of_a_huge_value_over_http(tmp_path):
    with http_server(with_workflow(make_project(tmp_path / "p"))) as (url, _process):
        session = HttpSession(url)
        for request in huge_requests("h" * (BIG // 2)):
            status, answer, _ = session.post(request)
            shown = json.dumps(answer)
            assert answer is not None and len(shown) < SHORT, (request["method"], status, shown[:300])


def test_cursor_errors_never_name_a_path_outside_the_project(tmp_path):
    database = tmp_path / "home" / "private-store" / "nia.db"
    database.parent.mkdir(parents=True)
    env = {"NIA_DB": str(database)}
    other = make_project(tmp_path / "other-project-secret-name")
    first = RawServer(other, env=env)
    try:
        first.handshake()
        first.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "context_changes"}})
        cursor = first.reply(2)["result"]["structuredContent"]["cursor"]
    finally:
        first.close()
    server = RawServer(make_project(tmp_path / "p"), env=env)
    try:
        server.handshake()
        foreign_chain = "mcp-" + "0" * 20 + ".1.1"
        for n, value in enumerate([cursor, foreign_chain, "not a cursor"], start=10):
            server.send(
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {"name": "context_changes", "arguments": {"cursor": value}},
                }
            )
            result = server.reply(n)["result"]
            text = json.dumps(result)
            assert result["isError"] is True
            for outside in ("other-project-secret-name", "private-store", str(tmp_path)):
                assert outside not in text, text
    finally:
        server.close()
