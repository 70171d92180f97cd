"""A project.toml broken between two sends is unavailable context: the send goes on, the model is told nothing.

Real processes, so nothing of an earlier run is remembered: the fresh process
only has the stored snapshot and a file it cannot read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

NIA = [sys.executable, "-c", "from nia_core.cli import main; main()"]


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NIA, *args], env=env, capture_output=True, text=True, timeout=120)


def updates(env: dict[str, str], session_id: str) -> list[str]:
    shown = json.loads(run(env, "session", "show", session_id, "--json").stdout)
    return [m["text"] for m in shown["messages"] if m["kind"] == "system_update"]


def test_a_toml_syntax_error_between_sends_neither_fails_the_send_nor_reaches_the_model(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    config = root / ".nia" / "project.toml"
    config.write_text('[project]\ndescription = "A shop."\n')
    (root / "AGENTS.md").write_text("Be brief.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIA_")}
    env.update(NIA_DB=str(tmp_path / "nia.db"), XDG_CONFIG_HOME=str(tmp_path / "config"), HOME=str(tmp_path))
    session_id = run(env, "session", "new", "--location", str(root)).stdout.strip()
    assert run(env, "session", "send", session_id, "one").returncode == 0

    config.write_text('[project]\ndescription = "A shop."\n[plugins\n')
    broken = run(env, "session", "send", session_id, "two")

    assert broken.returncode == 0, broken.stderr
    assert broken.stdout.strip().endswith("you said: two")
    assert "project.toml" in broken.stderr and "Traceback" not in broken.stderr
    assert updates(env, session_id) == []  # no removal of anything, no "configuration no longer applies"

    config.write_text('[project]\ndescription = "A bookshop."\n')
    fixed = run(env, "session", "send", session_id, "three")
    assert fixed.returncode == 0, fixed.stderr
    [update] = updates(env, session_id)
    assert "A bookshop." in update


def test_a_provider_that_needs_the_broken_settings_fails_before_storing_anything(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    config = root / ".nia" / "project.toml"
    config.write_text('[providers.openai-chat]\nbase_url = "http://127.0.0.1:9/v1"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIA_")}
    env.update(NIA_DB=str(tmp_path / "nia.db"), XDG_CONFIG_HOME=str(tmp_path / "config"), HOME=str(tmp_path))
    env["OPENAI_API_KEY"] = "sk-test"
    session_id = run(env, "session", "new", "--location", str(root), "--model", "openai/gpt-4.1").stdout.strip()

    config.write_text("[providers.openai-chat\n")
    failed = run(env, "session", "send", session_id, "hello")

    assert failed.returncode == 2
    assert (
        failed.stderr.startswith("Error: ") and "project.toml" in failed.stderr and "TOML syntax error" in failed.stderr
    )
    assert "Traceback" not in failed.stderr
    shown = json.loads(run(env, "session", "show", session_id, "--json").stdout)
    assert shown["messages"] == [] and shown["pending"] == []
