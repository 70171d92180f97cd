"""nia's hook inside the real Gemini CLI (pinned), against a loopback Gemini API server.

Every assertion is on the requests Gemini CLI sent to the model. The hook is
installed with ``nia hook install gemini`` (``.gemini/settings.json``, event
``BeforeAgent``); Gemini runs a project's hooks only in a trusted folder, and
the harness trusts it per run through ``GEMINI_CLI_TRUST_WORKSPACE=true``
(the user's consent, which nia never records). Gemini puts a hook's text in a
``<hook_context>`` part after the prompt with ``<`` and ``>`` escaped.

Compression is real: with a low ``model.compressionThreshold`` and the fake
model reporting a large usage on a tool call, Gemini summarises the
conversation before the tool's follow-up and keeps only its newest turns.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from nia_core.agents.contract import escape_angles
from tests.real_agents.conftest import (
    GIT_BASELINE,
    GIT_EDITED,
    assert_answered_by,
    edit_between_turns,
    hook_log,
    make_git_repository,
    nia,
    waited_turn,
    write_plugin,
)
from tests.real_agents.fakemodel import SUMMARY, Call, Reply, is_compaction
from tests.real_agents.harness import GeminiCli, agent_binary, nia_program, request_text

OPEN, CLOSE = "<hook_context>", "</hook_context>"


@pytest.fixture
def gemini(project, agent_home, server):
    agent_binary("gemini")
    (project / "GEMINI.md").write_text("GEMINI-SAYS: be brief.\n")
    done = nia("hook", "install", "gemini", "--program", nia_program(), cwd=project)
    assert done.returncode == 0, done.stderr
    return GeminiCli(project, agent_home, server)


def turns(server) -> list[dict]:
    """The bodies of Gemini's conversation requests (not its router or summary calls), in order."""
    return [r.body for r in server.model_requests() if not is_compaction(r.body)]


def hook_parts(body: dict) -> list[str]:
    """The ``<hook_context>`` parts of a request, unwrapped: what the hooks told the model, oldest first."""
    return [
        part["text"][len(OPEN) : -len(CLOSE)]
        for content in body.get("contents", [])
        for part in content.get("parts", [])
        if isinstance(part.get("text"), str) and part["text"].startswith(OPEN) and part["text"].endswith(CLOSE)
    ]


def turn(agent, prompt, resume=None):
    result = agent.turn(prompt, resume)
    assert result.returncode == 0, result.stderr[-2000:] + result.stdout[-2000:]
    assert result.session_id
    return result.session_id


def log_of(project, sid) -> list[tuple]:
    return [(e["event"], e["outcome"], e["epoch"]) for e in hook_log(project) if e["host_session"] == sid]


@pytest.mark.both_hook_modes  # the resident process answers this agent's hooks too
def test_baseline_once_then_nothing_then_an_update_then_a_removal(gemini, project, server):
    write_plugin(project, "one <b>&</b>")
    sid = waited_turn(turn, gemini, "first")
    first = turns(server)[-1]
    told = hook_parts(first)
    assert len(told) == 1 and told[0].startswith("Environment:")
    assert escape_angles("ACME-RULE: one <b>&</b>") in told[0]  # Gemini escapes < and >, nothing else
    sent = request_text(first)
    assert "<b>" not in sent
    assert sent.count("AGENTS-SAYS: use tabs.") == 1  # Gemini does not load AGENTS.md: nia's baseline carries it
    assert "AGENTS-SAYS" in told[0]
    assert sent.count("GEMINI-SAYS: be brief.") == 1  # Gemini's own file, left to Gemini

    waited_turn(turn, gemini, "second", sid)
    second = turns(server)[-1]
    assert hook_parts(second) == told  # nothing added, the baseline re-sent as it was stored
    assert second["contents"][1 : len(first["contents"])] == first["contents"][1:]  # the cacheable prefix holds

    write_plugin(project, "two")
    waited_turn(turn, gemini, "third", sid)
    parts = hook_parts(turns(server)[-1])
    assert parts[:-1] == told and parts[-1] == escape_angles("ACME-RULE changed: two (was one <b>&</b>)")

    (project / ".nia" / "plugins" / "acme.py").unlink()
    waited_turn(turn, gemini, "fourth", sid)
    parts = hook_parts(turns(server)[-1])
    assert len(parts) == 3 and parts[-1] == "ACME-RULE-REMOVED: the acme rule no longer applies."

    assert log_of(project, sid) == [
        ("BeforeAgent", "initialized", 1),
        ("BeforeAgent", "unchanged", 1),  # the escaped baseline in Gemini's session counts as delivered
        ("BeforeAgent", "updated", 1),
        ("BeforeAgent", "updated", 1),
    ]
    assert_answered_by([e for e in hook_log(project) if e["host_session"] == sid], first_turn=1)


