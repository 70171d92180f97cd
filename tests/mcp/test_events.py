"""Change events: a listening client hears exactly the URIs that changed, once, on either protocol era."""

from __future__ import annotations

import warnings

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated

from tests.mcp.helpers import Events, listening, make_project, named, plugin_source, stdio_client, uris, write

pytestmark = pytest.mark.slow

CONTEXT = "nia://context"
AGENTS = "nia://source/nia/instructions"
GREET = "nia://source/greet/hello"
OTHER = "nia://source/other/thing"


def project_with_two_plugins(tmp_path):
    return make_project(
        tmp_path / "p",
        plugins={"greet": plugin_source("greet/hello", "hi"), "other": plugin_source("other/thing", "stays")},
    )


def test_listen_hears_only_the_changed_uris_and_list_changes(tmp_path):
    project = project_with_two_plugins(tmp_path)

    async def main() -> None:
        async with stdio_client(project) as client:
            assert client.protocol_version == "2026-07-28"
            filters = {
                "resource_subscriptions": [CONTEXT, AGENTS, GREET, OTHER],
                "resources_list_changed": True,
                "prompts_list_changed": True,
            }
            async with listening(client, **filters) as events:
                # An AGENTS.md edit: the instructions source and the context, nothing else.
                write(project / "AGENTS.md", "# Agents\n\nBe thorough.\n")
                await events.wait(lambda e: {CONTEXT, AGENTS} <= set(uris(e)), "the AGENTS.md update")
                await events.settle()
                assert sorted(uris(events.items)) == sorted([CONTEXT, AGENTS])
                text = (await client.read_resource(AGENTS)).contents[0].text
                assert "Be thorough." in text

                # A local plugin's code edit: reloaded in-process, only its source changes.
                events.items.clear()
                write(project / ".nia" / "plugins" / "greet.py", plugin_source("greet/hello", "hello again"))
                await events.wait(lambda e: {CONTEXT, GREET} <= set(uris(e)), "the plugin update")
                await events.settle()
                assert sorted(uris(events.items)) == sorted([CONTEXT, GREET])
                assert named(events.items, ResourcesListChanged) == 0
                assert (await client.read_resource(GREET)).contents[0].text == "greet/hello: hello again"

                # Deleting a plugin: the list changes and its resource is gone.
                events.items.clear()
                (project / ".nia" / "plugins" / "other.py").unlink()
                await events.wait(lambda e: named(e, ResourcesListChanged) >= 1, "the list change")
                await events.settle()
                assert named(events.items, ResourcesListChanged) == 1
                assert uris(events.items) == [CONTEXT]
                listed = [str(r.uri) for r in (await client.list_resources()).resources]
                assert OTHER not in listed
                assert GREET in listed
                with pytest.raises(MCPError, match="no source 'other/thing'"):
                    await client.read_resource(OTHER)

                # A new workflow: the prompt list changes.
                events.items.clear()
                write(
                    project / ".nia" / "commands.toml",
                    '[[workflows]]\ntarget = "code"\n\n[[workflows.operations]]\nname = "review"\n'
                    'task_prompt = "Review the change."\n',
                )
                await events.wait(lambda e: named(e, PromptsListChanged) >= 1, "the prompt list change")
                await events.settle()
                assert named(events.items, PromptsListChanged) == 1
                assert uris(events.items) == []
                assert [p.name for p in (await client.list_prompts()).prompts] == ["code review"]

    anyio.run(main)


def test_a_listener_hears_only_what_it_asked_for(tmp_path):
    project = project_with_two_plugins(tmp_path)

    async def main() -> None:
        async with stdio_client(project) as client, listening(client, resource_subscriptions=[OTHER]) as events:
            write(project / ".nia" / "plugins" / "greet.py", plugin_source("greet/hello", "changed"))
            write(project / ".nia" / "plugins" / "other.py", plugin_source("other/thing", "changed too"))
            await events.wait(lambda e: OTHER in uris(e), "the other update")
            await events.settle()
            assert uris(events.items) == [OTHER]
            assert all(isinstance(e, ResourceUpdated) for e in events.items)

    anyio.run(main)


