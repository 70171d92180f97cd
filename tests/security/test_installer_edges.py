"""Installers (``nia hook install|uninstall|status``, ``nia mcp install``) against hostile settings files.

Every case runs the installed CLI in its own world (tests/security/test_attack_corpus.py's
:class:`Attack`): a project, an outside folder with a secret, a home folder. The
rules (docs/security.md, "Other tools' settings"): nothing is read or written
across the project's edge (or the home folder's, for ``--user``), a settings file
that is not a plain regular file of sane size and depth is one line naming it and
nothing is written, and a user's own hook is never taken for nia's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.security.test_attack_corpus import SECRET, Attack, clean, each

# -- where each command reads and writes --------------------------------------------------------

COMMANDS: dict[str, tuple[list[str], str]] = {
    "hook-install-claude": (["hook", "install", "claude-code"], ".claude/settings.json"),
    "hook-uninstall-claude": (["hook", "uninstall", "claude-code"], ".claude/settings.json"),
    "hook-install-codex": (["hook", "install", "codex"], ".codex/hooks.json"),
    "hook-install-codex-config": (["hook", "install", "codex"], ".codex/config.toml"),
    "hook-uninstall-codex": (["hook", "uninstall", "codex"], ".codex/hooks.json"),
    "hook-install-claude-user": (["hook", "install", "claude-code", "--user"], "~/.claude/settings.json"),
    "hook-install-codex-user": (["hook", "install", "codex", "--user"], "~/.codex/config.toml"),
    "mcp-install-claude": (["mcp", "install", "claude-code"], ".mcp.json"),
    "mcp-install-codex": (["mcp", "install", "codex"], "~/.codex/config.toml"),
    "mcp-install-claude-local": (["mcp", "install", "claude-code", "--local"], "~/.claude.json"),
    "mcp-install-codex-project": (["mcp", "install", "codex", "--project"], ".codex/config.toml"),
    "mcp-install-gemini": (["mcp", "install", "gemini"], ".gemini/settings.json"),
    "mcp-install-gemini-user": (["mcp", "install", "gemini", "--user"], "~/.gemini/settings.json"),
    "mcp-install-opencode": (["mcp", "install", "opencode"], "opencode.json"),
    "mcp-install-opencode-user": (["mcp", "install", "opencode", "--user"], "~/.config/opencode/opencode.json"),
    "mcp-install-copilot": (["mcp", "install", "copilot"], ".github/mcp.json"),
    "mcp-install-copilot-user": (["mcp", "install", "copilot", "--user"], "~/.copilot/mcp-config.json"),
    "mcp-install-qwen": (["mcp", "install", "qwen-code"], ".qwen/settings.json"),
    "mcp-install-qwen-user": (["mcp", "install", "qwen-code", "--user"], "~/.qwen/settings.json"),
    "mcp-uninstall-claude": (["mcp", "uninstall", "claude-code"], ".mcp.json"),
    "mcp-uninstall-qwen": (["mcp", "uninstall", "qwen-code"], ".qwen/settings.json"),
    "mcp-uninstall-codex": (["mcp", "uninstall", "codex"], "~/.codex/config.toml"),
}
"""Each writing command and one file it reads and writes (``~``: the world's home folder)."""


def _where(w: Attack, spelled: str) -> Path:
    return w.home / spelled[2:] if spelled.startswith("~/") else w.root / spelled


def _edge(w: Attack, spelled: str) -> Path:
    return w.home if spelled.startswith("~/") else w.root


def _outside_content(name: str) -> str:
    if name.endswith(".toml"):
        return f'# {SECRET}\nmodel = "{SECRET}"\n'
    return json.dumps({"secret": SECRET, "hooks": {"UserPromptSubmit": [{"hooks": [{"command": SECRET}]}]}})


def _file_link(w: Attack, path: Path) -> Path:
    target = w.outside / f"outside-{path.name}"
    target.write_text(_outside_content(path.name))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return target


def _relative_chain(w: Attack, path: Path) -> Path:
    target = w.outside / f"outside-{path.name}"
    target.write_text(_outside_content(path.name))
    path.parent.mkdir(parents=True, exist_ok=True)
    hop = path.parent / f"hop-{path.name}"
    hop.symlink_to(os.path.relpath(target, path.parent))
    path.symlink_to(hop.name)
    return target


def _folder_link(w: Attack, path: Path) -> Path:
    folder = w.outside / f"folder-{path.parent.name}"
    folder.mkdir(exist_ok=True)
    (folder / path.name).write_text(_outside_content(path.name))
    if path.parent.exists():
        shutil.rmtree(path.parent)
    path.parent.symlink_to(folder, target_is_directory=True)
    return folder / path.name


def _empty_folder_link(w: Attack, path: Path) -> Path:
    """A link to an outside folder that does not hold the file yet: the write would create it out there."""
    folder = w.outside / f"empty-{path.parent.name}"
    folder.mkdir(exist_ok=True)
    if path.parent.exists():
        shutil.rmtree(path.parent)
    path.parent.symlink_to(folder, target_is_directory=True)
    return folder / path.name


def _hard_link(w: Attack, path: Path) -> Path:
    target = w.outside / f"hard-{path.name}"
    target.write_text(_outside_content(path.name))
    path.parent.mkdir(parents=True, exist_ok=True)
    os.link(target, path)
    return target


LINKS: dict[str, Callable[[Attack, Path], Path]] = {
    "file-link": _file_link,
    "relative-chain": _relative_chain,
    "folder-link": _folder_link,
    "empty-folder-link": _empty_folder_link,
    "hard-link": _hard_link,
}


def _snapshot(folder: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            found[str(path)] = "-> " + os.readlink(path)
        elif path.is_file():
            found[str(path)] = path.read_bytes()
    return found


def test_installers_never_read_or_write_across_the_edge(tmp_path: Path) -> None:
    cases = {
        f"{command}/{link}": (command, link)
        for command, (_, spelled) in COMMANDS.items()
        for link in LINKS
        if "folder" not in link or spelled.lstrip("~/").count("/")  # the folder on the way, not the root
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
        assert "unexpected" not in result.stderr
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, lines
        assert str(path.relative_to(_edge(w, spelled)).parts[0]) in lines[0], lines[0]  # names the file or link

    each(cases, attack)


# -- files that are not plain settings files ------------------------------------------------------


def _fifo(w: Attack, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def _dev_zero_inside(w: Attack, path: Path) -> None:
    """A link to /dev/zero through a link that stays inside: still no regular file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/zero")


def _huge(w: Attack, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(3 * 1024 * 1024 * 1024)  # sparse: 3 GB that cost no disk


def _deep(w: Attack, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".toml":
        path.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    else:
        path.write_text('{"hooks": ' + "[" * 100_000 + "]" * 100_000 + "}")


def _deep_objects(w: Attack, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".toml":
        path.write_text("a = " + "{b = " * 5_000 + "1" + "}" * 5_000 + "\n")
    else:
        path.write_text('{"a":' * 50_000 + "1" + "}" * 50_000)


def _not_utf8(w: Attack, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'{"hooks": {}, "note": "caf\xe9"}')


def _a_folder(w: Attack, path: Path) -> None:
    path.mkdir(parents=True)


SPECIAL: dict[str, Callable[[Attack, Path], None]] = {
    "fifo": _fifo,
    "dev-zero": _dev_zero_inside,
    "huge": _huge,
    "deep-arrays": _deep,
    "deep-objects": _deep_objects,
    "not-utf8": _not_utf8,
    "a-folder": _a_folder,
}

READERS: dict[str, tuple[list[str], str]] = {
    **COMMANDS,
    "hook-status": (["hook", "status"], ".claude/settings.json"),
    "hook-status-codex": (["hook", "status"], ".codex/hooks.json"),
    "hook-status-codex-user": (["hook", "status"], "~/.codex/config.toml"),
}


def test_special_settings_files_are_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    cases = {f"{command}/{kind}": (command, kind) for command in READERS for kind in SPECIAL}

    def attack(name: str, case: tuple[str, str]) -> None:
        command, kind = case
        base = tmp_path / name.replace("/", "-")
        base.mkdir()
        w = Attack(base)
        args, spelled = READERS[command]
        path = _where(w, spelled)
        SPECIAL[kind](w, path)
        before = sorted(os.listdir(path.parent))
        result = w.nia(*args)
        clean(result)
        assert "unexpected" not in result.stdout + result.stderr, result.stderr
        assert sorted(os.listdir(path.parent)) == before, f"{name}: something was written beside it"
        if args[1] == "status":
            assert result.returncode == 0, result.stderr
            row = next(line for line in result.stdout.splitlines() if str(path) in line)
            assert "not installed" in row and "(" in row, row  # the problem, on the file's own row
        else:
            assert result.returncode != 0, f"{name}: went ahead"
            lines = [line for line in result.stderr.splitlines() if line.strip()]
            assert len(lines) == 1 and str(path) in lines[0], lines

    each(cases, attack)


def _as_a_user(command: list[str]) -> list[str]:
    """``command`` with file permissions enforced: root ignores them unless it drops those capabilities."""
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root needs setpriv (util-linux) to test permissions")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", *command]


def _run_as_a_user(w: Attack, *args: str, stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess:
    from tests.security.test_attack_corpus import LIMIT, NIA

    done = subprocess.run(
        _as_a_user([*NIA, *args]),
        input=stdin,
        capture_output=True,
        cwd=cwd or w.root,
        env=w.env,
        timeout=LIMIT,
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


READ_ONLY = [
    "hook-install-claude",
    "hook-install-codex",
    "mcp-install-claude",
    "mcp-install-gemini",
    "mcp-install-opencode",
    "mcp-install-copilot-user",
    "mcp-install-claude-local",
    "mcp-uninstall-qwen",
]
INSTALLED_MCP = '{"mcpServers": {"nia": {"command": "nia", "args": ["mcp", "--client", "qwen-code"]}}, "theme": 1}\n'
"""What an uninstall finds to remove (and then cannot write)."""


@pytest.mark.parametrize("command", READ_ONLY)
def test_a_read_only_settings_folder_is_one_line_and_nothing_is_written(tmp_path: Path, command: str) -> None:
    w = Attack(tmp_path)
    args, spelled = COMMANDS[command]
    path = _where(w, spelled)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        path.write_text(INSTALLED_MCP if args[:2] == ["mcp", "uninstall"] else "{}\n")
    before = _snapshot(path.parent)
    os.chmod(path.parent, 0o555)
    try:
        result = _run_as_a_user(w, *args)
    finally:
        os.chmod(path.parent, 0o755)
    assert "unexpected" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "ermission denied" in lines[0], lines
    assert _snapshot(path.parent) == before


# -- a user's own hook that mentions nia's command --------------------------------------------------

LOOKALIKES = [
    'echo "nia hook {host}"',
    "nia hook {host} # my own copy, keep it",
    "logger -t mine nia hook {host}",
    "nia hook {host} | tee -a /tmp/hook.log",
    "bash -c 'nia hook {host}'",
    "/opt/tools/nia-wrapper hook {host}",
    "nia hook {host} --verbose",
    "mynia hook {host}",
    "NIA_DEBUG=1 nia hook {host}",
    "nia  hook  {host}  ;  true",
]


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_a_users_hook_that_mentions_nias_command_is_never_rewritten_nor_removed(tmp_path: Path, host: str) -> None:
    w = Attack(tmp_path)
    path = w.root / (".claude/settings.json" if host == "claude-code" else ".codex/hooks.json")
    path.parent.mkdir()
    mine = [command.format(host=host) for command in LOOKALIKES]
    groups = [{"hooks": [{"type": "command", "command": command}]} for command in mine]
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": groups, "SessionStart": groups}}, indent=2))

    def commands() -> list[str]:
        data = json.loads(path.read_text())
        return [h["command"] for g in data["hooks"]["UserPromptSubmit"] for h in g["hooks"]]

    installed = w.nia("hook", "install", host, "--program", "nia")
    assert installed.returncode == 0, installed.stderr
    assert commands() == [*mine, f"nia hook {host}"]  # theirs untouched, nia's added
    status = json.loads(w.nia("hook", "status", "--json").stdout)
    assert next(s for s in status if s["host"] == host and s["scope"] == "project")["events"] == [
        "SessionStart",
        "UserPromptSubmit",
    ]
    removed = w.nia("hook", "uninstall", host)
    assert removed.returncode == 0, removed.stderr
    assert commands() == mine
    assert "no nia" in w.nia("hook", "uninstall", host).stdout
