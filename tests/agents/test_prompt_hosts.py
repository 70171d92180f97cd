"""``nia hook gemini|qwen-code``: hosts whose one event is the prompt, which escape and join hook texts.

Gemini CLI (``BeforeAgent``) and Qwen Code (``UserPromptSubmit``) are answered
at every prompt only: the first prompt of a session gets the baseline, later
ones the delta or nothing. Both turn ``<`` and ``>`` into ``&lt;`` and
``&gt;`` before they record a hook's text, join the texts of several hooks with
a newline, and keep the newest turns when they compress. The session-file
records are the ones the binaries wrote (tests/agents/transcripts.py;
tests/real_agents drives the binaries).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from tests.agents.test_hook_answer import generous_deadline, log, project  # noqa: F401 - fixtures
from tests.agents.transcripts import (
    escaped,
    gemini_message,
    gemini_snapshot,
    hook_record,
    line,
    qwen_compression,
    qwen_prompt,
    tool_result,
)
from tests.resident_helpers import one_hook

EVENTS = {"gemini": "BeforeAgent", "qwen-code": "UserPromptSubmit"}
HOSTS = list(EVENTS)


class PromptHost:
    """One conversation of a prompt-only host: each call is one hook process, its output recorded as the host does."""

    def __init__(self, name: str, cwd: Path, transcript: Path) -> None:
        self.name, self.cwd, self.transcript = name, cwd, transcript
        transcript.touch()

    def prompt(self, record: bool = True, joined: tuple[str, str] = ("", "")) -> str | None:
        payload = {
            "session_id": "host-session-1",
            "cwd": str(self.cwd),
            "hook_event_name": EVENTS[self.name],
            "transcript_path": str(self.transcript),
            "prompt": "hello",
        }
        with one_hook():  # in the resident mode, the prompts after the first are answered by the resident
            result = CliRunner().invoke(cli, ["hook", self.name], input=json.dumps(payload))
        assert result.exit_code == 0, result.output
        if not result.stdout.strip():
            return None
        data = json.loads(result.stdout)["hookSpecificOutput"]
        assert data["hookEventName"] == EVENTS[self.name]
        text = data["additionalContext"]
        if record:  # what the host stores, with another hook's text before or after nia's when given
            before, after = joined
            self.write(hook_record(self.name, "\n".join(t for t in (before, text, after) if t)))
        return text

    def write(self, record: dict) -> None:
        with open(self.transcript, "a") as handle:
            handle.write(line(record))


def plugin_text(root: Path, text: str) -> None:
    (root / "rule.txt").write_text(text + "\n")


@pytest.mark.parametrize("name", HOSTS)
def test_the_first_prompt_gets_the_baseline_then_only_deltas(name, project, tmp_path):  # noqa: F811
    plugin_text(project, "<b>one</b> &lt;kept&gt; & more")  # a literal "&lt;" must survive the host's escaping
    host = PromptHost(name, project, tmp_path / "session.jsonl")
    baseline = host.prompt()
    assert baseline is not None and baseline.startswith("Environment:") and "<b>one</b> &lt;kept&gt;" in baseline
    assert host.prompt() is None  # the escaped copy in the host's session file counts as delivered
    plugin_text(project, "two")
    assert host.prompt() == "ACME-RULE changed: two (was <b>one</b> &lt;kept&gt; & more)"
    assert host.prompt() is None
    assert [(e["event"], e["outcome"], e["epoch"]) for e in log()] == [
        (EVENTS[name], "initialized", 1),
        (EVENTS[name], "unchanged", 1),
        (EVENTS[name], "updated", 1),
        (EVENTS[name], "unchanged", 1),
    ]


@pytest.mark.parametrize(
    ("name", "settings", "scope", "nia_says_it"),
    [
        ("gemini", None, "", True),  # Gemini CLI loads GEMINI.md, not AGENTS.md: nia says it there
        ("gemini", ["AGENTS.md", "GEMINI.md"], "user", False),  # unless its settings name AGENTS.md
        ("gemini", "AGENTS.md", "project", False),
        ("qwen-code", None, "", False),  # Qwen Code loads QWEN.md and AGENTS.md itself
        ("qwen-code", "QWEN.md", "project", True),  # unless its settings leave AGENTS.md out
        ("qwen-code", ["QWEN.md"], "user", True),
    ],
)
def test_the_agents_md_rule_follows_what_each_host_loads(
    name,
    settings,
    scope,
    nia_says_it,
    project,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for variable in ("GEMINI_CLI_HOME", "QWEN_HOME"):
        monkeypatch.delenv(variable, raising=False)
    folder = {"gemini": ".gemini", "qwen-code": ".qwen"}[name]
    if settings is not None:
        where = (home if scope == "user" else project) / folder / "settings.json"
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(json.dumps({"context": {"fileName": settings}}))
    baseline = PromptHost(name, project, tmp_path / "session.jsonl").prompt()
    assert baseline is not None
    assert ("AGENTS-SAYS: use tabs." in baseline) == nia_says_it


@pytest.mark.parametrize("name", HOSTS)
@pytest.mark.parametrize("where", ["before", "after", "between"])
def test_nias_text_joined_with_another_hooks_text_counts_as_delivered(name, where, project, tmp_path):  # noqa: F811
    other = {"before": ("OTHER <hook>", ""), "after": ("", "OTHER <hook>"), "between": ("A\nB", "C")}[where]
    host = PromptHost(name, project, tmp_path / "session.jsonl")
    assert host.prompt(joined=other) is not None
    assert host.prompt(joined=other) is None
    plugin_text(project, "two")
    assert host.prompt(joined=other) == "ACME-RULE changed: two (was one)"
    assert "a new epoch starts" not in json.dumps(log())


@pytest.mark.parametrize("name", HOSTS)
def test_text_quoted_by_a_file_or_a_tool_does_not_count(name, project, tmp_path):  # noqa: F811
    host = PromptHost(name, project, tmp_path / "session.jsonl")
    baseline = host.prompt(record=False)  # the host lost it ...
    assert baseline is not None
    host.write(tool_result(name, baseline))  # ... and the repository quotes it back through a file or a tool
    again = host.prompt()
    assert again is not None and again.startswith("Environment:")  # the epoch is not in the host's record: anew
    assert [e["epoch"] for e in log()] == [1, 2]


def test_a_gemini_snapshot_that_kept_an_update_but_not_the_baseline_starts_a_new_epoch(project, tmp_path):  # noqa: F811
    host = PromptHost("gemini", project, tmp_path / "session.jsonl")
    assert host.prompt() is not None
    plugin_text(project, "two")
    update = host.prompt()
    assert update == "ACME-RULE changed: two (was one)"
    # Gemini compressed: a summary, then the newest 30% of the conversation, hook parts and all.
    summary = gemini_message(["<state_snapshot>SUMMARY</state_snapshot>"])
    kept = gemini_message(["second prompt", f"<hook_context>{escaped(update)}</hook_context>"])
    host.write(gemini_snapshot([summary, gemini_message(["Got it."], "gemini"), kept]))
    fresh = host.prompt()
    assert fresh is not None and fresh.startswith("Environment:") and "ACME-RULE: two" in fresh
    assert host.prompt() is None
    assert [(e["outcome"], e["epoch"]) for e in log()] == [
        ("initialized", 1),
        ("updated", 1),
        ("initialized", 2),
        ("unchanged", 2),
    ]


def test_a_gemini_snapshot_at_a_resumed_start_keeps_the_epoch(project, tmp_path):  # noqa: F811
    host = PromptHost("gemini", project, tmp_path / "session.jsonl")
    baseline = host.prompt(record=False)
    assert baseline is not None
    # A resumed run rewrites the history whole: the stored prompts, with their hook parts.
    stored = gemini_message(["first prompt", f"<hook_context>{escaped(baseline)}</hook_context>"])
    host.write(gemini_snapshot([gemini_message(["<session_context>…</session_context>"]), stored]))
    assert host.prompt() is None
    assert [e["outcome"] for e in log()] == ["initialized", "unchanged"]


def test_a_qwen_compression_that_kept_the_baseline_keeps_the_epoch(project, tmp_path):  # noqa: F811
    host = PromptHost("qwen-code", project, tmp_path / "session.jsonl")
    baseline = host.prompt()
    assert baseline is not None
    part = f"<qwen:user-prompt-submit-context>\n{escaped(baseline)}\n</qwen:user-prompt-submit-context>"
    kept = {"role": "user", "parts": [{"text": "first prompt"}, {"text": part}]}
    host.write(qwen_compression([{"role": "user", "parts": [{"text": "SUMMARY"}]}, kept]))
    assert host.prompt() is None
    host.write(qwen_compression([{"role": "user", "parts": [{"text": "SUMMARY"}]}]))
    again = host.prompt()
    assert again is not None and again.startswith("Environment:")
    host.write(qwen_prompt("next", escaped(again)))
    assert host.prompt() is None
    assert [(e["outcome"], e["epoch"]) for e in log()] == [
        ("initialized", 1),
        ("unchanged", 1),
        ("initialized", 2),
        ("unchanged", 2),
    ]


def run(*args: str, cwd: Path) -> object:
    import os

    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(old)


def test_install_writes_each_hosts_own_entry_and_uninstall_gives_the_file_back(project):  # noqa: F811
    result = run("hook", "install", "gemini", cwd=project)
    assert result.exit_code == 0, result.output
    assert "trust the folder" in result.output and "never records" in result.output
    data = json.loads((project / ".gemini" / "settings.json").read_text())
    assert data == {
        "hooks": {
            "BeforeAgent": [
                {
                    "hooks": [
                        {
                            "name": "nia",
                            "type": "command",
                            "command": data["hooks"]["BeforeAgent"][0]["hooks"][0]["command"],
                            "timeout": 30000,
                        }
                    ]
                }
            ]
        }
    }
    assert data["hooks"]["BeforeAgent"][0]["hooks"][0]["command"].endswith("hook gemini")

    settings = project / ".qwen" / "settings.json"
    settings.parent.mkdir()
    original = '{\n  "model": {"name": "qwen3-coder"}, // mine\n  "tools": {}\n}\n'
    settings.write_text(original.replace(" // mine", ""))
    before = settings.read_bytes()
    assert run("hook", "install", "qwen-code", cwd=project).exit_code == 0
    data = json.loads(settings.read_text())
    assert data["model"] == {"name": "qwen3-coder"} and list(data["hooks"]) == ["UserPromptSubmit"]
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["timeout"] == 30  # Qwen counts seconds
    assert run("hook", "uninstall", "qwen-code", cwd=project).exit_code == 0
    assert settings.read_bytes() == before
    assert run("hook", "uninstall", "gemini", cwd=project).exit_code == 0
    assert not (project / ".gemini").exists()  # nia created the file and its folder: both go


def test_a_qwen_settings_file_nia_creates_holds_the_version_qwen_would_write(project):  # noqa: F811
    # Qwen Code 0.24.4 writes `"$version": 4` into a settings file without one at its first start: the
    # project's file nia created (and the team committed) was modified by Qwen (tests/real_agents).
    settings = project / ".qwen" / "settings.json"
    assert run("hook", "install", "qwen-code", cwd=project).exit_code == 0
    data = json.loads(settings.read_text())
    assert data["$version"] == 4 and list(data["hooks"]) == ["UserPromptSubmit"]
    assert run("hook", "uninstall", "qwen-code", cwd=project).exit_code == 0
    assert not (project / ".qwen").exists()  # the version was nia's too: nothing of the user's was left

    settings.parent.mkdir()
    settings.write_text('{"model": {"name": "qwen3-coder"}}\n')  # the user's, unversioned: Qwen may migrate it
    assert run("hook", "install", "qwen-code", cwd=project).exit_code == 0
    assert "$version" not in json.loads(settings.read_text())
    settings.write_text('{"hooks": {}, "$version": 4}\n')  # what is left once Qwen versioned nia's file
    assert run("hook", "install", "qwen-code", cwd=project).exit_code == 0
    assert run("hook", "uninstall", "qwen-code", cwd=project).exit_code == 0
    assert not settings.exists()


@pytest.mark.parametrize(
    ("rules", "trusted"),
    [
        ({}, False),
        ({"{root}": "TRUST_FOLDER"}, True),
        ({"{root}/pyproject.toml": "TRUST_PARENT"}, True),  # the folder holding that path
        ({"{parent}": "TRUST_FOLDER", "{root}": "DO_NOT_TRUST"}, False),  # the longest rule decides
        ({"{parent}": "DO_NOT_TRUST", "{root}": "TRUST_FOLDER"}, True),
        ({"{root}-other": "TRUST_FOLDER"}, False),
    ],
)
def test_status_reads_geminis_trusted_folders(project, tmp_path, monkeypatch, rules, trusted):  # noqa: F811
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.delenv("GEMINI_CLI_TRUST_WORKSPACE", raising=False)
    record = {k.format(root=project, parent=project.parent): v for k, v in rules.items()}
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(record))
    assert run("hook", "install", "gemini", cwd=project).exit_code == 0
    result = run("hook", "status", cwd=project)
    assert ("folder trusted" in result.output) == trusted
    assert ("folder NOT trusted" in result.output) == (not trusted)
    assert json.loads((home / ".gemini" / "trustedFolders.json").read_text()) == record  # read, never written


@pytest.mark.parametrize("enabled", [False, True])
def test_status_says_qwen_needs_trust_only_when_folder_trust_is_on(project, tmp_path, monkeypatch, enabled):  # noqa: F811
    home = tmp_path / "home"
    (home / ".qwen").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("QWEN_HOME", raising=False)
    (home / ".qwen" / "settings.json").write_text(json.dumps({"security": {"folderTrust": {"enabled": enabled}}}))
    assert run("hook", "install", "qwen-code", cwd=project).exit_code == 0
    result = run("hook", "status", "--json", cwd=project)
    (mine,) = [s for s in json.loads(result.output) if s["host"] == "qwen-code" and s["scope"] == "project"]
    assert mine["trusted_events"] == ([] if enabled else ["UserPromptSubmit"])


@pytest.mark.parametrize("in_geminis_folder", [True, False])
def test_geminis_spill_file_is_in_its_own_folder_which_its_read_file_reads(
    in_geminis_folder,
    project,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    chats = (home / ".gemini" / "tmp" / "shop" if in_geminis_folder else tmp_path / "elsewhere") / "chats"
    chats.mkdir(parents=True)
    plugin_text(project, "word " * 30_000)  # over 25,000 tokens of Gemini's estimate
    host = PromptHost("gemini", project, chats / "session-2026-12-01T21-53-6f3771b1.jsonl")
    told = host.prompt()
    assert told is not None
    folder = home / ".gemini" / "tmp" / "shop" / "nia-hook-output" if in_geminis_folder else None
    spills = list(folder.glob("*.md")) if folder else list((project / ".nia" / "hook-output").glob("*.md"))
    assert len(spills) == 1 and "word word" in spills[0].read_text()
    assert told.endswith(f"The complete text is in {spills[0]} - read that file before relying on what is above.]")
    assert (project / ".nia" / "hook-output").exists() != in_geminis_folder
    assert host.prompt() is None  # the printed head and footer count as delivered
