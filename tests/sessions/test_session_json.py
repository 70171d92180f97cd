"""``session send --json``: the reply, the system message admitted before it, and usage, as one object."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from nia_core.cli import cli


def nia(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_send_json_reports_the_turn_and_what_the_model_was_told(tmp_path: Path, cli_env: dict[str, str]) -> None:
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Be brief.\n")
    session_id = nia("session", "new", "--location", str(root)).stdout.strip()

    first = nia("session", "send", session_id, "hello", "--json")
    assert first.exit_code == 0, first.output
    turn = json.loads(first.stdout)  # stdout is the object alone: nothing streamed before it
    assert turn["session"] == session_id and turn["new_epoch"] is True
    assert turn["system_message"] is None and turn["tool_calls"] == [] and turn["refusal"] is False
    assert turn["reply"].endswith("you said: hello")

    (root / "AGENTS.md").write_text("Be thorough.\n")
    second = json.loads(nia("session", "send", session_id, "again", "--json").stdout)
    assert second["new_epoch"] is False
    assert "Be thorough." in second["system_message"]
    shown = json.loads(nia("session", "show", session_id, "--json").stdout)
    updates = [m["text"] for m in shown["messages"] if m["kind"] == "system_update"]
    assert updates == [second["system_message"]]

    third = json.loads(nia("session", "send", session_id, "once more", "--json").stdout)
    assert third["system_message"] is None
