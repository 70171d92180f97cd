"""The server keeps serving whatever the project's files become: a FIFO, a link to /dev/zero, at start or later.

Each file the server reads is replaced while it serves (or before it starts);
the follower reports the file and goes on, and an edit made afterwards still
reaches ``nia://context``, on stdio and over HTTP.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.mcp.helpers import TIMEOUT, http_server, make_project, plugin_source, stdio_client, write

pytestmark = pytest.mark.slow

WORKFLOW = '[[workflows]]\ntarget = "code"\n\n[[workflows.operations]]\nname = "review"\ntask_prompt = "Review."\n'
SERVED_FILES = (".nia/commands.toml", ".nia/project.toml", ".nia/plugins/greet.py")
"""Files the server reads besides AGENTS.md, whose edits the tests watch for."""


def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "p", plugins={"greet": plugin_source("greet/hello", "hi")})
    write(root / ".nia" / "commands.toml", WORKFLOW)
    return root


def replace_with(path: Path, kind: str) -> None:
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


async def edit_reaches_the_context(client: Client, root: Path, marker: str) -> None:
    """An edit made now is read and announced: ``nia://context`` shows it."""
    write(root / "AGENTS.md", f"# Agents\n\n{marker}\n")
    with anyio.fail_after(TIMEOUT * 2):
        while marker not in (await client.read_resource("nia://context")).contents[0].text:
            await anyio.sleep(0.1)


async def still_answers(client: Client) -> None:
    """Every kind of request is answered (an error is an answer)."""
    with anyio.fail_after(TIMEOUT * 2):
        await client.list_prompts()
        changes = await client.call_tool("context_changes", {})
        assert changes.structured_content is not None and changes.structured_content["kind"] == "baseline"
        await client.list_resources()


@pytest.mark.parametrize("kind", ["fifo", "devzero"])
def test_files_swapped_for_special_files_while_serving_never_stop_the_follower(tmp_path, kind):
    root = project(tmp_path)

    async def main() -> None:
        async with stdio_client(root) as client:
            await edit_reaches_the_context(client, root, "before-the-swap")
            for name in SERVED_FILES:
                replace_with(root / name, kind)
            await anyio.sleep(1.0)  # let the follower meet them
            await still_answers(client)
            await edit_reaches_the_context(client, root, "after-the-swap")
            replace_with(root / "AGENTS.md", kind)  # the watched file itself
            await anyio.sleep(1.0)
            await still_answers(client)
            await edit_reaches_the_context(client, root, "after-agents-md-came-back")
            for name in SERVED_FILES:  # and back to regular files: served again
                (root / name).unlink()
            write(root / ".nia" / "commands.toml", WORKFLOW)
            await edit_reaches_the_context(client, root, "after-the-repair")
            with anyio.fail_after(TIMEOUT * 2):
                while not (await client.list_prompts()).prompts:
                    await anyio.sleep(0.1)

    anyio.run(main)


@pytest.mark.parametrize("kind", ["fifo", "devzero"])
def test_special_files_at_start_up_are_reported_and_the_server_serves(tmp_path, kind):
    root = project(tmp_path)
    for name in (*SERVED_FILES, "AGENTS.md"):
        replace_with(root / name, kind)

    async def main() -> None:
        async with stdio_client(root) as client:
            await still_answers(client)
            await edit_reaches_the_context(client, root, "edited-after-a-hostile-start")

    anyio.run(main)


def test_over_http_the_follower_survives_a_fifo_and_a_devzero_link(tmp_path):
    root = project(tmp_path)

    async def main(url: str) -> None:
        async with Client(url, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
            replace_with(root / ".nia" / "commands.toml", "devzero")
            replace_with(root / ".nia" / "project.toml", "fifo")
            await anyio.sleep(1.0)
            await still_answers(client)
            await edit_reaches_the_context(client, root, "over-http-after-the-swap")

    with http_server(root) as (url, process):
        anyio.run(main, url)
        process.terminate()
        assert process.wait(TIMEOUT) == 0
        stderr = process.stderr.read() if process.stderr else ""
        assert "Traceback" not in stderr and "Exception in thread" not in stderr, stderr[-2000:]
