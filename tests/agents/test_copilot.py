"""``nia hook copilot``: GitHub Copilot CLI's ``userPromptSubmitted`` hook, its session log, its trust record.

Copilot names no event and no transcript in the hook's stdin; nia reads the
session's event log (``$COPILOT_HOME/session-state/<sessionId>/events.jsonl``)
for what reached the model: the ``<system_reminder>`` Copilot appended to the
prompt in ``user.message``'s ``transformedContent``. The records are the ones
Copilot 1.0.102 wrote (tests/agents/transcripts.py; tests/real_agents drives
the binary).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from nia_core.cli import cli
from tests.agents.test_hook_answer import Host, generous_deadline, log, project  # noqa: F401 - fixtures
from tests.agents.transcripts import copilot_compaction, copilot_prompt, copilot_tool_result, line

SESSION = "e6d32a43-5336-4ef1-a414-805dac7ce8f8"


class Copilot:
    """One Copilot conversation: each prompt runs nia's hook, then Copilot's record of the prompt is appended."""

    def __init__(self, cwd: Path, session: str = SESSION) -> None:
        self.cwd, self.session = cwd, session
        self.timestamp = 1796163890254
        self.events = Path(os.environ["HOME"]) / ".copilot" / "session-state" / session / "events.jsonl"
        self.events.parent.mkdir(parents=True, exist_ok=True)
        self.events.touch()

    def prompt(self, prompt: str = "hello", record: bool = True, hooks: int = 1) -> str | None:
        """One prompt, answered by ``hooks`` of nia's hooks (installed at two scopes: 2); what reached the model.

        Every hook of one prompt gets the prompt's ``timestamp``; of several texts Copilot keeps the last one.
        """
        self.timestamp += 3_000
        payload = {"sessionId": self.session, "timestamp": self.timestamp, "cwd": str(self.cwd), "prompt": prompt}
        text = None
        for _ in range(hooks):
            result = CliRunner().invoke(cli, ["hook", "copilot"], input=json.dumps(payload))
            assert result.exit_code == 0, result.output
            text = json.loads(result.stdout)["additionalContext"] if result.stdout.strip() else text
        self.write(copilot_prompt(prompt, text if record else None))
        return text

    def write(self, record: dict) -> None:
        with open(self.events, "a") as handle:
            handle.write(line(record))


def rule(root: Path, text: str) -> None:
    (root / "rule.txt").write_text(text + "\n")


def test_the_first_prompt_gets_the_baseline_then_only_deltas(project):  # noqa: F811
    copilot = Copilot(project)
    baseline = copilot.prompt()
    assert baseline is not None and baseline.startswith("Environment:") and "ACME-RULE: one" in baseline
    assert "AGENTS-SAYS" not in baseline  # Copilot loads AGENTS.md itself
    assert copilot.prompt() is None
    rule(project, "two")
    assert copilot.prompt() == "ACME-RULE changed: two (was one)"
    assert copilot.prompt() is None
    assert [(e["event"], e["outcome"], e["epoch"]) for e in log()] == [
        ("userPromptSubmitted", "initialized", 1),
        ("userPromptSubmitted", "unchanged", 1),
        ("userPromptSubmitted", "updated", 1),
        ("userPromptSubmitted", "unchanged", 1),
    ]


def test_two_of_nias_hooks_at_one_prompt_say_it_once(project):  # noqa: F811
    copilot = Copilot(project)  # installed for the user and for the project: Copilot runs both at each prompt
    assert (copilot.prompt(hooks=2) or "").startswith("Environment:")
    assert copilot.prompt(hooks=2) is None
    rule(project, "two")
    assert copilot.prompt(hooks=2) == "ACME-RULE changed: two (was one)"
    assert [(e["outcome"], e["epoch"], bool(e["printed"])) for e in log()] == [
        ("initialized", 1, True),
        ("unchanged", 1, False),  # the same prompt: the first hook's text is on its way, not lost
        ("unchanged", 1, False),
        ("unchanged", 1, False),
        ("updated", 1, True),
        ("unchanged", 1, False),
    ]


MANY = """\
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    def source(i):
        path = location.root / "rule.txt"
        return ContextSource(key=f"acme/a-rather-long-source-name-{i:04d}", load=lambda: path.read_text().strip(),
                             baseline=lambda v: f"{i}: {v}")
    return [source(i) for i in range(300)]
