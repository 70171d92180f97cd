"""Resources over stdio with the SDK's client: listing, reading, what an unavailable source says."""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client as sdk_stdio_client
from mcp.shared.exceptions import MCPError

from tests.mcp.helpers import make_project, nia, plugin_source, server_args, stdio_client

pytestmark = pytest.mark.slow


def test_lists_and_reads_every_source_and_the_baseline(tmp_path):
    project = make_project(tmp_path / "p", plugins={"greet": plugin_source("greet/hello", "hi there")})
    shown = nia("context", "show", "--location", str(project))
    assert shown.returncode == 0, shown.stderr

    async def main() -> None:
        async with stdio_client(project) as client:
            listed = (await client.list_resources()).resources
            by_uri = {str(r.uri): r for r in listed}
            assert "nia://context" in by_uri
            greet = by_uri["nia://source/greet/hello"]
            assert greet.meta == {"plugin": "greet", "status": "ok"}
            assert "nia://source/nia/instructions" in by_uri

            context = (await client.read_resource("nia://context")).contents[0]
            assert context.text + "\n" == shown.stdout  # what `nia context show` prints, byte for byte
            one = (await client.read_resource("nia://source/greet/hello")).contents[0]
            assert one.text == "greet/hello: hi there"
            assert one.meta == {"plugin": "greet", "status": "ok"}
            agents = (await client.read_resource("nia://source/nia/instructions")).contents[0]
            assert "Be brief." in agents.text

            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["nia://source/{+key}"]

            with pytest.raises(MCPError, match="no source 'nope/missing'"):
                await client.read_resource("nia://source/nope/missing")
            with pytest.raises(MCPError, match="unknown resource"):
                await client.read_resource("file:///etc/passwd")

    anyio.run(main)


def test_a_raising_or_hanging_plugin_affects_only_its_own_resource(tmp_path):
    raising = """
from nia_core import ContextSource, hookimpl

def load():
    raise RuntimeError("the service is down")

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="flaky/service", load=load, baseline=lambda v: v)]
"""
    hanging = """
import time
from nia_core import ContextSource, hookimpl

def load():
    time.sleep(120)

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="slow/thing", load=load, baseline=lambda v: v, timeout=0.5)]
"""
    project = make_project(
        tmp_path / "p",
        plugins={"flaky": raising, "slow": hanging, "greet": plugin_source("greet/hello", "hi")},
    )

    async def main() -> None:
        async with stdio_client(project) as client:
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            assert listed["nia://source/flaky/service"].meta["status"] == "error"
            assert "the service is down" in listed["nia://source/flaky/service"].meta["reason"]
            assert listed["nia://source/slow/thing"].meta["status"] == "timeout"
            with pytest.raises(MCPError, match=r"source flaky/service failed: .*RuntimeError: the service is down"):
                await client.read_resource("nia://source/flaky/service")
            with pytest.raises(MCPError, match="source slow/thing timed out"):
                await client.read_resource("nia://source/slow/thing")
            assert (await client.read_resource("nia://source/greet/hello")).contents[0].text == "greet/hello: hi"
            context = (await client.read_resource("nia://context")).contents[0]
            assert "greet/hello: hi" in context.text
            assert context.meta["unavailable"] == ["flaky/service", "slow/thing"]

    anyio.run(main)


def test_plugin_output_never_reaches_the_protocol_stream(tmp_path):
    noisy = """
import os, subprocess, sys
print("printed at import")
os.write(1, b"written to fd 1 at import\\n")
STDIN = sys.stdin.read() + os.read(0, 100).decode()  # must be end-of-file, never the protocol stream
from nia_core import ContextSource, hookimpl

def load():
    print("printed by the loader")
    subprocess.run([sys.executable, "-c", "print('a child process prints')"])
    return "ok" + STDIN

def render(value):
    print("printed by the renderer")
    return "noisy: " + value

@hookimpl
def nia_context_sources(location):
    print("printed by the hook")
    return [ContextSource(key="noisy/source", load=load, baseline=render)]
"""
    project = make_project(tmp_path / "p", plugins={"noisy": noisy})

    async def main() -> None:
        async with stdio_client(project) as client:
            text = (await client.read_resource("nia://source/noisy/source")).contents[0].text
            assert text == "noisy: ok"
            assert (await client.call_tool("context_changes", {})).structured_content["kind"] == "baseline"

    anyio.run(main)


def test_a_failing_renderer_makes_only_its_source_an_error(tmp_path):
    two = """
from nia_core import ContextSource, hookimpl

def broken(value):
    raise ValueError("cannot render " + value)

@hookimpl
def nia_context_sources(location):
    return [
        ContextSource(key="two/good", load=lambda: "fine", baseline=lambda v: "good: " + v),
        ContextSource(key="two/bad", load=lambda: "oops", baseline=broken),
    ]
"""
    project = make_project(tmp_path / "p", plugins={"two": two})

    async def main() -> None:
        async with stdio_client(project) as client:
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            assert listed["nia://source/two/good"].meta["status"] == "ok"
            assert listed["nia://source/two/bad"].meta["status"] == "error"
            assert (await client.read_resource("nia://source/two/good")).contents[0].text == "good: fine"
            with pytest.raises(MCPError, match="ValueError: cannot render oops"):
                await client.read_resource("nia://source/two/bad")
            assert "good: fine" in (await client.read_resource("nia://context")).contents[0].text

    anyio.run(main)


def test_the_bare_client_session_over_stdio(tmp_path):
    """The SDK's ClientSession on its own streams (what Client wraps): handshake, list, read, call."""
    project = make_project(tmp_path / "p", plugins={"greet": plugin_source("greet/hello", "bare")})
    params = StdioServerParameters(command=sys.executable, args=server_args(project), env=dict(os.environ))

    async def main() -> None:
        async with sdk_stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            uris = [str(r.uri) for r in (await session.list_resources()).resources]
            assert "nia://source/greet/hello" in uris
            read_back = await session.read_resource("nia://source/greet/hello")
            assert read_back.contents[0].text == "greet/hello: bare"
            called = await session.call_tool("context_changes", {})
            assert called.structured_content["kind"] == "baseline"

    anyio.run(main)
