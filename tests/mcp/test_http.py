"""Streamable HTTP: the same server on 127.0.0.1, with Host and Origin checks against DNS rebinding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.mcp.helpers import (
    TIMEOUT,
    Events,
    free_port,
    http_server,
    listening,
    make_project,
    named,
    nia,
    plugin_source,
    server_args,
    uris,
    write,
)

pytestmark = pytest.mark.slow

GREET = "nia://source/greet/hello"


def test_http_lists_reads_listens_and_calls(tmp_path):
    project = make_project(tmp_path / "p", plugins={"greet": plugin_source("greet/hello", "hi")})
    with http_server(project) as (url, _process):

        async def main() -> None:
            async with Client(url, cache=None, read_timeout_seconds=TIMEOUT) as client:
                assert client.protocol_version == "2026-07-28"
                listed = [str(r.uri) for r in (await client.list_resources()).resources]
                assert "nia://context" in listed and GREET in listed
                assert (await client.read_resource(GREET)).contents[0].text == "greet/hello: hi"
                start = (await client.call_tool("context_changes", {})).structured_content
                assert start["kind"] == "baseline"
                async with listening(client, resource_subscriptions=["nia://context", GREET]) as events:
                    write(project / ".nia" / "plugins" / "greet.py", plugin_source("greet/hello", "over http"))
                    await events.wait(lambda e: GREET in uris(e), "the update")
                    await events.settle()
                    assert sorted(uris(events.items)) == ["nia://context", GREET]
                assert (await client.read_resource(GREET)).contents[0].text == "greet/hello: over http"

            heard = Events()

            async def on_message(message: object) -> None:
                if isinstance(message, types.ResourceUpdatedNotification):
                    heard.add(message)

            async with Client(url, mode="legacy", cache=None, message_handler=on_message) as client:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the old revision's API, on purpose
                    await client.session.subscribe_resource(GREET)
                write(project / ".nia" / "plugins" / "greet.py", plugin_source("greet/hello", "legacy http"))
                await heard.wait(lambda e: GREET in uris(e), "the legacy update")
                await heard.settle()
                assert uris(heard.items) == [GREET]
                assert named(heard.items, types.ResourceUpdatedNotification) == 1

        anyio.run(main)


def post(url: str, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_dns_rebinding_and_foreign_origins_are_refused(tmp_path):
    project = make_project(tmp_path / "p")
    with http_server(project) as (url, process):
        port = url.split(":")[2].split("/")[0]
        assert post(url, {"Host": f"attacker.example:{port}"}) == 421
        assert post(url, {"Origin": "http://attacker.example"}) == 403
        assert post(url, {"Origin": f"http://localhost:{port}"}) not in (403, 421)
        assert post(url, {}) not in (403, 421)
        process.terminate()  # SIGTERM: a clean stop
        assert process.wait(TIMEOUT) == 0
        assert "Traceback" not in (process.stderr.read() if process.stderr else "")


def test_remote_addresses_need_allow_remote(tmp_path):
    project = make_project(tmp_path / "p")
    refused = nia("mcp", "--location", str(project), "--http", "0.0.0.0:8765")
    assert refused.returncode == 2
    assert "--allow-remote" in refused.stderr
    assert "Traceback" not in refused.stderr
    bad = nia("mcp", "--location", str(project), "--http", "localhost:notaport")
    assert bad.returncode == 2
    assert "expected [HOST:]PORT" in bad.stderr


def test_allow_remote_serves_with_a_loud_warning(tmp_path):
    project = make_project(tmp_path / "p")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, *server_args(project, "--http", f"0.0.0.0:{port}", "--allow-remote")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert process.stderr is not None
        warning = process.stderr.readline()
        assert warning.startswith("WARNING: nia mcp is listening on 0.0.0.0")
        assert "anyone who can reach this port reads this project's context" in warning
        deadline = time.monotonic() + TIMEOUT
        while "serving http://" not in process.stderr.readline():
            assert time.monotonic() < deadline and process.poll() is None
        assert post(f"http://127.0.0.1:{port}/mcp", {}) not in (403, 421)
    finally:
        process.terminate()
        assert process.wait(TIMEOUT) == 0
