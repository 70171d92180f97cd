"""nia's hooks inside the real Codex CLI (pinned), against a loopback model server.

Every assertion is on the requests Codex sent to the model. The hooks are
installed with ``nia hook install codex`` (project scope: ``.codex/hooks.json``
and the feature flag in ``.codex/config.toml``); Codex's hook trust is given
per run with ``--dangerously-bypass-hook-trust`` because it is the user's
consent, which nia never writes.

Compaction is real: with a low ``model_auto_compact_token_limit`` and the fake
model reporting a large usage, Codex summarises the conversation itself (a
request ending in its compaction prompt, answered with :data:`SUMMARY`) and
rebuilds the history without any earlier hook output.
"""

from __future__ import annotations

import json

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
from tests.real_agents.fakemodel import SUMMARY, Call, Reply, is_compaction
from tests.real_agents.harness import Codex, CodexAppServer, agent_binary, nia_program, request_text

COMPACT_AT = "model_auto_compact_token_limit = 1000\n"
"""Codex compacts once a response reports more tokens than this (codex-rs ``auto_compact_token_status``)."""

LARGE = 100_000
"""A usage figure over :data:`COMPACT_AT`."""


def installed(project, agent_home, server, top: str = "", extra: str = "") -> Codex:
    agent_binary("codex")
    agent = Codex(project, agent_home, server)
    agent.configure(extra, top)  # the fake provider only: the feature flag comes from nia's installer
    done = nia("hook", "install", "codex", "--program", nia_program(), cwd=project)
    assert done.returncode == 0, done.stderr
    return agent


@pytest.fixture
def codex(project, agent_home, server):
    return installed(project, agent_home, server)


@pytest.fixture
def compacting_codex(project, agent_home, server):
    return installed(project, agent_home, server, top=COMPACT_AT)


def conversation(server) -> list:
    """The conversation requests Codex sent (not its summarisation requests), in order."""
    return [r for r in server.model_requests() if not is_compaction(r.body)]


def developer_texts(server, request=None) -> list[str]:
    """The developer messages of a request (the last by default), where Codex puts hook context, in order."""
    requests = server.model_requests()
    assert requests, "Codex sent no request"
    items = (request or requests[-1]).body.get("input", [])
    return [
        part.get("text", "")
        for item in items
        if isinstance(item, dict) and item.get("role") == "developer"
        for part in item.get("content", [])
        if isinstance(part, dict)
    ]


def turn(codex, prompt, resume=None):
    result = codex.turn(prompt, resume)
    assert result.returncode == 0, result.stderr[-2000:] + result.stdout[-2000:]
    assert result.session_id
    return result.session_id


@pytest.mark.both_hook_modes  # the resident process answers this agent's hooks too
def test_baseline_once_unchanged_turn_silent_update_and_removal(codex, project, server):
    sid = turn(codex, "first")
    sent = request_text(server.model_requests()[-1].body)
    assert sent.count("ACME-RULE: one") == 1
    assert sent.count("AGENTS-SAYS: use tabs.") == 1  # Codex loads AGENTS.md itself; nia leaves it to Codex
    hook_texts = [t for t in developer_texts(server) if "ACME-RULE" in t or "Environment:" in t]
    assert len(hook_texts) == 1 and hook_texts[0].startswith("Environment:")

    turn(codex, "second", sid)
    assert [t for t in developer_texts(server) if "ACME-RULE" in t or "Environment:" in t] == hook_texts

    write_plugin(project, "two")
    turn(codex, "third", sid)
    sent = request_text(server.model_requests()[-1].body)
    assert sent.count("ACME-RULE changed: two (was one)") == 1

    (project / ".nia" / "plugins" / "acme.py").unlink()
    (project / ".nia" / "plugins" / "broken.py").write_text("raise RuntimeError('the broken plugin exploded')\n")
    turn(codex, "fourth", sid)  # a broken plugin never fails the agent's turn
    sent = request_text(server.model_requests()[-1].body)
    assert sent.count("ACME-RULE-REMOVED: the acme rule no longer applies.") == 1
    assert sent.count("ACME-RULE changed: two (was one)") == 1

    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert entries[0]["event"] == "SessionStart" and entries[0]["outcome"] == "initialized"
    assert [e["outcome"] for e in entries[1:4]] == ["unchanged", "unchanged", "unchanged"]
    assert any("exploded" in w for w in entries[-2]["warnings"] + entries[-1]["warnings"])
    assert {e["epoch"] for e in entries} == {1}
    assert_answered_by(entries, first_turn=2)  # with a resident: every later turn's hooks by it


