"""nia's hooks inside the real Claude Code (pinned), against a loopback model server.

Every assertion is on the requests Claude Code sent to the model.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.real_agents.conftest import (
    GIT_BASELINE,
    GIT_EDITED,
    assert_answered_by,
    edit_between_turns,
    hook_log,
    make_git_repository,
    nia,
    write_plugin,
)
from tests.real_agents.fakemodel import SUMMARY, is_compaction
from tests.real_agents.harness import ClaudeCode, agent_binary, request_text

START = "SessionStart hook additional context: "
PROMPT = "UserPromptSubmit hook additional context: "


@pytest.fixture
def claude(project, agent_home, server):
    agent_binary("claude")
    done = nia("hook", "install", "claude-code", "--program", _program(), cwd=project)
    assert done.returncode == 0, done.stderr
    return ClaudeCode(project, agent_home, server)


def _program() -> str:
    from tests.real_agents.harness import nia_program

    return nia_program()


def told(sent: str, text: str) -> int:
    """How many times a nia hook (SessionStart or UserPromptSubmit) told the model ``text``."""
    return sent.count(START + text) + sent.count(PROMPT + text)


def last_request(server) -> str:
    requests = [r for r in server.model_requests() if r.body.get("messages")]
    assert requests, "Claude Code sent no request"
    return request_text(requests[-1].body)


def turn(claude, prompt, resume=None):
    result = claude.turn(prompt, resume)
    assert result.returncode == 0, result.stderr[-2000:] + result.stdout[-2000:]
    assert result.session_id
    return result.session_id


@pytest.mark.both_hook_modes  # the resident process answers this agent's hooks too
def test_baseline_once_then_nothing_then_an_update_then_a_removal(claude, project, server):
    sid = turn(claude, "first")
    sent = last_request(server)
    assert sent.count("ACME-RULE: one") == 1  # the baseline, once
    assert sent.count("Environment:\n- Working directory:") == 1
    assert sent.count("AGENTS-SAYS: use tabs.") == 1  # Claude Code's own copy only: nia does not say it twice
    assert PROMPT not in sent  # nothing changed between SessionStart and the first prompt

    turn(claude, "second", sid)
    sent = last_request(server)
    assert sent.count("ACME-RULE: one") == 1 and sent.count(START) == 1
    assert PROMPT not in sent  # an unchanged turn adds no nia text at all

    write_plugin(project, "two")  # live development: the plugin's author edits it
    turn(claude, "third", sid)
    sent = last_request(server)
    assert told(sent, "ACME-RULE changed: two (was one)") == 1
    assert sent.count("ACME-RULE") == 2  # the baseline and the update: nothing else

    (project / ".nia" / "plugins" / "acme.py").unlink()
    turn(claude, "fourth", sid)
    sent = last_request(server)
    assert told(sent, "ACME-RULE-REMOVED: the acme rule no longer applies.") == 1
    assert sent.count("ACME-RULE changed: two (was one)") == 1  # earlier updates stay where they were

    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert [(e["event"], e["outcome"]) for e in entries] == [
        ("SessionStart", "initialized"),
        ("UserPromptSubmit", "unchanged"),
        ("SessionStart", "unchanged"),
        ("UserPromptSubmit", "unchanged"),
        ("SessionStart", "updated"),  # a resumed session: the delta since the last turn
        ("UserPromptSubmit", "unchanged"),
        ("SessionStart", "updated"),
        ("UserPromptSubmit", "unchanged"),
    ]
    assert entries[4]["changed"] == ["~acme/rule"] and entries[6]["changed"] == ["-acme/rule"]
    assert {e["epoch"] for e in entries} == {1}
    assert_answered_by(entries, first_turn=2)  # with a resident: every later turn's hooks by it


def test_a_broken_plugin_never_fails_the_turn(claude, project, server):
    sid = turn(claude, "first")
    broken = project / ".nia" / "plugins" / "broken.py"
    broken.write_text("raise RuntimeError('the broken plugin exploded')\n")
    hanging = project / ".nia" / "plugins" / "slow.py"
    hanging.write_text(
        "import time\nfrom nia_core import ContextSource, hookimpl\n"
        "@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='slow/thing', load=lambda: time.sleep(30), baseline=str, timeout=0.5)]\n"
    )
    write_plugin(project, "two")
    turn(claude, "second", sid)
    sent = last_request(server)
    assert told(sent, "ACME-RULE changed: two (was one)") == 1  # what could be rendered still arrives
    last = [e for e in hook_log(project) if e["host_session"] == sid][-2]  # the resumed SessionStart
    assert last["outcome"] == "updated"
    assert any("broken" in w and "exploded" in w for w in last["warnings"]), last["warnings"]
    assert any("slow/thing" in w for w in last["warnings"]), last["warnings"]


def test_compaction_and_clear_start_new_epochs(claude, project, server):
    sid = turn(claude, "PROMPT-ONE")
    write_plugin(project, "two")
    turn(claude, "/compact", sid)  # -p runs the slash command: a real summarisation request, no model turn
    turn(claude, "PROMPT-AFTER-COMPACTION", sid)
    sent = last_request(server)
    assert "PROMPT-ONE" not in sent  # the conversation is Claude Code's summary now
    assert told(sent, "Environment:") == 1  # the fresh baseline; the old one went with the summary
    assert sent.count("ACME-RULE: two") == 1 and "ACME-RULE: one" not in sent and "ACME-RULE changed" not in sent
    turn(claude, "again", sid)
    assert last_request(server).count("ACME-RULE") == 1  # an unchanged turn adds nothing

    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    compacted = [e for e in entries if e["source"] == "compact"]
    assert [(e["outcome"], e["epoch"]) for e in compacted] == [("initialized", 2)]
    assert [e["epoch"] for e in entries[entries.index(compacted[0]) :]] == [2] * 5

    cleared = claude.turn("/clear", sid)  # -p: a new, empty session; its id is the result's session_id
    assert cleared.returncode == 0 and cleared.session_id and cleared.session_id != sid
    turn(claude, "after clear", cleared.session_id)
    sent = last_request(server)
    assert "PROMPT-AFTER-COMPACTION" not in sent and "PROMPT-ONE" not in sent  # nothing of the old session
    assert told(sent, "Environment:") == 1 and sent.count("ACME-RULE: two") == 1
    turn(claude, "once more", cleared.session_id)
    assert last_request(server).count("ACME-RULE") == 1
    entries = [e for e in hook_log(project) if e["host_session"] == cleared.session_id]
    assert [(e["event"], e["source"], e["outcome"], e["epoch"]) for e in entries][:3] == [
        ("SessionStart", "clear", "initialized", 1),
        ("SessionStart", "resume", "unchanged", 1),
        ("UserPromptSubmit", "", "unchanged", 1),
    ]


def test_automatic_compaction_starts_a_new_epoch(claude, project, server):
    # Claude Code compacts before a turn once the last answer's usage passes its window (100k at the least)
    # and the conversation, not its fixed prefix (measured from the first answer), is what fills it.
    claude.extra_env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = "100000"
    sid = turn(claude, "PROMPT-ONE")
    server.input_tokens = 120_000
    turn(claude, "PROMPT-TWO", sid)
    server.input_tokens = 10
    write_plugin(project, "two")
    turn(claude, "PROMPT-THREE", sid)
    assert sum(is_compaction(r.body) for r in server.model_requests()) == 1
    sent = last_request(server)
    assert SUMMARY in sent and "PROMPT-ONE" not in sent and "PROMPT-THREE" in sent
    assert told(sent, "Environment:") == 1 and sent.count("ACME-RULE: two") == 1  # the new epoch's baseline
    assert "ACME-RULE: one" not in sent  # the old baseline went with the summary
    # Claude Code compacts only after this turn's resume and prompt hooks ran: the resume hook's update,
    # printed before anyone knew, goes out beside the new baseline (redundant, never missing).
    assert told(sent, "ACME-RULE changed: two (was one)") == 1

    turn(claude, "PROMPT-FOUR", sid)
    after = last_request(server)
    assert after.count("ACME-RULE") == sent.count("ACME-RULE")  # an unchanged turn adds nothing

    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert [(e["event"], e["source"], e["outcome"], e["epoch"]) for e in entries] == [
        ("SessionStart", "startup", "initialized", 1),
        ("UserPromptSubmit", "", "unchanged", 1),
        ("SessionStart", "resume", "unchanged", 1),
        ("UserPromptSubmit", "", "unchanged", 1),
        ("SessionStart", "resume", "updated", 1),
        ("UserPromptSubmit", "", "unchanged", 1),
        ("SessionStart", "compact", "initialized", 2),  # after the prompt hook, before the request
        ("SessionStart", "resume", "unchanged", 2),
        ("UserPromptSubmit", "", "unchanged", 2),
    ]


def test_a_lost_update_is_sent_again(claude, project, server):
    sid = turn(claude, "first")
    write_plugin(project, "two")
    # A hook run whose output never reached Claude Code (the host crashed, say): admitted, not delivered.
    lost = {"session_id": sid, "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": "x"}
    transcript = next(iter(claude.home.glob(".claude/projects/*/*.jsonl")))
    lost["transcript_path"] = str(transcript)
    done = subprocess.run(
        [_program(), "hook", "claude-code"],
        input=json.dumps(lost),
        cwd=project,
        capture_output=True,
        text=True,
        env=claude.env(),
        timeout=60,
    )
    assert "ACME-RULE changed: two" in done.stdout
    turn(claude, "second", sid)
    sent = last_request(server)
    assert sent.count("ACME-RULE changed: two (was one)") == 1
    resumed = [e for e in hook_log(project) if e["host_session"] == sid][-2]
    assert resumed["event"] == "SessionStart" and "resent" in resumed["outcome"]


def test_agents_md_is_nias_again_with_the_switch_on(claude, project, server):
    (project / ".nia" / "project.toml").write_text("[hooks]\ndeliver_native_files = true\n")
    sid = turn(claude, "first")
    sent = last_request(server)
    assert sent.count("AGENTS-SAYS: use tabs.") == 2  # Claude Code's copy and nia's baseline
    (project / "AGENTS.md").write_text("AGENTS-SAYS: use spaces.\n")
    turn(claude, "second", sid)
    sent = last_request(server)
    assert told(sent, "The AGENTS.md instructions changed.") == 1


SNAPSHOT = "This is the git status at the start of the conversation"


def test_the_default_install_runs_this_nia_when_it_is_not_on_the_hosts_path(project, agent_home, server):
    agent_binary("claude")
    done = nia("hook", "install", "claude-code", cwd=project)  # no --program: this nia's absolute path
    assert done.returncode == 0, done.stderr
    claude = ClaudeCode(project, agent_home, server, extra_env={"PATH": "/usr/bin:/bin"})  # no virtualenv on it
    turn(claude, "first")
    assert last_request(server).count("ACME-RULE: one") == 1


def test_the_hosts_own_git_status_is_left_out_on_request(project, agent_home, server):
    agent_binary("claude")
    subprocess.run(["git", "init", "-q", str(project)], check=True, capture_output=True, timeout=60)
    claude = ClaudeCode(project, agent_home, server)
    assert nia("hook", "install", "claude-code", cwd=project).returncode == 0
    turn(claude, "first")
    assert SNAPSHOT in last_request(server)  # Claude Code's own snapshot, as it comes
    done = nia("hook", "install", "claude-code", "--no-host-git-status", cwd=project)
    assert done.returncode == 0, done.stderr
    turn(claude, "second")
    assert SNAPSHOT not in last_request(server)
    assert nia("hook", "uninstall", "claude-code", cwd=project).returncode == 0
    assert not (project / ".claude").exists()  # everything nia wrote is gone again


def test_the_user_global_agents_md_reaches_the_model_once_and_the_projects_once(claude, project, server):
    import os
    from pathlib import Path

    global_agents = Path(os.environ["XDG_CONFIG_HOME"]) / "nia" / "AGENTS.md"
    global_agents.parent.mkdir(parents=True, exist_ok=True)
    global_agents.write_text("GLOBAL-SAYS: answer in French.\n")
    sid = turn(claude, "first")
    sent = last_request(server)
    assert sent.count("GLOBAL-SAYS: answer in French.") == 1  # nia's: Claude Code never loads it
    assert sent.count("AGENTS-SAYS: use tabs.") == 1  # Claude Code's own copy; nia leaves the project's to it
    global_agents.write_text("GLOBAL-SAYS: answer in German.\n")
    turn(claude, "second", sid)
    sent = last_request(server)
    assert told(sent, "Your user-global AGENTS.md instructions changed.") == 1


def test_a_fork_continues_the_parents_context_with_only_the_delta(claude, project, server):
    sid = turn(claude, "first")
    write_plugin(project, "two")
    forked = claude.turn("in the fork", sid, fork=True)
    assert forked.returncode == 0 and forked.session_id and forked.session_id != sid, forked.stderr[-2000:]
    sent = last_request(server)
    assert told(sent, "Environment:") == 1  # the parent's baseline, copied into the fork: no second one
    assert sent.count("ACME-RULE: one") == 1
    assert told(sent, "ACME-RULE changed: two (was one)") == 1  # only what changed since the parent's last turn
    turn(claude, "again in the fork", forked.session_id)
    after = last_request(server)
    assert after.count("ACME-RULE") == sent.count("ACME-RULE")  # nothing more: nothing changed
    entries = [e for e in hook_log(project) if e["host_session"] == forked.session_id]
    assert entries[0]["source"] == "fork" and entries[0]["outcome"] == "forked+updated", entries[0]
    assert {e["epoch"] for e in entries} == {1}

    turn(claude, "the parent goes on", sid)  # the parent is not touched by its fork
    assert told(last_request(server), "ACME-RULE changed: two (was one)") == 1


@pytest.mark.both_hook_modes  # a resident watches the working tree; a hook in its own process runs git status
def test_a_real_git_repository_baseline_then_one_update_naming_the_edits_then_nothing(tmp_path, agent_home, server):
    agent_binary("claude")
    root = tmp_path / "shop"
    repo = make_git_repository(root)
    done = nia("hook", "install", "claude-code", "--program", _program(), cwd=root)
    assert done.returncode == 0, done.stderr
    repo.commit("Share the hooks")  # .claude/settings.json, as a team commits it
    claude = ClaudeCode(root, agent_home, server)

    sid = turn(claude, "first")
    sent = last_request(server)
    assert told(sent, "Environment:") == 1 and sent.count(GIT_BASELINE) == 1, sent[-3000:]
    assert f"- Branch: `main` (no upstream)\n- HEAD: `{repo.short()}` Share the hooks\n- Working tree: clean" in sent
    assert sent.count("Working tree: ") == 1  # neither Claude Code nor nia's own files (.nia/) dirtied the tree
    assert repo.git("status", "--porcelain") == ""

    turn(claude, "second", sid)  # a resident has observed the tree by now (its watch comes from its second look)
    assert last_request(server).count("Working tree: ") == 1

    edit_between_turns(root)
    turn(claude, "third", sid)
    sent = last_request(server)
    assert told(sent, GIT_EDITED) == 1
    assert sent.count("Working tree: ") == 2  # the baseline's line and the one update

    turn(claude, "fourth", sid)
    after = last_request(server)
    assert after.count("Working tree: ") == 2 and told(after, GIT_EDITED) == 1  # nothing changed: nothing added

    entries = [e for e in hook_log(root) if e["host_session"] == sid]
    assert [(e["event"], e["outcome"], e["changed"]) for e in entries] == [
        ("SessionStart", "initialized", []),
        ("UserPromptSubmit", "unchanged", []),
        ("SessionStart", "unchanged", []),
        ("UserPromptSubmit", "unchanged", []),
        ("SessionStart", "updated", ["~nia/git"]),  # the resumed session's start: the edits since the last turn
        ("UserPromptSubmit", "unchanged", []),
        ("SessionStart", "unchanged", []),
        ("UserPromptSubmit", "unchanged", []),
    ]
    assert_answered_by(entries, first_turn=2)
