"""``nia hook install|uninstall|status``: nia's entries only, everything else kept, idempotent."""

import json

import pytest
from click.testing import CliRunner

from nia_core.cli import cli


@pytest.fixture
def hook_mode():
    """One mode only: installing runs no hook."""
    return "in-process"


def run(*args, cwd=None, **kwargs):
    import os

    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, list(args), **kwargs)
    finally:
        os.chdir(old)


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


OTHER_HOOK = {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo other", "timeout": 5}]}


def claude_settings(root):
    return root / ".claude" / "settings.json"


def this_nia():
    """The nia the tests run: what an install writes by default (its absolute path)."""
    import sys
    from pathlib import Path

    return str(Path(sys.executable).parent / "nia")


def nia_commands(data, event, host):
    return [
        h["command"]
        for group in data.get("hooks", {}).get(event, [])
        for h in group.get("hooks", [])
        if h.get("command", "").endswith(f"hook {host}")
    ]


def test_install_claude_code_keeps_every_other_key_and_entry_and_is_idempotent(project):
    path = claude_settings(project)
    path.parent.mkdir()
    existing = {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"UserPromptSubmit": [OTHER_HOOK], "PreToolUse": [OTHER_HOOK]},
        "model": "opus",
    }
    path.write_text(json.dumps(existing, indent=4))
    result = run("hook", "install", "claude-code", cwd=project)
    assert result.exit_code == 0, result.output
    data = json.loads(path.read_text())
    assert data["permissions"] == existing["permissions"] and data["model"] == "opus"
    assert list(data) == ["permissions", "hooks", "model"]  # key order kept
    assert data["hooks"]["PreToolUse"] == [OTHER_HOOK]
    assert data["hooks"]["UserPromptSubmit"][0] == OTHER_HOOK
    assert nia_commands(data, "UserPromptSubmit", "claude-code") == [f"{this_nia()} hook claude-code"]
    assert nia_commands(data, "SessionStart", "claude-code") == [f"{this_nia()} hook claude-code"]
    before = path.read_bytes()
    again = run("hook", "install", "claude-code", "--project", cwd=project)
    assert again.exit_code == 0 and "already installed" in again.output
    assert path.read_bytes() == before


def test_uninstall_removes_only_nias_handlers(project):
    path = claude_settings(project)
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [OTHER_HOOK]}, "env": {"A": "1"}}))
    assert run("hook", "install", "claude-code", cwd=project).exit_code == 0
    result = run("hook", "uninstall", "claude-code", cwd=project)
    assert result.exit_code == 0, result.output
    assert json.loads(path.read_text()) == {"hooks": {"UserPromptSubmit": [OTHER_HOOK]}, "env": {"A": "1"}}
    assert "no nia claude-code hooks" in run("hook", "uninstall", "claude-code", cwd=project).output


def test_install_user_scope_writes_the_user_settings(project, isolated_environment):
    result = run("hook", "install", "claude-code", "--user", "--program", "/opt/nia/bin/nia", cwd=project)
    assert result.exit_code == 0, result.output
    data = json.loads((isolated_environment / ".claude" / "settings.json").read_text())
    assert nia_commands(data, "SessionStart", "claude-code") == ["/opt/nia/bin/nia hook claude-code"]
    assert not claude_settings(project).exists()
    # a re-install with another program path updates nia's entry instead of adding a second one
    run("hook", "install", "claude-code", "--user", cwd=project)
    data = json.loads((isolated_environment / ".claude" / "settings.json").read_text())
    assert nia_commands(data, "SessionStart", "claude-code") == [f"{this_nia()} hook claude-code"]


def test_invalid_settings_are_named_and_left_untouched(project):
    path = claude_settings(project)
    path.parent.mkdir()
    path.write_text('{"hooks": [1, 2')
    result = run("hook", "install", "claude-code", cwd=project)
    assert result.exit_code != 0
    assert str(path) in result.output and "not valid JSON" in result.output
    assert "Traceback" not in result.output
    assert path.read_text() == '{"hooks": [1, 2'


