"""``nia hook opencode``: what nia's OpenCode plugin asks at each prompt, and what OpenCode's database holds.

OpenCode keeps the conversation in SQLite; nia reads the session's rows for
the parts its plugin added (``metadata: {"nia": true}``) that the model still
gets after OpenCode's last compaction. The rows are shaped as OpenCode
1.18.33 wrote them (tests/agents/transcripts.py ``OpenCodeStore``;
tests/real_agents drives the binary).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from tests.agents.test_hook_answer import generous_deadline, log, project  # noqa: F401 - fixtures
from tests.agents.transcripts import OpenCodeStore

SESSION = "ses_dcc4dfafcffemACAP8oky3XkDC"


def database() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "opencode" / "opencode.db"


class OpenCode:
    """One OpenCode session: each prompt is what nia's plugin sends nia, then OpenCode stores the message."""

    def __init__(self, cwd: Path, store: OpenCodeStore | None = None) -> None:
        self.cwd = cwd
        self.store = store or OpenCodeStore(database(), SESSION)
        self.session = SESSION
        self.count = 0

    def ask(self, message_id: str | None = None) -> str | None:
        self.count += 1
        payload = {
            "hook_event_name": "chat.message",
            "session_id": self.session,
            "cwd": str(self.cwd),
            "message_id": message_id or f"{self.session}-{self.count:04d}",
            "agent": "build",
        }
        result = CliRunner().invoke(cli, ["hook", "opencode"], input=json.dumps(payload))
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["additionalContext"] if result.stdout.strip() else None

    def prompt(self, record: bool = True) -> str | None:
        text = self.ask()
        self.store.prompt("hello", text if record else None)
        return text


def rule(root: Path, text: str) -> None:
    (root / "rule.txt").write_text(text + "\n")


def test_the_first_prompt_gets_the_baseline_then_only_deltas(project):  # noqa: F811
    opencode = OpenCode(project)
    baseline = opencode.prompt()
    assert baseline is not None and baseline.startswith("Environment:") and "ACME-RULE: one" in baseline
    assert "AGENTS-SAYS" not in baseline  # OpenCode loads AGENTS.md itself
    assert opencode.prompt() is None
    rule(project, "two")
    assert opencode.prompt() == "ACME-RULE changed: two (was one)"
    assert opencode.prompt() is None
    assert [(e["event"], e["outcome"], e["epoch"]) for e in log()] == [
        ("chat.message", "initialized", 1),
        ("chat.message", "unchanged", 1),
        ("chat.message", "updated", 1),
        ("chat.message", "unchanged", 1),
    ]


def test_a_lost_text_is_sent_again(project):  # noqa: F811
    opencode = OpenCode(project)
    assert opencode.prompt() is not None
    rule(project, "two")
    assert opencode.prompt(record=False) == "ACME-RULE changed: two (was one)"
    rule(project, "three")
    assert opencode.prompt() == "ACME-RULE changed: two (was one)\n\nACME-RULE changed: three (was two)"
    assert opencode.prompt() is None


def test_only_nias_own_parts_count(project):  # noqa: F811
    opencode = OpenCode(project)
    baseline = opencode.prompt(record=False)
    assert baseline is not None
    opencode.store.prompt("@notes.md", baseline, mark=False)  # a synthetic part that is not nia's (an attachment)
    opencode.store.tool_result(baseline)  # a tool read it back from a file the repository wrote
    again = opencode.prompt()
    assert again is not None and again.startswith("Environment:")
    assert [e["epoch"] for e in log()] == [1, 2]


def test_a_compaction_starts_a_new_epoch(project):  # noqa: F811
    opencode = OpenCode(project)
    assert opencode.prompt() is not None
    opencode.store.compaction(finished=False)  # a summary that never finished changes nothing
    assert opencode.prompt() is None
    opencode.store.compaction()
    rule(project, "two")
    text = opencode.prompt()
    assert text is not None and text.startswith("Environment:") and "ACME-RULE: two" in text
    assert opencode.prompt() is None
    assert [(e["outcome"], e["epoch"]) for e in log()] == [
        ("initialized", 1),
        ("unchanged", 1),
        ("initialized", 2),
        ("unchanged", 2),
    ]