@pytest.mark.both_hook_modes  # a resident watches the working tree; a hook in its own process runs git status
def test_a_real_git_repository_baseline_then_one_update_naming_the_edits_then_nothing(tmp_path, agent_home, server):
    root = tmp_path / "shop"
    repo = make_git_repository(root)
    codex = installed(root, agent_home, server)
    repo.commit("Share the hooks")  # .codex/hooks.json and config.toml, as a team commits them

    sid = turn(codex, "first")
    baseline = [t for t in developer_texts(server) if GIT_BASELINE in t]
    assert len(baseline) == 1 and baseline[0].startswith("Environment:")
    assert (
        f"- Branch: `main` (no upstream)\n- HEAD: `{repo.short()}` Share the hooks\n- Working tree: clean"
        in baseline[0]
    )
    assert request_text(server.model_requests()[-1].body).count("Working tree: ") == 1
    assert repo.git("status", "--porcelain") == ""  # neither Codex nor nia's own files (.nia/) dirtied the tree

    turn(codex, "second", sid)  # a resident has observed the tree by now (its watch comes from its second look)
    assert [t for t in developer_texts(server) if "Working tree: " in t] == baseline

    edit_between_turns(root)
    turn(codex, "third", sid)
    assert [t for t in developer_texts(server) if "Working tree: " in t] == [baseline[0], GIT_EDITED]
    assert request_text(server.model_requests()[-1].body).count("Working tree: ") == 2

    turn(codex, "fourth", sid)
    assert [t for t in developer_texts(server) if "Working tree: " in t] == [baseline[0], GIT_EDITED]

    entries = [e for e in hook_log(root) if e["host_session"] == sid]
    assert [(e["event"], e["outcome"], e["changed"]) for e in entries] == [
        ("SessionStart", "initialized", []),
        ("UserPromptSubmit", "unchanged", []),
        ("SessionStart", "unchanged", []),
        ("UserPromptSubmit", "unchanged", []),
        ("SessionStart", "updated", ["~nia/git"]),  # `exec resume`'s start: the edits since the last turn
        ("UserPromptSubmit", "unchanged", []),
        ("SessionStart", "unchanged", []),
        ("UserPromptSubmit", "unchanged", []),
    ]
    assert_answered_by(entries, first_turn=2)


@pytest.mark.both_hook_modes  # the edit is made by the agent's own tool, inside its sandbox, during a turn
def test_an_edit_by_codexs_own_command_reaches_the_model_at_the_next_turn(tmp_path, agent_home, server):
    root = tmp_path / "shop"
    repo = make_git_repository(root)
    codex = installed(root, agent_home, server)
    repo.commit("Share the hooks")
    sid = turn(codex, "first")
    baseline = [t for t in developer_texts(server) if "Working tree: " in t]
    turn(codex, "second", sid)  # a resident has observed the tree by now (its watch comes from its second look)

    edit = "printf 'print(1)\\n' >> app.py && echo a new file > notes.txt"
    server.script = [Reply(call=Call("exec_command", json.dumps({"cmd": edit}))), Reply("DONE")]
    before = len(server.model_requests())
    turn(codex, "edit app.py and add notes.txt", sid)
    assert repo.git("status", "--porcelain") == " M app.py\n?? notes.txt\n"  # Codex ran the command
    during = server.model_requests()[before:]
    assert len(during) == 2 and "exec_command" in json.dumps(during[-1].body["input"])  # the call, its output
    assert all(request_text(r.body).count("Working tree: ") == 1 for r in during)  # the hooks ran before it

    turn(codex, "next", sid)
    assert [t for t in developer_texts(server) if "Working tree: " in t] == [*baseline, GIT_EDITED]

    entries = [e for e in hook_log(root) if e["host_session"] == sid]
    assert [(e["event"], e["outcome"], e["changed"]) for e in entries][4:] == [
        ("SessionStart", "unchanged", []),
        ("UserPromptSubmit", "unchanged", []),
        ("SessionStart", "updated", ["~nia/git"]),
        ("UserPromptSubmit", "unchanged", []),
    ]
    assert_answered_by(entries, first_turn=2)