"""


def test_the_second_hook_of_a_prompt_finds_a_first_hook_whose_log_entry_is_long(project):  # noqa: F811
    (project / ".nia" / "plugins" / "many.py").write_text(MANY)
    copilot = Copilot(project)
    assert copilot.prompt(hooks=2) is not None
    rule(project, "two")
    assert copilot.prompt(hooks=2) is not None
    entries = log()
    assert len(json.dumps(entries[-2])) > 10_000  # 300 changed keys: past the end of the log nia reads first
    assert [(e["outcome"], bool(e["printed"])) for e in entries[-2:]] == [("updated", True), ("unchanged", False)]


def test_the_answer_is_a_top_level_additional_context(project):  # noqa: F811
    payload = {"sessionId": SESSION, "timestamp": 1, "cwd": str(project), "prompt": "hi"}
    result = CliRunner().invoke(cli, ["hook", "copilot"], input=json.dumps(payload))
    assert list(json.loads(result.stdout)) == ["additionalContext"]  # Claude Code's shape reaches nothing there


def test_a_lost_text_is_sent_again(project):  # noqa: F811
    copilot = Copilot(project)
    assert copilot.prompt() is not None
    rule(project, "two")
    assert copilot.prompt(record=False) == "ACME-RULE changed: two (was one)"  # another hook printed after nia's
    rule(project, "three")
    assert copilot.prompt() == "ACME-RULE changed: two (was one)\n\nACME-RULE changed: three (was two)"
    assert copilot.prompt() is None


def test_text_the_prompt_or_a_tool_holds_does_not_count(project):  # noqa: F811
    copilot = Copilot(project)
    baseline = copilot.prompt(record=False)
    assert baseline is not None
    # The user pastes it, and a tool reads it back: neither is Copilot's record of a hook's text.
    copilot.write(copilot_prompt(f"x\n\n<system_reminder>\n{baseline}\n</system_reminder>", None))
    copilot.write(copilot_tool_result(baseline))
    again = copilot.prompt()
    assert again is not None and again.startswith("Environment:")
    assert [e["epoch"] for e in log()] == [1, 2]  # the nested "compaction" in the tool's telemetry is no record


def test_a_sub_agents_message_does_not_count(project):  # noqa: F811
    copilot = Copilot(project)
    baseline = copilot.prompt(record=False)
    assert baseline is not None
    copilot.write(copilot_prompt("task", baseline, agent="task-1"))
    assert (copilot.prompt() or "").startswith("Environment:")


def test_a_compaction_starts_a_new_epoch_and_a_failed_one_does_not(project):  # noqa: F811
    copilot = Copilot(project)
    assert copilot.prompt() is not None
    copilot.write(copilot_compaction(success=False))
    assert copilot.prompt() is None
    copilot.write(copilot_compaction())
    rule(project, "two")
    text = copilot.prompt()
    assert text is not None and text.startswith("Environment:") and "ACME-RULE: two" in text
    assert "changed" not in text
    assert copilot.prompt() is None
    assert [(e["outcome"], e["epoch"]) for e in log()] == [
        ("initialized", 1),
        ("unchanged", 1),
        ("initialized", 2),
        ("unchanged", 2),
    ]


def test_a_session_id_that_is_a_path_reads_no_other_file(project, tmp_path):  # noqa: F811
    planted = Path(os.environ["HOME"]) / ".copilot" / "x" / "events.jsonl"
    planted.parent.mkdir(parents=True)
    copilot = Copilot(project, session="../x")
    assert copilot.events.resolve() == planted.resolve()
    assert copilot.prompt(record=False) is not None
    assert copilot.prompt() is None  # nothing concluded from that file: no second baseline, nothing re-sent


def test_a_text_over_the_limit_is_spilled_and_counts_as_delivered(project):  # noqa: F811
    rule(project, "x" * 12_000)
    copilot = Copilot(project)
    text = copilot.prompt()
    assert text is not None and len(text) <= 10_000 and ".nia/hook-output/" in text
    assert copilot.prompt() is None
    assert log()[0]["full_text"].startswith(str(project / ".nia" / "hook-output"))


def test_nias_claude_code_hook_says_nothing_under_copilot(project, monkeypatch):  # noqa: F811
    claude = Host("claude-code", project)
    monkeypatch.setenv("COPILOT_CLI", "1")  # Copilot runs .claude/settings.json hooks and drops their output
    text, err = claude.hook("UserPromptSubmit")
    assert text is None and "GitHub Copilot CLI" in err and "nia hook install copilot" in err
    assert [(e["host"], e["outcome"], e["epoch"]) for e in log()] == [("claude-code", "ignored", None)]
    monkeypatch.delenv("COPILOT_CLI")
    text, _ = claude.hook("UserPromptSubmit")
    assert text is not None and text.startswith("Environment:")  # nothing was recorded as delivered meanwhile


def invoke(*args: str, cwd: Path) -> str:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    return result.output


def test_install_writes_copilots_hook_file_and_uninstall_removes_it(project):  # noqa: F811
    said = invoke("hook", "install", "copilot", "--program", "nia", cwd=project)
    path = project / ".github" / "hooks" / "nia.json"
    assert json.loads(path.read_text()) == {
        "version": 1,
        "hooks": {"userPromptSubmitted": [{"type": "command", "bash": "nia hook copilot", "timeoutSec": 30}]},
    }
    assert "trust the folder" in said and "nia never records that consent" in said
    assert "only the last userPromptSubmitted hook" in said
    invoke("hook", "uninstall", "copilot", cwd=project)
    assert not (project / ".github").exists()


def test_status_reads_copilots_trusted_folders(project):  # noqa: F811
    invoke("hook", "install", "copilot", cwd=project)
    status = json.loads(invoke("hook", "status", "--json", cwd=project))
    mine = next(s for s in status if s["host"] == "copilot" and s["scope"] == "project")
    assert mine["events"] == ["userPromptSubmitted"] and mine["trusted_events"] == []
    assert "folder NOT trusted" in invoke("hook", "status", cwd=project)
    config = Path(os.environ["HOME"]) / ".copilot" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    # As Copilot writes it: two comment lines on top; a folder above the project trusts it too.
    config.write_text(
        f"// User settings belong in settings.json.\n// This file is managed automatically.\n"
        f'{{\n  "trustedFolders": [\n    "{project.parent}"\n  ]\n}}\n'
    )
    status = json.loads(invoke("hook", "status", "--json", cwd=project))
    mine = next(s for s in status if s["host"] == "copilot" and s["scope"] == "project")
    assert mine["trusted_events"] == ["userPromptSubmitted"] and "problem" not in mine
    assert config.read_text().startswith("// User settings")  # nia only reads it


def test_the_user_scope_follows_copilot_home(project, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot-home"))
    invoke("hook", "install", "copilot", "--user", cwd=project)
    assert (tmp_path / "copilot-home" / "hooks" / "nia.json").exists()