def test_a_compaction_that_keeps_the_baselines_message_keeps_the_epoch(project):  # noqa: F811
    opencode = OpenCode(project)
    baseline = opencode.ask()
    kept = opencode.store.prompt("hello", baseline)  # the tail OpenCode keeps starts at this message
    opencode.store.compaction(tail=kept)
    rule(project, "two")
    assert opencode.prompt() == "ACME-RULE changed: two (was one)"
    assert [e["epoch"] for e in log()] == [1, 1]


def test_a_fork_continues_the_parents_epoch_with_only_the_delta(project):  # noqa: F811
    parent = OpenCode(project)
    assert parent.prompt() is not None
    rule(project, "two")
    forked = OpenCode(project, parent.store.fork("ses_forked000000000000000000"))
    forked.session = "ses_forked000000000000000000"
    assert forked.prompt() == "ACME-RULE changed: two (was one)"  # not a second baseline
    assert forked.prompt() is None
    assert parent.prompt() == "ACME-RULE changed: two (was one)"  # the parent goes on as it was
    fork_entries = [e for e in log() if e["host_session"] == "ses_forked000000000000000000"]
    assert [(e["outcome"], e["epoch"]) for e in fork_entries] == [("forked+updated", 1), ("unchanged", 1)]


def test_a_new_session_that_holds_no_text_of_nias_is_no_fork(project):  # noqa: F811
    OpenCode(project).prompt()
    other = OpenCode(project, OpenCodeStore(database(), "ses_other00000000000000000000"))
    other.session = "ses_other00000000000000000000"
    assert (other.prompt() or "").startswith("Environment:")


def test_where_the_database_is(project, tmp_path, monkeypatch):  # noqa: F811
    elsewhere = tmp_path / "dbs" / "mine.db"
    monkeypatch.setenv("OPENCODE_DB", str(elsewhere))
    opencode = OpenCode(project, OpenCodeStore(elsewhere, SESSION))
    assert opencode.prompt() is not None
    assert opencode.prompt() is None  # found there: nothing re-sent
    monkeypatch.setenv("OPENCODE_DB", "named.db")  # relative: in OpenCode's data folder
    relative = OpenCode(project, OpenCodeStore(database().with_name("named.db"), SESSION))
    rule(project, "two")
    assert relative.prompt() is not None


@pytest.mark.parametrize("kind", ["garbage", "fifo", "other-schema"])
def test_a_database_nia_cannot_read_concludes_nothing(kind, project):  # noqa: F811
    path = database()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "garbage":
        path.write_bytes(b"not a database" * 100)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        import sqlite3

        sqlite3.connect(path).execute("CREATE TABLE message (x)").connection.commit()
    opencode = OpenCode.__new__(OpenCode)
    opencode.cwd, opencode.count, opencode.session = project, 0, SESSION
    assert opencode.ask() is not None
    assert opencode.ask() is None  # no record to read: nothing re-sent, no new epoch
    assert [e["epoch"] for e in log()] == [1, 1]


