"""``nia mcp install|uninstall CLIENT``: each client's file and shape, every other entry and byte kept.

The shapes and places are the ones the pinned clients' own ``mcp add``
commands write and their ``mcp list`` (or a turn) start servers from;
tests/real_agents/test_mcp_clients.py checks them with the binaries.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from nia_core.mcp.client_config import CLIENTS, ENVIRONMENT


@pytest.fixture
def home(tmp_path, monkeypatch):
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / ".config"))
    for variable in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "COPILOT_HOME"):
        monkeypatch.delenv(variable, raising=False)
    return folder


@pytest.fixture
def project(tmp_path, home):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def run(*args: str, ok: bool = True):
    result = CliRunner().invoke(cli, list(args))
    if ok:
        assert result.exit_code == 0, result.output
    return result


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


# client, scope flag, the file (relative to the project, or ~), where the servers are, the entry's shape
PLACES = [
    ("claude-code", "", ".mcp.json", ("mcpServers",), "claude"),
    ("claude-code", "--user", "~/.claude.json", ("mcpServers",), "claude"),
    ("codex", "", "~/.codex/config.toml", ("mcp_servers",), "codex"),
    ("codex", "--project", ".codex/config.toml", ("mcp_servers",), "codex"),
    ("gemini", "", ".gemini/settings.json", ("mcpServers",), "plain"),
    ("gemini", "--user", "~/.gemini/settings.json", ("mcpServers",), "plain"),
    ("opencode", "", "opencode.json", ("mcp",), "opencode"),
    ("opencode", "--user", "~/.config/opencode/opencode.json", ("mcp",), "opencode"),
    ("copilot", "", ".github/mcp.json", ("mcpServers",), "copilot"),
    ("copilot", "--user", "~/.copilot/mcp-config.json", ("mcpServers",), "copilot"),
    ("qwen-code", "", ".qwen/settings.json", ("mcpServers",), "plain"),
    ("qwen-code", "--user", "~/.qwen/settings.json", ("mcpServers",), "plain"),
]


def where(project: Path, home: Path, spelled: str) -> Path:
    return home / spelled[2:] if spelled.startswith("~/") else project / spelled


def servers_of(path: Path, keys: tuple[str, ...]) -> dict:
    data = tomllib.loads(path.read_text()) if path.suffix == ".toml" else read_json(path)
    for key in keys:
        data = data[key]
    return data


def words(entry: dict) -> list[str]:
    command = entry["command"]
    return list(command) if isinstance(command, list) else [command, *entry["args"]]


@pytest.mark.parametrize(("client", "flag", "spelled", "keys", "style"), PLACES)
def test_each_client_gets_its_own_shape_in_its_own_file_and_uninstall_removes_the_file_nia_made(
    project, home, client, flag, spelled, keys, style
):
    path = where(project, home, spelled)
    run("mcp", "install", client, *([flag] if flag else []), "--location", str(project))
    entry = servers_of(path, keys)["nia"]
    assert words(entry)[1:] == ["mcp", "--client", client]
    shared = not spelled.startswith("~/")
    assert (words(entry)[0] == "nia") is shared  # a committed file never names this machine's nia
    if not shared:
        assert Path(words(entry)[0]).is_absolute()
    if style == "claude":
        assert entry["type"] == "stdio" and entry["env"] == {}
    elif style == "copilot":
        assert entry["type"] == "local" and entry["tools"] == ["*"]
    elif style == "opencode":
        assert entry["type"] == "local" and entry["enabled"] is True and "args" not in entry
    elif style == "codex":
        assert entry["required"] is True and entry["startup_timeout_sec"] >= 30
        assert set(entry["env_vars"]) == set(ENVIRONMENT) and {"NIA_DB", "XDG_CONFIG_HOME"} <= set(entry["env_vars"])
    else:
        assert set(entry) == {"command", "args"}
    result = run("mcp", "uninstall", client, *([flag] if flag else []), "--location", str(project))
    assert "removed" in result.output
    assert not path.exists()
    if shared:
        assert not path.parent.exists() or path.parent == project  # the folder nia made went with it


@pytest.mark.parametrize(("client", "flag", "spelled", "keys", "style"), PLACES)
def test_install_then_uninstall_gives_back_the_users_file_byte_for_byte(
    project, home, client, flag, spelled, keys, style
):
    path = where(project, home, spelled)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".toml":
        original = f'# mine\nmodel = "o3"   # keep\n\n[{keys[0]}.docs]\ncommand = "docs-server"\nargs = ["--x"]\n'
    else:
        inner = '{\n      "docs": { "command": "docs-server", "args": ["--x"] }\n    }'
        original = '{\n    "theme": "dark",\n    "' + keys[0] + '": ' + inner + ',\n    "z": [1, 2]\n}\n'
    path.write_text(original)
    run("mcp", "install", client, *([flag] if flag else []), "--location", str(project))
    servers = servers_of(path, keys)
    assert set(servers) == {"docs", "nia"}
    assert servers["docs"] == {"command": "docs-server", "args": ["--x"]}
    assert path.read_text().startswith(original[:12])  # the user's layout, not a re-serialised file
    run("mcp", "install", client, *([flag] if flag else []), "--location", str(project))  # twice: no change
    assert set(servers_of(path, keys)) == {"docs", "nia"}
    run("mcp", "uninstall", client, *([flag] if flag else []), "--location", str(project))
    assert path.read_text() == original


def test_claude_code_local_scope_is_this_project_in_the_users_claude_json(project, home):
    claude_json = home / ".claude.json"
    claude_json.write_text(json.dumps({"numStartups": 3, "projects": {"/elsewhere": {"mcpServers": {}}}}, indent=2))
    sub = project / "src"
    sub.mkdir()
    result = run("mcp", "install", "claude-code", "--local", "--location", str(sub))
    assert "approve" not in result.output  # a personal server needs no approval
    data = read_json(claude_json)
    entry = data["projects"][str(project.resolve())]["mcpServers"]["nia"]  # keyed by the git root, as Claude does
    assert Path(entry["command"]).is_absolute()
    assert data["numStartups"] == 3 and data["projects"]["/elsewhere"] == {"mcpServers": {}}
    assert not (project / ".mcp.json").exists()
    run("mcp", "uninstall", "claude-code", "--local", "--location", str(sub))
    assert read_json(claude_json) == {"numStartups": 3, "projects": {"/elsewhere": {"mcpServers": {}}}}


def test_claude_code_project_install_says_the_file_needs_approval_and_names_nia_on_path(project):
    result = run("mcp", "install", "claude-code", "--location", str(project))
    assert "approve" in result.output and "--local" in result.output
    entry = read_json(project / ".mcp.json")["mcpServers"]["nia"]
    assert entry["command"] == "nia"
    given = run("mcp", "install", "claude-code", "--location", str(project), "--program", "/opt/nia/bin/nia")
    assert read_json(project / ".mcp.json")["mcpServers"]["nia"]["command"] == "/opt/nia/bin/nia"
    assert "approve" in given.output


def test_a_shared_file_says_when_nia_on_path_is_not_this_nia(project, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    result = run("mcp", "install", "gemini", "--location", str(project))
    assert "not on PATH" in result.output and "--user" in result.output


def test_copilot_reads_claudes_mcp_json_when_there_is_one_and_shares_nias_entry(project):
    run("mcp", "install", "claude-code", "--location", str(project))
    result = run("mcp", "install", "copilot", "--location", str(project))
    assert "serves GitHub Copilot CLI too" in result.output
    assert words(read_json(project / ".mcp.json")["mcpServers"]["nia"])[-1] == "claude-code"
    assert not (project / ".github").exists()
    left = run("mcp", "uninstall", "copilot", "--location", str(project))
    assert "left as it is" in left.output
    assert "nia" in read_json(project / ".mcp.json")["mcpServers"]
    run("mcp", "uninstall", "claude-code", "--location", str(project))
    assert not (project / ".mcp.json").exists()


def test_a_server_named_nia_that_is_not_nia_is_the_users(project):
    theirs = {"mcpServers": {"nia": {"command": "/opt/other-nia-tool", "args": ["serve"]}}}
    (project / ".mcp.json").write_text(json.dumps(theirs))
    refused = run("mcp", "install", "claude-code", "--location", str(project), ok=False)
    assert refused.exit_code == 2
    assert "does not run nia" in refused.output and "Traceback" not in refused.output
    assert read_json(project / ".mcp.json") == theirs
    run("mcp", "uninstall", "claude-code", "--location", str(project))
    assert read_json(project / ".mcp.json") == theirs


def test_a_scope_the_client_does_not_have_is_one_line(project):
    result = run("mcp", "install", "gemini", "--local", "--location", str(project), ok=False)
    assert result.exit_code == 2
    assert "Gemini CLI: has no local scope" in result.output
    assert not (project / ".gemini").exists()


def test_codex_keeps_comments_and_other_servers(project, tmp_path, monkeypatch):
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    config = codex_home / "config.toml"
    config.write_text('# my settings\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-server"  # keep me\n')
    run("mcp", "install", "codex", "--location", str(project))
    text = config.read_text()
    assert "# my settings" in text and "# keep me" in text
    data = tomllib.loads(text)
    assert data["model"] == "o3" and data["mcp_servers"]["docs"] == {"command": "docs-server"}
    assert data["mcp_servers"]["nia"]["args"] == ["mcp", "--client", "codex"]  # Codex starts it in the project


def test_json_prints_the_mcp_servers_entry_with_the_project(project):
    result = run("mcp", "install", "json", "--location", str(project))
    entry = json.loads(result.stdout)["mcpServers"]["nia"]
    assert set(entry) == {"command", "args"}
    assert entry["args"] == ["mcp", "--location", str(project.resolve())]  # an editor starts it anywhere


def test_json_with_config_merges_and_uninstalls(project, tmp_path):
    config = tmp_path / "editor" / "mcp.json"
    config.parent.mkdir()
    config.write_text('{"mcpServers": {"x": {"command": "x"}}}\n')
    run("mcp", "install", "json", "--config", str(config), "--location", str(project))
    assert set(read_json(config)["mcpServers"]) == {"x", "nia"}
    run("mcp", "uninstall", "json", "--config", str(config))
    assert config.read_text() == '{"mcpServers": {"x": {"command": "x"}}}\n'
    assert run("mcp", "uninstall", "json", ok=False).exit_code == 2


def test_a_broken_config_is_reported_and_left_untouched(project):
    (project / ".mcp.json").write_text("{not json")
    result = run("mcp", "install", "claude-code", "--location", str(project), ok=False)
    assert result.exit_code != 0
    assert ".mcp.json: not valid JSON" in result.output and "Traceback" not in result.output
    assert (project / ".mcp.json").read_text() == "{not json"


def test_print_writes_nothing(project):
    result = run("mcp", "install", "claude-code", "--location", str(project), "--print")
    assert "nia" in json.loads(result.stdout)["mcpServers"]
    assert not (project / ".mcp.json").exists()


def test_every_client_of_the_table_is_a_choice_and_nothing_else(project):
    assert set(CLIENTS) == {"claude-code", "codex", "gemini", "opencode", "copilot", "qwen-code", "json"}
    unknown = run("mcp", "install", "cursor-ide", ok=False)
    assert unknown.exit_code == 2 and "known: claude-code, codex" in unknown.output


@pytest.mark.slow
def test_only_nia_mcp_imports_the_sdk(project):
    probe = (  # at exit: what the command imported, once its work is done
        "import atexit, sys\n"
        "atexit.register(lambda: print('SDK' if 'mcp' in sys.modules else 'NO-SDK', file=sys.stderr))\n"
        "from nia_core.cli import main\n"
        "sys.argv = ['nia', *sys.argv[1:]]\n"
        "main()\n"
    )
    for args in (["--help"], ["context", "show", "--location", str(project)], ["mcp", "install", "json"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60)
        assert done.stderr.strip().endswith("NO-SDK"), (args, done.stderr)