def test_project_and_user_exclude_each_other(project):
    result = run("hook", "install", "codex", "--project", "--user", cwd=project)
    assert result.exit_code == 2 and "exclude each other" in result.output


def test_install_codex_writes_hooks_json_and_the_feature_flag_keeping_toml_comments(project, monkeypatch, tmp_path):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    config = project / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('# my settings\nmodel = "o3"  # keep me\n\n[features]\nweb_search = true\n')
    result = run("hook", "install", "codex", cwd=project)
    assert result.exit_code == 0, result.output
    assert "approve" in result.output  # the trust review is the user's
    hooks = json.loads((project / ".codex" / "hooks.json").read_text())
    assert nia_commands(hooks, "UserPromptSubmit", "codex") == [f"{this_nia()} hook codex"]
    text = config.read_text()
    assert text.startswith('# my settings\nmodel = "o3"  # keep me\n')
    assert "web_search = true" in text and "hooks = true" in text
    before = (config.read_bytes(), (project / ".codex" / "hooks.json").read_bytes())
    assert "already installed" in run("hook", "install", "codex", cwd=project).output
    assert (config.read_bytes(), (project / ".codex" / "hooks.json").read_bytes()) == before
    assert not (tmp_path / "codex-home").exists()  # a project install touches no user file

    status = json.loads(run("hook", "status", "--json", cwd=project).output)
    codex_project = next(s for s in status if s["host"] == "codex" and s["scope"] == "project")
    assert codex_project["events"] == ["SessionStart", "UserPromptSubmit"]
    assert codex_project["feature_enabled"] is True and codex_project["trusted_events"] == []

    assert run("hook", "uninstall", "codex", cwd=project).exit_code == 0
    assert not (project / ".codex" / "hooks.json").exists()  # nia created it and left it empty
    assert config.read_text() == '# my settings\nmodel = "o3"  # keep me\n\n[features]\nweb_search = true\n'


def test_status_reads_codex_trust_records_without_writing_them(project, monkeypatch, tmp_path):
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    assert run("hook", "install", "codex", "--user", cwd=project).exit_code == 0
    hooks_path = home / "hooks.json"
    config = home / "config.toml"
    config.write_text(
        config.read_text() + f'\n[hooks.state."{hooks_path}:user_prompt_submit:0:0"]\ntrusted_hash = "sha256:abc"\n'
    )
    before = config.read_bytes()
    result = run("hook", "status", cwd=project)
    assert result.exit_code == 0, result.output
    assert "not reviewed yet" in result.output  # SessionStart has no record
    status = json.loads(run("hook", "status", "--json", cwd=project).output)
    user = next(s for s in status if s["host"] == "codex" and s["scope"] == "user")
    assert user["trusted_events"] == ["UserPromptSubmit"]
    assert config.read_bytes() == before


def test_status_lists_every_host_and_scope(project):
    run("hook", "install", "claude-code", cwd=project)
    result = run("hook", "status", cwd=project)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("claude-code") and "project" in line and "UserPromptSubmit" in line for line in lines)
    assert any(line.startswith("codex") and "not installed" in line for line in lines)


# -- the user's bytes: install then uninstall gives them back ---------------------------------------