def test_agents_md_edit_is_one_nia_update_with_the_switch_on(codex, project, server):
    (project / ".nia" / "project.toml").write_text("[hooks.codex]\ndeliver_native_files = true\n")
    sid = turn(codex, "first")
    assert any("AGENTS-SAYS: use tabs." in t for t in developer_texts(server))  # nia's baseline carries it now
    (project / "AGENTS.md").write_text("AGENTS-SAYS: use spaces.\n")
    turn(codex, "second", sid)
    updates = [t for t in developer_texts(server) if t.startswith("The AGENTS.md instructions changed.")]
    assert len(updates) == 1 and "AGENTS-SAYS: use spaces." in updates[0]


def nia_texts(server, request=None) -> list[str]:
    """What nia's hooks told the model in a request: its developer messages that are nia's."""
    return [t for t in developer_texts(server, request) if "ACME-RULE" in t or "Environment:" in t]


def test_auto_compaction_before_a_resumed_turn_starts_a_new_epoch(compacting_codex, project, server):
    codex = compacting_codex
    server.script = [Reply(input_tokens=LARGE)]  # the first turn's answer fills the context window
    sid = turn(codex, "PROMPT-ONE")
    assert [t.startswith("Environment:") and "ACME-RULE: one" in t for t in nia_texts(server)] == [True]

    write_plugin(project, "two")  # changed before the turn that compacts: the new baseline says it
    turn(codex, "second", sid)
    summaries = [r for r in server.model_requests() if is_compaction(r.body)]
    assert len(summaries) == 1 and "ACME-RULE: one" in request_text(summaries[0].body)  # what was summarised
    after = conversation(server)[-1]
    sent = request_text(after.body)
    assert SUMMARY in sent and "PROMPT-ONE" in sent  # the compacted history: Codex's summary, not the old hook output
    assert "ACME-RULE: one" not in sent
    told = nia_texts(server, after)
    assert len(told) == 1 and told[0].startswith("Environment:") and "ACME-RULE: two" in told[0]
    assert "ACME-RULE changed" not in sent  # no update against a baseline the model no longer has

    turn(codex, "third", sid)  # nothing changed since: nia adds nothing
    assert nia_texts(server) == told
    assert len([r for r in server.model_requests() if is_compaction(r.body)]) == 1

    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert [(e["event"], e["source"], e["outcome"], e["epoch"]) for e in entries] == [
        ("SessionStart", "startup", "initialized", 1),
        ("UserPromptSubmit", "", "unchanged", 1),
        # Codex 0.169.0 compacts first, then runs SessionStart resume and compact, in that order
        ("SessionStart", "resume", "initialized", 2),
        ("SessionStart", "compact", "unchanged", 2),
        ("UserPromptSubmit", "", "unchanged", 2),
        ("SessionStart", "resume", "unchanged", 2),
        ("UserPromptSubmit", "", "unchanged", 2),
    ]


def test_auto_compaction_in_the_middle_of_a_turn_starts_a_new_epoch(compacting_codex, project, server):
    codex = compacting_codex
    # The model calls a tool and its answer fills the context window: Codex compacts before the follow-up.
    server.script = [Reply(call=Call("get_goal"), input_tokens=LARGE), Reply("DONE")]
    sid = turn(codex, "PROMPT-ONE")
    first, follow_up = conversation(server)
    assert len(nia_texts(server, first)) == 1
    assert any(is_compaction(r.body) for r in server.model_requests())
    sent = request_text(follow_up.body)
    assert SUMMARY in sent
    told = nia_texts(server, follow_up)
    assert len(told) == 1 and told[0].startswith("Environment:") and "ACME-RULE: one" in told[0]

    turn(codex, "second", sid)
    assert nia_texts(server) == told  # the new epoch's baseline once, nothing added

    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert [(e["event"], e["source"], e["outcome"], e["epoch"]) for e in entries] == [
        ("SessionStart", "startup", "initialized", 1),
        ("UserPromptSubmit", "", "unchanged", 1),
        ("SessionStart", "compact", "initialized", 2),  # mid-turn, right after the compaction
        ("SessionStart", "resume", "unchanged", 2),
        ("UserPromptSubmit", "", "unchanged", 2),
    ]


