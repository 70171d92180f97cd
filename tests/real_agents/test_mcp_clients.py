"""``nia mcp install CLIENT`` with the real clients (pinned, offline): each starts nia from what nia wrote.

Codex, the client held to the strictest checks, runs ``codex exec`` against
the loopback model server, which makes the model call ``context_changes``:
the tool is declared non-destructive so Codex calls it without asking, Codex
waits for nia's tools before its first request (``required = true``), and
the environment nia needs (``NIA_DB``, ``XDG_CONFIG_HOME``) reaches it
through ``env_vars`` although Codex starts servers with a short fixed one.
The other clients are asked through their own ``mcp list``, which starts
every server it lists and says whether it connected (or what the user still
has to do: approve, trust).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.real_agents.fakemodel import Call, FakeModel, Reply
from tests.real_agents.harness import TURN_TIMEOUT, Codex, agent_binary, base_env, nia_program

pytestmark = pytest.mark.slow

GLOBAL_RULE = "GLOBAL-RULE: answer in French."


def install(project: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [nia_program(), "mcp", "install", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def client(name: str, project: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(agent_binary(name)), *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=TURN_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    return done.stdout + done.stderr


def nia_line(listing: str, *, with_command: bool = True) -> str:
    """The client's line about nia (it shows the command beside the name, unless ``with_command`` is false)."""
    named = re.compile(r"(^|[^\w/-])nia\b(?!-)")
    lines = [line for line in listing.splitlines() if named.search(line) and ("mcp" in line or not with_command)]
    assert lines, listing[-2000:]
    return lines[0]


@pytest.fixture
def env(agent_home: Path) -> dict[str, str]:
    return {**base_env(agent_home), "XDG_CONFIG_HOME": str(agent_home / ".config")}


# -- Codex -------------------------------------------------------------------------------------------------


def codex_with_nia(project: Path, agent_home: Path, server: FakeModel, **env: str) -> Codex:
    codex = Codex(project, agent_home, server, extra_env=env)
    install(project, {**codex.env()}, "codex")  # $CODEX_HOME/config.toml, as a user would
    codex.configure()
    return codex