def test_an_older_revision_subscribes_and_gets_notifications(tmp_path):
    project = project_with_two_plugins(tmp_path)
    heard = Events()

    async def on_message(message: object) -> None:
        if isinstance(
            message,
            types.ResourceUpdatedNotification
            | types.ResourceListChangedNotification
            | types.PromptListChangedNotification,
        ):
            heard.add(message)

    async def main() -> None:
        async with stdio_client(project, mode="legacy", message_handler=on_message) as client:
            assert client.protocol_version != "2026-07-28"
            capabilities = client.server_capabilities.resources
            assert capabilities is not None and capabilities.subscribe and capabilities.list_changed
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.subscribe_resource(GREET)
                await client.subscribe_resource(CONTEXT)
            write(project / "AGENTS.md", "# Agents\n\nNew rules.\n")  # changes a URI this client did not ask for
            write(project / ".nia" / "plugins" / "greet.py", plugin_source("greet/hello", "legacy hello"))
            await heard.wait(lambda e: GREET in uris(e), "the greet update")
            await heard.settle()
            assert sorted(set(uris(heard.items))) == sorted([CONTEXT, GREET])
            assert uris(heard.items).count(GREET) == 1
            assert (await client.read_resource(GREET)).contents[0].text == "greet/hello: legacy hello"

            heard.items.clear()
            (project / ".nia" / "plugins" / "other.py").unlink()
            await heard.wait(lambda e: named(e, types.ResourceListChangedNotification) >= 1, "the list change")
            await heard.settle()
            assert named(heard.items, types.ResourceListChangedNotification) == 1
            assert OTHER not in [str(r.uri) for r in (await client.list_resources()).resources]

            heard.items.clear()
            write(project / ".nia" / "commands.toml", '[[workflows]]\ntarget = "docs"\n')
            await heard.wait(lambda e: named(e, types.PromptListChangedNotification) >= 1, "the prompt list change")
            await heard.settle()
            assert named(heard.items, types.PromptListChangedNotification) == 1
            assert uris(heard.items) == []

    anyio.run(main)


def test_sources_that_are_not_project_files_are_observed_every_interval(tmp_path):
    outside = tmp_path / "service-state.txt"  # not under the project: no file event announces it
    outside.write_text("green")
    reader = f"""
from pathlib import Path
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="svc/state", load=lambda: Path({str(outside)!r}).read_text(),
                          baseline=lambda v: "service is " + v)]
"""
    project = make_project(tmp_path / "p", plugins={"svc": reader})
    state = "nia://source/svc/state"

    async def main() -> None:
        async with stdio_client(project, "--interval", "0.3") as client:
            async with listening(client, resource_subscriptions=[state, CONTEXT]) as events:
                outside.write_text("red")
                await events.wait(lambda e: state in uris(e), "the periodic re-observation")
                await events.settle()
                assert sorted(uris(events.items)) == sorted([CONTEXT, state])  # once, though observed many times
            assert (await client.read_resource(state)).contents[0].text == "service is red"

    anyio.run(main)


def test_the_user_global_agents_md_is_watched_too(tmp_path, isolated_environment):
    project = make_project(tmp_path / "p")
    global_agents = isolated_environment / ".config" / "nia" / "AGENTS.md"
    write(global_agents, "# Everywhere\n\nUse metric units.\n")

    async def main() -> None:
        async with stdio_client(project) as client, listening(client, resource_subscriptions=[AGENTS]) as events:
            assert "Use metric units." in (await client.read_resource(AGENTS)).contents[0].text
            write(global_agents, "# Everywhere\n\nUse imperial units.\n")
            await events.wait(lambda e: AGENTS in uris(e), "the global AGENTS.md update")
            await events.settle()
            assert uris(events.items) == [AGENTS]
            assert "Use imperial units." in (await client.read_resource(AGENTS)).contents[0].text

    anyio.run(main)