def test_clear_and_compact_in_a_live_session_start_new_epochs(project, agent_home, server):
    # The project trusted, as `codex exec --trust` records it: Codex reads a project's .codex/ only then.
    codex = installed(project, agent_home, server, extra=f'[projects."{project}"]\ntrust_level = "trusted"\n')
    with CodexAppServer(codex) as app:
        thread = app.start_thread()
        app.turn(thread, "PROMPT-ONE")
        assert len(nia_texts(server)) == 1

        app.compact(thread)  # /compact
        app.turn(thread, "after compaction")
        sent = request_text(conversation(server)[-1].body)
        assert SUMMARY in sent and "ACME-RULE: one" in sent
        told = nia_texts(server)
        assert len(told) == 1 and told[0].startswith("Environment:")

        app.turn(thread, "again")
        assert nia_texts(server) == told

        cleared = app.start_thread("clear")  # /clear: a new thread, nothing of the old conversation
        app.turn(cleared, "after clear")
        sent = request_text(conversation(server)[-1].body)
        assert "PROMPT-ONE" not in sent and SUMMARY not in sent
        told = nia_texts(server)
        assert len(told) == 1 and told[0].startswith("Environment:") and "ACME-RULE: one" in told[0]

        write_plugin(project, "two")
        app.turn(cleared, "edited")
        assert request_text(conversation(server)[-1].body).count("ACME-RULE changed: two (was one)") == 1

    entries = [e for e in hook_log(project) if e["host_session"] == thread]
    compacted = [e for e in entries if e["source"] == "compact"]
    assert [(e["outcome"], e["epoch"]) for e in compacted] == [("initialized", 2)]
    assert entries[-1]["epoch"] == 2
    entries = [e for e in hook_log(project) if e["host_session"] == cleared]
    assert [(e["event"], e["source"], e["outcome"], e["epoch"]) for e in entries][:2] == [
        ("SessionStart", "clear", "initialized", 1),
        ("UserPromptSubmit", "", "unchanged", 1),
    ]


def test_the_user_global_agents_md_reaches_the_model_once_and_the_projects_once(codex, project, server):
    import os
    from pathlib import Path

    global_agents = Path(os.environ["XDG_CONFIG_HOME"]) / "nia" / "AGENTS.md"
    global_agents.parent.mkdir(parents=True, exist_ok=True)
    global_agents.write_text("GLOBAL-SAYS: answer in French.\n")
    turn = codex.turn("first")
    assert turn.returncode == 0, turn.stderr[-2000:]
    sent = request_text(server.model_requests()[-1].body)
    assert sent.count("GLOBAL-SAYS: answer in French.") == 1  # nia's: Codex never loads it
    assert sent.count("AGENTS-SAYS: use tabs.") == 1  # Codex's own copy; nia leaves the project's to it


def test_a_fork_continues_the_parents_context_with_only_the_delta(codex, project, server):
    first = codex.turn("first")
    assert first.returncode == 0 and first.session_id, first.stderr[-2000:]
    write_plugin(project, "two")
    forked = codex.turn("in the fork", first.session_id, fork=True)
    assert forked.returncode == 0 and forked.session_id and forked.session_id != first.session_id
    texts = developer_texts(server)
    assert sum(t.startswith("Environment:") for t in texts) == 1  # the parent's baseline, no second one
    assert sum("ACME-RULE changed: two (was one)" in t for t in texts) == 1  # the delta only
    again = codex.turn("again in the fork", forked.session_id)
    assert again.returncode == 0
    assert developer_texts(server) == texts  # nothing changed, nothing added; nothing lost or re-sent
    entries = [e for e in hook_log(project) if e["host_session"] == forked.session_id]
    assert entries[0]["source"] == "fork" and entries[0]["outcome"] == "forked+updated", entries[0]
    assert {e["epoch"] for e in entries} == {1}


def test_a_fork_with_nothing_new_keeps_the_parents_context_turn_after_turn(codex, project, server):
    first = codex.turn("first")
    forked = codex.turn("in the fork", first.session_id, fork=True)
    assert forked.returncode == 0 and forked.session_id
    texts = developer_texts(server)
    assert sum(t.startswith("Environment:") for t in texts) == 1
    # Codex does not copy the parent's lines into the fork's rollout: nia reads the parent's rollout too,
    # so the copied baseline is found there and no new epoch starts.
    assert codex.turn("again in the fork", forked.session_id).returncode == 0
    assert sum(t.startswith("Environment:") for t in developer_texts(server)) == 1
    entries = [e for e in hook_log(project) if e["host_session"] == forked.session_id]
    assert [e["outcome"] for e in entries] == ["forked+unchanged", "unchanged", "unchanged", "unchanged"]
