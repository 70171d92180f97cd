"""The context_changes cursors (durable across restarts) and workflows as prompts (byte for byte)."""

from __future__ import annotations

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from nia_core.sessions import open_store
from tests.mcp.helpers import make_project, nia, plugin_source, stdio_client, write

pytestmark = pytest.mark.slow

PROJECT = '[project]\nrole_prompt = "You are a careful engineer."\n'
COMMANDS = """\
[[workflows]]
target = "code"
description = "Work on the code."

[[workflows.operations]]
name = "create"
description = "Create something new."
task_prompt = "Implement what the user asks."
user_input = true

[[workflows.operations]]
name = "review"
task_prompt = "Review the current change."
"""


async def changes(client, cursor=None):
    arguments = {} if cursor is None else {"cursor": cursor}
    result = await client.call_tool("context_changes", arguments)
    assert not result.is_error, result.content
    return result.structured_content


def test_cursors_walk_updates_additions_and_removals_across_a_restart(tmp_path, monkeypatch):
    database = tmp_path / "nia.db"
    monkeypatch.setenv("NIA_DB", str(database))
    project = make_project(
        tmp_path / "p",
        plugins={"greet": plugin_source("greet/hello", "hi"), "gone": plugin_source("gone/soon", "here")},
    )

    async def first_server() -> tuple[str, str]:
        async with stdio_client(project) as client:
            start = await changes(client)
            assert start["kind"] == "baseline"
            assert start["text"] == (await client.read_resource("nia://context")).contents[0].text
            again = await changes(client, start["cursor"])
            assert again["kind"] == "unchanged" and again["text"] == ""

            write(project / ".nia" / "plugins" / "greet.py", plugin_source("greet/hello", "hello"))
            write(project / "AGENTS.md", "# Agents\n\nNew rule.\n")
            update = await changes(client, again["cursor"])
            assert update["kind"] == "update"
            assert "greet/hello is now hello" in update["text"]
            assert "New rule." in update["text"]
            # The same cursor again: the same admitted message, nothing admitted twice.
            replay = await changes(client, again["cursor"])
            assert replay["text"] == update["text"]
            return start["cursor"], update["cursor"]

    first_cursor, cursor = anyio.run(first_server)

    # While no server runs: a new source and a removal.
    write(project / ".nia" / "plugins" / "fresh.py", plugin_source("fresh/one", "new"))
    (project / ".nia" / "plugins" / "gone.py").unlink()

    async def second_server() -> None:
        async with stdio_client(project) as client:
            update = await changes(client, cursor)
            assert update["kind"] == "update"
            assert "fresh/one: new" in update["text"]
            assert "gone/soon is gone" in update["text"]
            assert "greet/hello" not in update["text"]
            # Everything since the very first cursor: both admitted messages, in order.
            everything = await changes(client, first_cursor)
            assert everything["text"].index("greet/hello is now hello") < everything["text"].index("fresh/one")
            assert (await changes(client, update["cursor"]))["kind"] == "unchanged"

            for bad in ("nonsense", "abcdef012345.1.1"):
                result = await client.call_tool("context_changes", {"cursor": bad})
                assert result.is_error
                assert "cursor" in result.content[0].text

    anyio.run(second_server)

    # The text is what the session layer admitted: a system_update message of the cursor's session.
    session_id = cursor.split(".")[0]
    with open_store(str(database)) as store:
        admitted = [e.message.text for e in store.history(session_id) if e.message.kind == "system_update"]
    assert len(admitted) == 2
    assert "fresh/one: new" in admitted[1]


def test_workflow_prompts_are_what_print_prompt_prints(tmp_path):
    project = make_project(tmp_path / "p", plugins={"greet": plugin_source("greet/hello", "hi")})
    write(project / ".nia" / "commands.toml", COMMANDS)
    write(project / ".nia" / "project.toml", PROJECT)
    printed = nia("code", "create", "--print-prompt", "add", "a", "verbose", "flag", cwd=project)
    assert printed.returncode == 0, printed.stderr
    reviewed = nia("code", "review", "--print-prompt", cwd=project)
    assert reviewed.returncode == 0, reviewed.stderr

    async def main() -> None:
        async with stdio_client(project) as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert sorted(prompts) == ["code create", "code review"]
            assert [(a.name, a.required) for a in prompts["code create"].arguments] == [("input", True)]
            assert not prompts["code review"].arguments
            assert prompts["code create"].description == "Create something new."

            got = await client.get_prompt("code create", {"input": "add a verbose flag"})
            assert got.messages[0].content.text + "\n" == printed.stdout
            got = await client.get_prompt("code review")
            assert got.messages[0].content.text + "\n" == reviewed.stdout

            with pytest.raises(MCPError, match="needs user input"):
                await client.get_prompt("code create")
            with pytest.raises(MCPError, match="unknown operation 'deploy'"):
                await client.get_prompt("code deploy")

            # A broken commands.toml is an MCP error with its one line; the server goes on.
            write(project / ".nia" / "commands.toml", COMMANDS + "\n[[workflows]]\ntarget = 3\n")
            with pytest.raises(MCPError) as failed:
                await client.list_prompts()
            assert "commands.toml" in str(failed.value) and "\n" not in str(failed.value)
            with pytest.raises(MCPError, match=r"commands\.toml"):
                await client.get_prompt("code review")
            assert (await client.read_resource("nia://source/greet/hello")).contents[0].text == "greet/hello: hi"

    anyio.run(main)
