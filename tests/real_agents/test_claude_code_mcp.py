"""``nia mcp`` with the real Claude Code (pinned) as its client, against the loopback model server.

The assertions are on the requests Claude Code sent: nia's ``context_changes``
tool is among the tools it offered the model, so any MCP client gets nia's
boundary semantics without hooks. Claude Code 2.1.328 defers MCP tools by
default (their names are listed in the system prompt, their schemas fetched
through its ToolSearch tool); with ``ENABLE_TOOL_SEARCH=false`` it sends the
whole definition in ``tools``. Both are checked.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.real_agents.fakemodel import FakeModel
from tests.real_agents.harness import TURN_TIMEOUT, ClaudeCode, agent_binary, nia_program, request_text

TOOL = "mcp__nia__context_changes"


def claude_with_nia_mcp(project: Path, home: Path, server: FakeModel, config: Path, **env: str) -> list[dict]:
    config.write_text(json.dumps({"mcpServers": {"nia": {"command": nia_program(), "args": ["mcp"]}}}))
    command = [str(agent_binary("claude")), "-p", "What changed?", "--output-format", "json"]
    command += ["--mcp-config", str(config), "--strict-mcp-config"]
    done = subprocess.run(
        command,
        cwd=project,
        env={**ClaudeCode(project, home, server).env(), **env},
        capture_output=True,
        text=True,
        timeout=TURN_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    bodies = [r.body for r in server.model_requests() if r.body.get("messages")]
    assert bodies, "Claude Code sent no request"
    return bodies


def test_claude_code_lists_nias_tool_among_its_deferred_tools(project, agent_home, server, tmp_path):
    bodies = claude_with_nia_mcp(project, agent_home, server, tmp_path / "mcp.json")

    assert any(f"\n{TOOL}\n" in request_text(body) for body in bodies)


def test_claude_code_sends_nias_tool_definition_when_tool_search_is_off(project, agent_home, server, tmp_path):
    bodies = claude_with_nia_mcp(project, agent_home, server, tmp_path / "mcp.json", ENABLE_TOOL_SEARCH="false")

    offered = [tool for body in bodies for tool in body.get("tools") or [] if tool.get("name") == TOOL]
    assert offered, "nia's context_changes tool was not in the request's tools"
    schema = offered[-1]["input_schema"]
    assert set(schema["properties"]) == {"cursor"} and "cursor" not in schema.get("required", [])
    assert "cursor" in offered[-1]["description"]
