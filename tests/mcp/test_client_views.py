"""``nia mcp --client NAME``: what the client loads itself is left out, as the agent hooks leave it out.

Claude Code, Codex, OpenCode, Copilot CLI and Qwen Code load the project's AGENTS.md into every session; nia's
user-global AGENTS.md they do not. Through MCP, as through the hooks, they
get the one and not the other, unless ``[hooks] deliver_native_files`` says
otherwise. Workflow prompts stay what ``--print-prompt`` prints.
"""

from __future__ import annotations

import anyio
import pytest

from tests.mcp.helpers import make_project, nia, stdio_client, write

pytestmark = pytest.mark.slow

PROJECT_RULE = "PROJECT-RULE: use tabs."
GLOBAL_RULE = "GLOBAL-RULE: answer briefly."
WORKFLOW = '[[workflows]]\ntarget = "code"\n\n[[workflows.operations]]\nname = "review"\ntask_prompt = "Review."\n'


@pytest.fixture
def project(tmp_path, monkeypatch):
    config = tmp_path / "config"
    (config / "nia").mkdir(parents=True)
    (config / "nia" / "AGENTS.md").write_text(GLOBAL_RULE + "\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    root = make_project(tmp_path / "p", agents=f"# Agents\n\n{PROJECT_RULE}\n")
    write(root / ".nia" / "commands.toml", WORKFLOW)
    return root


async def seen(project, *extra: str) -> tuple[str, str, str, list[str]]:
    """nia://context, context_changes' baseline, the workflow prompt, the source URIs, for a client."""
    async with stdio_client(project, *extra) as client:
        context = (await client.read_resource("nia://context")).contents[0].text
        changes = await client.call_tool("context_changes", {})
        assert changes.structured_content is not None
        prompt = (await client.get_prompt("code review")).messages[0].content.text
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        return context, changes.structured_content["text"], prompt, listed


@pytest.mark.parametrize("client", ["claude-code", "codex", "opencode", "copilot", "qwen-code"])
def test_an_agent_client_gets_the_global_agents_md_but_not_the_projects(project, client):
    context, baseline, prompt, _ = anyio.run(seen, project, "--client", client)
    for text in (context, baseline):
        assert GLOBAL_RULE in text and PROJECT_RULE not in text
    printed = nia("code", "review", "--print-prompt", cwd=project)
    assert prompt + "\n" == printed.stdout and PROJECT_RULE in prompt  # a prompt is the workflow's, whole


def test_without_a_client_or_for_an_editor_everything_is_served(project):
    for extra in ((), ("--client", "json")):
        context, baseline, _, _ = anyio.run(seen, project, *extra)
        assert GLOBAL_RULE in context and PROJECT_RULE in context and PROJECT_RULE in baseline


def test_an_edit_of_the_projects_agents_md_is_no_change_for_the_client_that_loads_it(project):
    async def main() -> None:
        async with stdio_client(project, "--client", "claude-code") as client:
            first = await client.call_tool("context_changes", {})
            assert first.structured_content is not None
            cursor = first.structured_content["cursor"]
            write(project / "AGENTS.md", "# Agents\n\nPROJECT-RULE: use spaces.\n")
            await anyio.sleep(1.5)
            again = await client.call_tool("context_changes", {"cursor": cursor})
            assert again.structured_content is not None
            assert again.structured_content["kind"] == "unchanged"

    anyio.run(main)


def test_with_no_user_global_agents_md_the_source_is_left_out_whole(project, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty-config"))
    context, baseline, _, listed = anyio.run(seen, project, "--client", "codex")
    assert PROJECT_RULE not in context and PROJECT_RULE not in baseline
    assert "nia://source/nia/instructions" not in listed


def test_deliver_native_files_delivers_them_anyway(project):
    write(project / ".nia" / "project.toml", "[hooks.claude-code]\ndeliver_native_files = true\n")
    context, baseline, _, _ = anyio.run(seen, project, "--client", "claude-code")
    assert PROJECT_RULE in context and PROJECT_RULE in baseline


def test_gemini_gets_agents_md_unless_its_settings_make_it_load_the_file_itself(project):
    context, _, _, _ = anyio.run(seen, project, "--client", "gemini")
    assert PROJECT_RULE in context  # Gemini CLI loads GEMINI.md, not AGENTS.md
    write(project / ".gemini" / "settings.json", '{"context": {"fileName": ["AGENTS.md", "GEMINI.md"]}}\n')
    context, baseline, _, _ = anyio.run(seen, project, "--client", "gemini")
    assert PROJECT_RULE not in context and PROJECT_RULE not in baseline and GLOBAL_RULE in context