def test_a_compression_that_keeps_an_update_but_not_the_baseline_starts_a_new_epoch(project, agent_home, server):
    agent_binary("gemini")
    assert nia("hook", "install", "gemini", "--program", nia_program(), cwd=project).returncode == 0
    gemini = GeminiCli(project, agent_home, server, settings={"model": {"compressionThreshold": 0.1}})
    sid = turn(gemini, "PROMPT-ONE")
    write_plugin(project, "two")
    turn(gemini, "PROMPT-TWO", sid)
    # A tool call whose answer reports a full window: Gemini compresses before the tool's follow-up, keeping
    # the newest 30% of the conversation (here the update) behind its summary, and no hook runs then.
    server.script = [Reply(call=Call("read_file", json.dumps({"file_path": "AGENTS.md"})), input_tokens=200_000)]
    turn(gemini, "PROMPT-THREE", sid)
    follow_up = turns(server)[-1]
    assert SUMMARY in request_text(follow_up)
    assert hook_parts(follow_up) == ["ACME-RULE changed: two (was one)"]  # kept; the baseline went

    turn(gemini, "PROMPT-FOUR", sid)
    parts = hook_parts(turns(server)[-1])
    assert len(parts) == 2 and parts[-1].startswith("Environment:") and "ACME-RULE: two" in parts[-1]
    turn(gemini, "PROMPT-FIVE", sid)
    assert hook_parts(turns(server)[-1]) == parts  # the new epoch's baseline once

    assert log_of(project, sid) == [
        ("BeforeAgent", "initialized", 1),
        ("BeforeAgent", "updated", 1),
        ("BeforeAgent", "unchanged", 1),
        ("BeforeAgent", "initialized", 2),  # Gemini's history snapshot holds the update but no baseline
        ("BeforeAgent", "unchanged", 2),
    ]


def test_a_lost_update_is_sent_again(gemini, project, server):
    sid = turn(gemini, "first")
    write_plugin(project, "two")
    # A hook run whose output never reached Gemini (it was killed, say): admitted, never delivered.
    transcript = gemini.transcripts()[-1]
    lost = {"session_id": sid, "cwd": str(project), "hook_event_name": "BeforeAgent", "prompt": "x"}
    lost["transcript_path"] = str(transcript)
    done = subprocess.run(
        [nia_program(), "hook", "gemini"],
        input=json.dumps(lost),
        cwd=project,
        capture_output=True,
        text=True,
        env=gemini.env(),
        timeout=60,
    )
    assert "ACME-RULE changed: two" in done.stdout
    turn(gemini, "second", sid)
    parts = hook_parts(turns(server)[-1])
    assert parts[-1] == "ACME-RULE changed: two (was one)" and len(parts) == 2
    assert [e["outcome"] for e in hook_log(project) if e["host_session"] == sid][-1] == "unchanged+resent"