def test_codex_exec_calls_context_changes_and_nia_reads_its_own_environment(project, agent_home, server, tmp_path):
    database = tmp_path / "elsewhere" / "nia.db"
    database.parent.mkdir()
    config_home = tmp_path / "xdg-config"
    (config_home / "nia").mkdir(parents=True)
    (config_home / "nia" / "AGENTS.md").write_text(GLOBAL_RULE + "\n")
    codex = codex_with_nia(project, agent_home, server, NIA_DB=str(database), XDG_CONFIG_HOME=str(config_home))
    server.script = [Reply(call=Call("context_changes", "{}", namespace="mcp__nia")), Reply("done")]

    turn = codex.turn("What changed?")

    assert turn.returncode == 0, turn.stderr[-2000:]
    requests = [r.body for r in server.model_requests()]
    first_tools = json.dumps(requests[0].get("tools", []))
    assert "context_changes" in first_tools, "Codex sent its first request before nia's tools were listed"
    outputs = [
        json.dumps(item)
        for body in requests
        for item in body.get("input", [])
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    assert outputs, f"Codex sent no tool output; stdout: {turn.stdout[-2000:]}"
    result = outputs[-1]
    assert "requires approval" not in result
    assert "ACME-RULE: one" in result and GLOBAL_RULE in result  # the plugin, and the global AGENTS.md via env_vars
    assert "AGENTS-SAYS" not in result  # Codex loads the project's AGENTS.md itself: nia leaves it out
    assert "AGENTS-SAYS" in json.dumps(requests[-1]["input"])  # ... and it is there once, Codex's own
    listed = subprocess.run(  # the chain went to the NIA_DB Codex was started with
        [nia_program(), "session", "list", "--json"],
        env={**codex.env(), "NIA_DB": str(database)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "mcp/attached" in listed.stdout, listed.stdout + listed.stderr


# -- the clients' own `mcp list` ----------------------------------------------------------------------------


def test_claude_code_starts_nia_from_the_local_scope_and_waits_for_approval_of_the_project_file(project, env, tmp_path):
    said = install(project, env, "claude-code", "--local")
    assert "approve" not in said
    assert "Connected" in nia_line(client("claude", project, env, "mcp", "list"))

    shared = tmp_path / "shared"
    (shared / ".git").mkdir(parents=True)
    said = install(shared, env, "claude-code")
    assert "approve" in said
    entry = json.loads((shared / ".mcp.json").read_text())["mcpServers"]["nia"]
    assert entry["command"] == "nia"  # nothing of this machine in a file to commit
    assert "Pending approval" in nia_line(client("claude", shared, env, "mcp", "list"))


def test_gemini_starts_nia_in_a_trusted_folder_only(project, env):
    said = install(project, env, "gemini")
    assert "trusted folder" in said
    assert "Disabled" in nia_line(client("gemini", project, env, "mcp", "list"))
    trusted = {**env, "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    assert "Connected" in nia_line(client("gemini", project, trusted, "mcp", "list"))


def test_qwen_code_starts_nia_from_the_project_once_approved_and_from_the_user_file(project, env, tmp_path):
    said = install(project, env, "qwen-code")
    assert "qwen mcp approve nia" in said
    assert "Pending approval" in nia_line(client("qwen", project, env, "mcp", "list"))
    client("qwen", project, env, "mcp", "approve", "nia")  # the user's consent, given in Qwen Code
    assert "Connected" in nia_line(client("qwen", project, env, "mcp", "list"))

    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    install(other, env, "qwen-code", "--user")
    assert "Connected" in nia_line(client("qwen", other, env, "mcp", "list"))


def test_opencode_starts_nia_from_the_project_file_and_the_user_file(project, env, tmp_path):
    quiet = {**env, "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    install(project, quiet, "opencode")
    assert "connected" in nia_line(client("opencode", project, quiet, "mcp", "list"), with_command=False)

    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    install(other, quiet, "opencode", "--user")
    assert (Path(quiet["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json").exists()
    assert "connected" in nia_line(client("opencode", other, quiet, "mcp", "list"), with_command=False)


def test_uninstall_leaves_each_client_without_nia(project, env):
    quiet = {**env, "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    for name in ("gemini", "opencode", "qwen-code"):
        install(project, quiet, name)
        done = subprocess.run(
            [nia_program(), "mcp", "uninstall", name], cwd=project, env=quiet, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(project)) == [".git", ".nia", "AGENTS.md"]  # every file and folder nia made is gone
    for binary in ("gemini", "opencode", "qwen"):
        listing = client(binary, project, {**quiet, "GEMINI_CLI_TRUST_WORKSPACE": "true"}, "mcp", "list")
        assert not [line for line in listing.splitlines() if " nia" in line and "mcp" in line], listing


def test_copilot_starts_nia_from_the_github_file_in_a_trusted_folder_and_calls_its_tool(project, env, server):
    said = install(project, env, "copilot")
    assert "trusted folder" in said and "--allow-tool nia" in said
    assert (project / ".github" / "mcp.json").exists()
    copilot_home = Path(env["HOME"]) / ".copilot"
    copilot_home.mkdir(parents=True, exist_ok=True)
    (copilot_home / "config.json").write_text(json.dumps({"trustedFolders": [str(project)]}))  # the user's consent
    server.script = [Reply(call=Call("nia-context_changes", "{}")), Reply("done")]
    offline = {
        **env,
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": f"{server.url}/v1",
        "COPILOT_PROVIDER_API_KEY": "test-key",
    }
    client("copilot", project, offline, "-p", "What changed?", "--model", "gpt-4o", "--allow-tool", "nia")
    outputs = [
        str(message.get("content"))
        for request in server.model_requests()
        for message in request.body.get("messages", [])
        if message.get("role") == "tool"
    ]
    assert outputs and "ACME-RULE: one" in outputs[-1], outputs