STYLES = {
    "four-spaces": '{\n    "permissions": {"allow": ["Bash(ls)"]},\n    "model": "opus"\n}\n',
    "tabs-and-hooks": '{\n\t"hooks": {\n\t\t"UserPromptSubmit": [\n\t\t\t{"hooks": [{"type": "command", '
    '"command": "echo mine"}]}\n\t\t],\n\t\t"PreToolUse": []\n\t},\n\t"env": {"A": "é"}\n}',
    "minified": '{"z":1,"hooks":{"SessionStart":[{"matcher":"","hooks":[{"type":"command",'
    '"command":"echo a"}]}]},"a":2}',
    "crlf-and-odd-spacing": '{ "b" : [ 1 , 2 ] ,\r\n  "a" :{}}\r\n',
    "empty-object": "{}",
    "blank": "\n",
}


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize(
    ("host", "scope", "where"),
    [
        ("claude-code", "--project", ".claude/settings.json"),
        ("claude-code", "--local", ".claude/settings.local.json"),
        ("codex", "--project", ".codex/hooks.json"),
    ],
)
def test_install_then_uninstall_gives_back_the_users_bytes(project, style, host, scope, where, monkeypatch, tmp_path):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    path = project / where
    path.parent.mkdir()
    original = STYLES[style].encode()
    path.write_bytes(original)
    installed = run("hook", "install", host, scope, "--program", "nia", cwd=project)
    assert installed.exit_code == 0, installed.output
    data = json.loads(path.read_text())
    assert nia_commands(data, "SessionStart", host) == [f"nia hook {host}"]
    assert "already installed" in run("hook", "install", host, scope, "--program", "nia", cwd=project).output
    removed = run("hook", "uninstall", host, scope, cwd=project)
    assert removed.exit_code == 0, removed.output
    if style in ("empty-object", "blank"):
        assert not path.exists()  # nothing of the user's was in it: nia leaves no "{}" behind
    else:
        assert path.read_bytes() == original


def test_a_file_and_folder_nia_created_go_with_uninstall(project, monkeypatch, tmp_path):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    for host, folder in (("claude-code", ".claude"), ("codex", ".codex")):
        assert run("hook", "install", host, "--program", "nia", cwd=project).exit_code == 0
        assert (project / folder).is_dir()
        assert run("hook", "uninstall", host, cwd=project).exit_code == 0
        assert not (project / folder).exists(), sorted((project / folder).iterdir())


def test_the_codex_switch_is_turned_off_only_when_nia_turned_it_on(project, monkeypatch, tmp_path):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    config = project / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("[features]\nhooks = true   # mine\n")
    assert run("hook", "install", "codex", cwd=project).exit_code == 0
    assert run("hook", "uninstall", "codex", cwd=project).exit_code == 0
    assert config.read_text() == "[features]\nhooks = true   # mine\n"  # the user's own switch stays


def test_local_scope_is_the_hosts_personal_file(project):
    result = run("hook", "install", "claude-code", "--local", "--program", "nia", cwd=project)
    assert result.exit_code == 0, result.output
    local = project / ".claude" / "settings.local.json"
    assert nia_commands(json.loads(local.read_text()), "UserPromptSubmit", "claude-code") == ["nia hook claude-code"]
    assert not claude_settings(project).exists()
    status = json.loads(run("hook", "status", "--json", cwd=project).output)
    assert [s["events"] for s in status if s["host"] == "claude-code" and s["scope"] == "local"] == [
        ["SessionStart", "UserPromptSubmit"]
    ]
    refused = run("hook", "install", "codex", "--local", cwd=project)
    assert refused.exit_code == 2 and "no personal project scope" in refused.output


def test_a_new_command_hook_host_is_one_module_of_facts(project, monkeypatch, tmp_path):
    """A host added to the table works in every command: install, the hook itself, status, uninstall."""
    from nia_core import agents

    monkeypatch.setitem(agents.ADAPTERS, "fakehost", "tests.agents.fakehost")
    monkeypatch.setenv("NIA_HOOK_DEADLINE", "600")
    installed = run("hook", "install", "fakehost", "--program", "/opt/nia/bin/nia", cwd=project)
    assert installed.exit_code == 0, installed.output
    assert "trusted folder" in installed.output
    path = project / ".fakehost" / "hooks" / "nia.json"
    handler = {"bash": "/opt/nia/bin/nia hook fakehost", "timeoutSec": 30}
    assert json.loads(path.read_text()) == {
        "version": 1,
        "hooks": {
            "sessionStart": [{"type": "command", **handler}],
            "userPromptSubmitted": [{"type": "command", **handler}],
        },
    }
    payload = {"hook_event_name": "sessionStart", "session_id": "f1", "cwd": str(project), "source": "startup"}
    answered = CliRunner().invoke(cli, ["hook", "fakehost"], input=json.dumps(payload))
    assert answered.exit_code == 0
    assert "Environment:" in json.loads(answered.stdout)["additionalContext"]
    prompt = {"hook_event_name": "userPromptSubmitted", "session_id": "f1", "cwd": str(project), "prompt": "hi"}
    assert CliRunner().invoke(cli, ["hook", "fakehost"], input=json.dumps(prompt)).stdout == ""
    status = json.loads(run("hook", "status", "--json", cwd=project).output)
    mine = [s for s in status if s["host"] == "fakehost"]
    assert [(s["scope"], s["events"]) for s in mine] == [
        ("project", ["sessionStart", "userPromptSubmitted"]),
        ("user", []),
    ]
    assert run("hook", "uninstall", "fakehost", cwd=project).exit_code == 0
    assert not (project / ".fakehost").exists()


