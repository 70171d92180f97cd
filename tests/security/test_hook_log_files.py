"""The hook log (``$XDG_STATE_HOME/nia/hooks``) is read and written like every file nia keeps for itself.

A link, a FIFO or another user's file where a conversation's log should be is
never followed, written through or waited on: the hook answers as without a
log, and ``nia hook log`` lists the logs nia wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from nia_core.runtime.attached import attached_id
from tests.security.test_attack_corpus import LIMIT, NIA

SESSION = "s1"


def _world(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    root = tmp_path / "proj"
    (root / ".nia").mkdir(parents=True)
    (root / "AGENTS.md").write_text("be brief\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / "state"),
        "NIA_DB": str(home / "nia.db"),
        "NIA_RESIDENT": "0",
        "LANG": "C.UTF-8",
    }
    logs = home / "state" / "nia" / "hooks"
    logs.mkdir(parents=True, mode=0o700)
    return root, env, logs


def _hook(root: Path, env: dict[str, str], event: str = "UserPromptSubmit") -> subprocess.CompletedProcess[str]:
    payload = {"session_id": SESSION, "cwd": str(root), "hook_event_name": event, "prompt": "go on"}
    if event == "SessionStart":
        payload["source"] = "startup"
    return subprocess.run(
        [*NIA, "hook", "claude-code"], input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=LIMIT
    )


def test_a_fifo_where_the_log_of_a_conversation_goes_never_blocks_its_hooks(tmp_path: Path) -> None:
    root, env, logs = _world(tmp_path)
    fifo = logs / f"{attached_id('claude-code', SESSION)}.jsonl"
    os.mkfifo(fifo)
    started = _hook(root, env, "SessionStart")
    assert started.returncode == 0 and "Environment:" in started.stdout
    assert _hook(root, env).returncode == 0  # the previous hook's entry is looked for: nothing is waited on
    assert fifo.is_fifo()


def test_a_link_where_the_log_goes_is_not_written_through(tmp_path: Path) -> None:
    root, env, logs = _world(tmp_path)
    target = tmp_path / "elsewhere.txt"
    target.write_text("someone else's file\n")
    (logs / f"{attached_id('claude-code', SESSION)}.jsonl").symlink_to(target)
    assert "Environment:" in _hook(root, env, "SessionStart").stdout
    assert _hook(root, env).returncode == 0
    assert target.read_text() == "someone else's file\n"


def test_hook_log_lists_what_nia_wrote_beside_a_fifo_and_a_dangling_link(tmp_path: Path) -> None:
    root, env, logs = _world(tmp_path)
    assert "Environment:" in _hook(root, env, "SessionStart").stdout
    os.mkfifo(logs / "claude-code-00000000000000000000.jsonl")
    (logs / "codex-00000000000000000000.jsonl").symlink_to(tmp_path / "missing")
    listed = subprocess.run([*NIA, "hook", "log", "--json"], capture_output=True, text=True, env=env, timeout=LIMIT)
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line)["outcome"] for line in listed.stdout.splitlines()] == ["initialized"]


def test_a_log_folder_an_earlier_nia_left_group_writable_is_tightened_and_used(tmp_path: Path) -> None:
    root, env, logs = _world(tmp_path)
    logs.chmod(0o775)  # a plain mkdir under a 002 umask, as nia made it before it checked the folder
    assert "Environment:" in _hook(root, env, "SessionStart").stdout
    assert logs.stat().st_mode & 0o777 == 0o755
    listed = subprocess.run([*NIA, "hook", "log", "--json"], capture_output=True, text=True, env=env, timeout=LIMIT)
    assert [json.loads(line)["outcome"] for line in listed.stdout.splitlines()] == ["initialized"]
