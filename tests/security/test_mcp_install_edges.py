"""``nia mcp install|uninstall`` for every client and scope against hostile settings files.

The same worlds and rules as tests/security/test_installer_edges.py (links out
of the edge, FIFOs, ``/dev/zero``, 3 GB, 100,000-deep, not UTF-8, a folder, a
read-only folder), through the other files ``nia mcp`` edits: Gemini CLI's,
OpenCode's, Copilot CLI's and Qwen Code's, Claude Code's ``~/.claude.json``,
Codex's project ``config.toml``, and uninstall's reads.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.security.test_attack_corpus import Attack, clean, each
from tests.security.test_installer_edges import LINKS, SPECIAL, _as_a_user, _edge, _snapshot, _where

COMMANDS: dict[str, tuple[list[str], str]] = {
    "gemini": (["mcp", "install", "gemini"], ".gemini/settings.json"),
    "gemini-user": (["mcp", "install", "gemini", "--user"], "~/.gemini/settings.json"),
    "opencode": (["mcp", "install", "opencode"], "opencode.json"),
    "opencode-user": (["mcp", "install", "opencode", "--user"], "~/.config/opencode/opencode.json"),
    "copilot": (["mcp", "install", "copilot"], ".github/mcp.json"),
    "copilot-user": (["mcp", "install", "copilot", "--user"], "~/.copilot/mcp-config.json"),
    "qwen": (["mcp", "install", "qwen-code"], ".qwen/settings.json"),
    "qwen-user": (["mcp", "install", "qwen-code", "--user"], "~/.qwen/settings.json"),
    "claude-local": (["mcp", "install", "claude-code", "--local"], "~/.claude.json"),
    "codex-project": (["mcp", "install", "codex", "--project"], ".codex/config.toml"),
    "uninstall-claude": (["mcp", "uninstall", "claude-code"], ".mcp.json"),
    "uninstall-qwen": (["mcp", "uninstall", "qwen-code"], ".qwen/settings.json"),
    "uninstall-codex": (["mcp", "uninstall", "codex"], "~/.codex/config.toml"),
}
"""Each command and the one file it reads (and writes); ``~``: the world's home folder."""


def test_mcp_installers_never_read_or_write_across_the_edge(tmp_path: Path) -> None:
    cases = {
        f"{command}/{link}": (command, link)
        for command, (_, spelled) in COMMANDS.items()
        for link in LINKS
        if "folder" not in link or spelled.removeprefix("~/").count("/")
    }

    def attack(name: str, case: tuple[str, str]) -> None:
        command, link = case
        base = tmp_path / name.replace("/", "-")
        base.mkdir()
        w = Attack(base)
        args, spelled = COMMANDS[command]
        path = _where(w, spelled)
        path.parent.parent.mkdir(parents=True, exist_ok=True)  # ~/.config for ~/.config/opencode
        target = LINKS[link](w, path)
        outside_before = _snapshot(w.outside)
        result = w.nia(*args)
        clean(result)
        assert _snapshot(w.outside) == outside_before, f"{name}: a file outside was written"
        assert not target.exists() or str(target) in outside_before, f"{name}: a file was created outside"
        if link != "hard-link":
            assert path.is_symlink() or path.parent.is_symlink(), f"{name}: the link was replaced by a file"
        assert result.returncode != 0, f"{name}: went ahead ({result.stdout}{result.stderr})"
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "unexpected" not in lines[0], lines
        assert str(path.relative_to(_edge(w, spelled)).parts[0]) in lines[0], lines[0]

    each(cases, attack)


def test_special_files_are_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    cases = {f"{command}/{kind}": (command, kind) for command in COMMANDS for kind in SPECIAL}

    def attack(name: str, case: tuple[str, str]) -> None:
        command, kind = case
        base = tmp_path / name.replace("/", "-")
        base.mkdir()
        w = Attack(base)
        args, spelled = COMMANDS[command]
        path = _where(w, spelled)
        SPECIAL[kind](w, path)
        before = sorted(os.listdir(path.parent))
        result = w.nia(*args)
        clean(result)
        assert sorted(os.listdir(path.parent)) == before, f"{name}: something was written beside it"
        assert result.returncode != 0, f"{name}: went ahead"
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and str(path) in lines[0] and "unexpected" not in lines[0], lines

    each(cases, attack)


@pytest.mark.parametrize("command", ["gemini", "opencode", "copilot-user", "claude-local", "uninstall-qwen"])
def test_a_read_only_settings_folder_is_one_line_and_nothing_is_written(tmp_path: Path, command: str) -> None:
    import subprocess

    from tests.security.test_attack_corpus import LIMIT, NIA

    w = Attack(tmp_path)
    args, spelled = COMMANDS[command]
    path = _where(w, spelled)
    path.parent.mkdir(parents=True, exist_ok=True)
    installed = f'{{"mcpServers": {{"nia": {{"command": "nia", "args": ["mcp"]}}}}, "{command}": 1}}\n'
    path.write_text(installed if args[1] == "uninstall" else "{}\n")
    before = _snapshot(path.parent)
    os.chmod(path.parent, 0o555)
    try:
        done = subprocess.run(
            _as_a_user([*NIA, *args]), capture_output=True, cwd=w.root, env=w.env, timeout=LIMIT, text=True
        )
    finally:
        os.chmod(path.parent, 0o755)
    assert "unexpected" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "ermission denied" in lines[0], lines
    assert _snapshot(path.parent) == before