def long_text(limit: int) -> tuple[str, str]:
    """A plugin value over ``limit`` tokens (lines of 100 characters, about 1.2 times it), and how it ends."""
    lines = [f"line {i:05d} " + "x" * 89 for i in range(limit * 4 * 6 // 5 // 100)]
    return "\\n".join([*lines, "END-OF-THE-TEXT"]), "END-OF-THE-TEXT"  # the plugin's string literal: \n escapes


def test_over_the_limit_the_model_gets_the_head_and_reads_the_rest_in_geminis_folder(
    gemini, project, server, agent_home
):
    from nia_core.agents.gemini import LIMIT

    value, end = long_text(LIMIT)
    write_plugin(project, value)
    sid = turn(gemini, "first")
    (told,) = hook_parts(turns(server)[-1])
    # Gemini's read_file refuses the project's git-ignored .nia/hook-output/, so the rest goes to its own folder.
    (spill,) = agent_home.glob(".gemini/tmp/*/nia-hook-output/*.md")
    assert told.endswith(f"The complete text is in {spill} - read that file before relying on what is above.]")
    assert end not in told and end in spill.read_text()
    assert not (project / ".nia" / "hook-output").exists()

    server.script = [Reply(call=Call("read_file", json.dumps({"file_path": str(spill)})))]  # the model does so
    turn(gemini, "second", sid)
    follow_up = turns(server)[-1]
    read = [p["functionResponse"] for c in follow_up["contents"] for p in c["parts"] if "functionResponse" in p]
    assert end in json.dumps(read)
    assert hook_parts(follow_up) == [told]  # the printed head counts as delivered: nothing again
    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert entries[0]["full_text"] == str(spill) and entries[1]["outcome"] == "unchanged"


def test_another_hook_of_the_same_event_does_not_hide_nias_text(gemini, project, server, agent_home):
    # The user's own BeforeAgent hook: Gemini joins both texts with a newline into one part.
    (agent_home / ".gemini").mkdir(exist_ok=True)
    other = {"hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": "OTHER-HOOK <x>"}}
    command = f"printf '%s' '{json.dumps(other)}'"
    hook = {"hooks": {"BeforeAgent": [{"hooks": [{"name": "other", "type": "command", "command": command}]}]}}
    gemini.settings = hook
    sid = turn(gemini, "first")
    (joined,) = hook_parts(turns(server)[-1])
    assert "OTHER-HOOK &lt;x&gt;" in joined and "ACME-RULE: one" in joined
    turn(gemini, "second", sid)
    write_plugin(project, "two")
    turn(gemini, "third", sid)
    assert [outcome for _, outcome, _ in log_of(project, sid)] == ["initialized", "unchanged", "updated"]
    sent = request_text(turns(server)[-1])
    assert sent.count("ACME-RULE: one") == 1 and sent.count("ACME-RULE changed: two (was one)") == 1


def test_trust_is_the_users_and_status_says_whether_gemini_gives_it(project, agent_home, server):
    agent_binary("gemini")
    done = nia("hook", "install", "gemini", "--program", nia_program(), cwd=project)
    assert done.returncode == 0 and "trust the folder" in done.stdout
    env = {**os.environ, "HOME": str(agent_home)}
    env.pop("GEMINI_CLI_TRUST_WORKSPACE", None)
    status = subprocess.run([nia_program(), "hook", "status"], cwd=project, env=env, capture_output=True, text=True)
    assert "folder NOT trusted" in status.stdout

    untrusted = GeminiCli(project, agent_home, server, trusted=False)
    refused = untrusted.turn("first")
    assert refused.returncode == 55 and not server.model_requests()  # Gemini 0.61.0 refuses an untrusted folder
    record = agent_home / ".gemini" / "trustedFolders.json"
    assert not record.exists()  # nia never records the user's consent

    record.write_text(json.dumps({str(project): "TRUST_FOLDER"}))  # what trusting the folder in gemini writes
    status = subprocess.run([nia_program(), "hook", "status"], cwd=project, env=env, capture_output=True, text=True)
    assert "folder trusted" in status.stdout
    turn(untrusted, "first")
    assert "ACME-RULE: one" in hook_parts(turns(server)[-1])[0]


def test_agents_md_is_left_to_gemini_when_its_settings_load_it(gemini, project, server):
    gemini.settings = {"context": {"fileName": ["AGENTS.md", "GEMINI.md"]}}  # Gemini's documented way to load it
    turn(gemini, "first")
    first = turns(server)[-1]
    sent = request_text(first)
    assert sent.count("AGENTS-SAYS: use tabs.") == 1  # Gemini's own copy, in its first user turn
    (told,) = hook_parts(first)
    assert "AGENTS-SAYS" not in told and "ACME-RULE: one" in told


@pytest.mark.both_hook_modes  # a resident watches the working tree; a hook in its own process runs git status
def test_a_real_git_repository_baseline_then_one_update_naming_the_edits_then_nothing(tmp_path, agent_home, server):
    agent_binary("gemini")
    root = tmp_path / "shop"
    repo = make_git_repository(root)
    done = nia("hook", "install", "gemini", "--program", nia_program(), cwd=root)
    assert done.returncode == 0, done.stderr
    repo.commit("Share the hooks")  # the hook's settings, as a team commits them
    agent = GeminiCli(root, agent_home, server)

    sid = waited_turn(turn, agent, "first")
    told = hook_parts(turns(server)[-1])
    assert len(told) == 1 and told[0].startswith("Environment:") and told[0].count(GIT_BASELINE) == 1
    assert f"- Branch: `main` (no upstream)\n- HEAD: `{repo.short()}` Share the hooks\n- Working tree: clean" in told[0]
    assert repo.git("status", "--porcelain") == ""  # neither Gemini CLI nor nia's own files (.nia/) dirtied the tree

    waited_turn(
        turn, agent, "second", sid
    )  # a resident has observed the tree by now (its watch comes from its second look)
    assert hook_parts(turns(server)[-1]) == told

    edit_between_turns(root)
    waited_turn(turn, agent, "third", sid)
    assert hook_parts(turns(server)[-1]) == [*told, GIT_EDITED]
    assert request_text(turns(server)[-1]).count("Working tree: ") == 2

    waited_turn(turn, agent, "fourth", sid)
    assert hook_parts(turns(server)[-1]) == [*told, GIT_EDITED]  # nothing changed: nothing added

    entries = [e for e in hook_log(root) if e["host_session"] == sid]
    assert [(e["event"], e["outcome"], e["changed"]) for e in entries] == [
        ("BeforeAgent", "initialized", []),
        ("BeforeAgent", "unchanged", []),
        ("BeforeAgent", "updated", ["~nia/git"]),
        ("BeforeAgent", "unchanged", []),
    ]
    assert_answered_by(entries, first_turn=1)