def test_install_writes_this_nias_absolute_path_and_status_says_when_a_command_will_not_run(project, tmp_path):
    assert run("hook", "install", "claude-code", cwd=project).exit_code == 0
    status = json.loads(run("hook", "status", "--json", cwd=project).output)
    mine = next(s for s in status if s["host"] == "claude-code" and s["scope"] == "project")
    assert mine["command"] == f"{this_nia()} hook claude-code" and mine["runs"] == this_nia()
    assert "command_problem" not in mine

    assert run("hook", "install", "claude-code", "--program", "/nowhere/bin/nia", cwd=project).exit_code == 0
    result = run("hook", "status", cwd=project)
    assert "its command does not resolve: '/nowhere/bin/nia' is not an executable file" in result.output

    other = tmp_path / "other-venv" / "bin" / "nia"
    other.parent.mkdir(parents=True)
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    assert run("hook", "install", "claude-code", "--program", str(other), cwd=project).exit_code == 0
    status = json.loads(run("hook", "status", "--json", cwd=project).output)
    mine = next(s for s in status if s["host"] == "claude-code" and s["scope"] == "project")
    assert mine["runs"] == str(other) and "another nia than this one" in mine["command_problem"]


def test_status_says_when_a_bare_nia_is_not_on_path(project, monkeypatch):
    assert run("hook", "install", "codex", "--program", "nia", cwd=project).exit_code == 0
    monkeypatch.setenv("PATH", "/nonexistent")
    result = run("hook", "status", cwd=project)
    assert "its command does not resolve: 'nia' is not on PATH" in result.output


@pytest.mark.parametrize(
    "original",
    [
        '{\n  "model": "opus"\n}\n',
        '{\n  "includeGitInstructions": true,\n  "model": "opus"\n}\n',
        "",
    ],
)
def test_the_hosts_own_git_status_is_switched_off_on_request_and_back_by_uninstall(project, original):
    path = claude_settings(project)
    if original:
        path.parent.mkdir()
        path.write_text(original)
    result = run("hook", "install", "claude-code", "--no-host-git-status", cwd=project)
    assert result.exit_code == 0, result.output
    assert "commit and pull-request instructions" in result.output  # what else it switches off is said
    assert json.loads(path.read_text())["includeGitInstructions"] is False
    assert run("hook", "uninstall", "claude-code", cwd=project).exit_code == 0
    if original:
        assert path.read_text() == original
    else:
        assert not path.exists()


def test_a_users_own_git_setting_is_left_alone_by_uninstall(project):
    path = claude_settings(project)
    path.parent.mkdir()
    path.write_text('{"includeGitInstructions": false}\n')
    assert run("hook", "install", "claude-code", "--no-host-git-status", cwd=project).exit_code == 0
    assert run("hook", "uninstall", "claude-code", cwd=project).exit_code == 0
    assert path.read_text() == '{"includeGitInstructions": false}\n'


def test_a_host_without_such_a_setting_says_so(project):
    result = run("hook", "install", "codex", "--no-host-git-status", cwd=project)
    assert result.exit_code == 2 and "has no setting that leaves out its own git status" in result.output
    assert not (project / ".codex").exists()