def test_two_hooks_of_one_prompt_at_once_say_it_once(project):  # noqa: F811
    """A plugin installed for the user and for the project: OpenCode asks both at each prompt."""
    OpenCodeStore(database(), SESSION)
    payload = json.dumps(
        {"hook_event_name": "chat.message", "session_id": SESSION, "cwd": str(project), "message_id": "msg_1"}
    )
    nia = str(Path(sys.executable).parent / "nia")
    runs = [
        subprocess.Popen([nia, "hook", "opencode"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [run.communicate(payload, timeout=120)[0] for run in runs]
    said = [json.loads(out)["additionalContext"] for out in outputs if out.strip()]
    assert len(said) == 1 and said[0].startswith("Environment:")
    assert sorted(e["outcome"] for e in log()) == ["initialized", "unchanged"]


# -- install -------------------------------------------------------------------------------------------


def invoke(*args: str, cwd: Path, code: int = 0) -> str:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(old)
    assert result.exit_code == code, result.output
    return result.output


def test_install_writes_the_plugin_and_keeps_it_out_of_git(project):  # noqa: F811
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".git" / "info").mkdir(exist_ok=True)
    said = invoke("hook", "install", "opencode", "--program", "/opt/nia/bin/nia", cwd=project)
    plugin = project / ".opencode" / "plugin" / "nia.js"
    assert 'const PROGRAM = "/opt/nia/bin/nia"' in plugin.read_text()
    assert '"chat.message"' in plugin.read_text()
    assert "@opencode-ai/plugin" in said and "npm registry" in said
    untracked = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=project, capture_output=True, text=True
    ).stdout
    assert ".opencode" not in untracked  # the plugin names this machine's nia: never committed by accident
    again = invoke("hook", "install", "opencode", "--program", "/opt/nia/bin/nia", cwd=project)
    assert "nia's opencode hooks are already installed" in again
    invoke("hook", "uninstall", "opencode", cwd=project)
    assert not (project / ".opencode").exists()


def test_an_existing_gitignore_gets_nias_lines_and_gets_them_back(project):  # noqa: F811
    ignore = project / ".opencode" / "plugin" / ".gitignore"
    ignore.parent.mkdir(parents=True)
    ignore.write_text("secret.js")  # no final newline
    (project / ".opencode" / "plugin" / "mine.js").write_text("export const Mine = async () => ({})\n")
    invoke("hook", "install", "opencode", cwd=project)
    assert ignore.read_text().startswith("secret.js\n# nia hook install") and "/nia.js" in ignore.read_text()
    invoke("hook", "uninstall", "opencode", cwd=project)
    assert ignore.read_text() == "secret.js\n"
    assert (project / ".opencode" / "plugin" / "mine.js").exists()


def test_a_plugin_nia_did_not_write_is_never_replaced_or_removed(project):  # noqa: F811
    invoke("hook", "install", "opencode", "--program", "/opt/nia/bin/nia", cwd=project)
    plugin = project / ".opencode" / "plugin" / "nia.js"
    edited = plugin.read_text().replace("MAX_BYTES = 16", "MAX_BYTES = 32")
    plugin.write_text(edited)
    said = invoke("hook", "install", "opencode", cwd=project, code=2)
    assert "not nia's plugin as nia wrote it" in said
    assert "not nia's plugin as nia wrote it" in invoke("hook", "uninstall", "opencode", cwd=project)
    assert plugin.read_text() == edited
    status = json.loads(invoke("hook", "status", "--json", cwd=project))
    mine = next(s for s in status if s["host"] == "opencode" and s["scope"] == "project")
    assert mine["events"] == [] and "not nia's plugin" in mine["problem"]


def test_another_nias_plugin_is_brought_up_to_date_and_status_says_what_it_runs(project):  # noqa: F811
    invoke("hook", "install", "opencode", "--program", "/opt/nowhere/nia", cwd=project)
    status = json.loads(invoke("hook", "status", "--json", cwd=project))
    mine = next(s for s in status if s["host"] == "opencode" and s["scope"] == "project")
    assert mine["events"] == ["chat.message"] and "does not resolve" in mine["command_problem"]
    said = invoke("hook", "install", "opencode", cwd=project)
    assert "updated: it ran another nia" in said
    status = json.loads(invoke("hook", "status", "--json", cwd=project))
    mine = next(s for s in status if s["host"] == "opencode" and s["scope"] == "project")
    assert "command_problem" not in mine


def test_the_user_scope_is_opencodes_config_folder(project, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    invoke("hook", "install", "opencode", "--user", cwd=project)
    assert (tmp_path / "config" / "opencode" / "plugin" / "nia.js").exists()
    assert not (tmp_path / "config" / "opencode" / "plugin" / ".gitignore").exists()
