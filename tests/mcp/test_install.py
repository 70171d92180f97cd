"""``nia mcp install``: client configuration that keeps every other entry; the SDK stays unimported elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest
from click.testing import CliRunner

from nia_core.cli import cli


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".nia").mkdir(parents=True)
    return root


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_claude_code_writes_the_project_file_keeping_other_servers(project):
    existing = {"mcpServers": {"other": {"command": "other-server", "args": ["--x"]}}, "extra": True}
    (project / ".mcp.json").write_text(json.dumps(existing))
    result = run("mcp", "install", "claude-code", "--location", str(project))
    assert result.exit_code == 0, result.output
    data = json.loads((project / ".mcp.json").read_text())
    assert data["mcpServers"]["other"] == existing["mcpServers"]["other"]
    assert data["extra"] is True
    entry = data["mcpServers"]["nia"]
    assert entry["type"] == "stdio"
    assert "mcp" in entry["args"]
    assert "--location" not in entry["args"]  # a shared project file: Claude Code starts it in the project


def test_codex_keeps_comments_and_other_servers(project, tmp_path, monkeypatch):
    home = tmp_path / "codex"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    config = home / "config.toml"
    config.write_text('# my settings\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-server"  # keep me\n')
    result = run("mcp", "install", "codex", "--location", str(project))
    assert result.exit_code == 0, result.output
    text = config.read_text()
    assert "# my settings" in text and "# keep me" in text
    data = tomllib.loads(text)
    assert data["model"] == "o3"
    assert data["mcp_servers"]["docs"] == {"command": "docs-server"}
    nia = data["mcp_servers"]["nia"]
    assert nia["args"][-2:] == ["--location", str(project.resolve())]
    # Installing twice replaces the entry, never duplicates it.
    assert run("mcp", "install", "codex", "--location", str(project)).exit_code == 0
    assert tomllib.loads(config.read_text())["mcp_servers"]["nia"] == nia


def test_json_prints_the_mcp_servers_entry(project):
    result = run("mcp", "install", "json", "--location", str(project))
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["mcpServers"]["nia"]
    assert set(entry) == {"command", "args"}
    assert "mcp" in entry["args"]


def test_a_broken_config_is_reported_and_left_untouched(project):
    (project / ".mcp.json").write_text("{not json")
    result = CliRunner().invoke(cli, ["mcp", "install", "claude-code", "--location", str(project)])
    assert result.exit_code != 0
    assert ".mcp.json: not valid JSON" in result.output
    assert "Traceback" not in result.output
    assert (project / ".mcp.json").read_text() == "{not json"


def test_print_writes_nothing(project):
    result = run("mcp", "install", "claude-code", "--location", str(project), "--print")
    assert result.exit_code == 0
    assert "nia" in json.loads(result.stdout)["mcpServers"]
    assert not (project / ".mcp.json").exists()


@pytest.mark.slow
def test_only_nia_mcp_imports_the_sdk(project):
    probe = (  # at exit: a command that only reads ends with os._exit once its atexit handlers ran
        "import atexit, sys\n"
        "atexit.register(lambda: print('SDK' if 'mcp' in sys.modules else 'NO-SDK', file=sys.stderr))\n"
        "from nia_core.cli import main\n"
        "sys.argv = ['nia', *sys.argv[1:]]\n"
        "main()\n"
    )
    for args in (["--help"], ["context", "show", "--location", str(project)], ["mcp", "install", "json"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60)
        assert done.stderr.strip().endswith("NO-SDK"), (args, done.stderr)
