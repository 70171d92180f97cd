"""nia's hook inside the real Qwen Code (pinned), against a loopback OpenAI chat-completions server.

Every assertion is on the requests Qwen Code sent to the model. The hook is
installed with ``nia hook install qwen-code`` (``.qwen/settings.json``, event
``UserPromptSubmit``); Qwen runs a project's hooks without a trust step by
default. It puts a hook's text in a ``<qwen:user-prompt-submit-context>`` part
after the prompt, with ``<`` and ``>`` escaped, and loads AGENTS.md itself.

Compression is real: ``qwen -p /compress`` summarises the conversation (the
fake model's answer) once it is large enough to gain from it, and records the
compressed history in its session file.
"""

from __future__ import annotations

import json
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
from tests.real_agents.harness import QwenCode, agent_binary, nia_program, request_text

OPEN, CLOSE = "<qwen:user-prompt-submit-context>\n", "\n</qwen:user-prompt-submit-context>"


@pytest.fixture
def qwen(project, agent_home, server):
    agent_binary("qwen")
    (project / "QWEN.md").write_text("QWEN-SAYS: be brief.\n")
    done = nia("hook", "install", "qwen-code", "--program", nia_program(), cwd=project)
    assert done.returncode == 0, done.stderr
    return QwenCode(project, agent_home, server)


def turns(server) -> list[dict]:
    """The bodies of Qwen's conversation requests (not its summarisation requests), in order."""
    return [r.body for r in server.model_requests() if not is_compaction(r.body)]


def hook_parts(body: dict) -> list[str]:
    """The hook parts of a request, unwrapped: what the hooks told the model, oldest first."""
    found = []
    for message in body.get("messages", []):
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"text": content}]
        for part in parts:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str) and text.startswith(OPEN) and text.endswith(CLOSE):
                found.append(text[len(OPEN) : -len(CLOSE)])
    return found


def turn(agent, prompt, resume=None):
    result = agent.turn(prompt, resume)
    assert result.returncode == 0, result.stderr[-2000:] + result.stdout[-2000:]
    assert result.session_id
    return result.session_id


def log_of(project, sid) -> list[tuple]:
    return [(e["event"], e["outcome"], e["epoch"]) for e in hook_log(project) if e["host_session"] == sid]


@pytest.mark.both_hook_modes  # the resident process answers this agent's hooks too
def test_baseline_once_then_nothing_then_an_update_then_a_removal(qwen, project, server):
    write_plugin(project, "one <b>&</b>")
    sid = waited_turn(turn, qwen, "first")
    first = turns(server)[-1]
    told = hook_parts(first)
    assert len(told) == 1 and told[0].startswith("Environment:")
    assert escape_angles("ACME-RULE: one <b>&</b>") in told[0]  # Qwen escapes < and >, nothing else
    sent = request_text(first)
    assert "<b>" not in sent
    assert sent.count("AGENTS-SAYS: use tabs.") == 1 and "AGENTS-SAYS" not in told[0]  # Qwen loads AGENTS.md
    assert sent.count("QWEN-SAYS: be brief.") == 1

    waited_turn(turn, qwen, "second", sid)
    assert hook_parts(turns(server)[-1]) == told  # nothing added; the stored part re-sent as it was

    write_plugin(project, "two")
    waited_turn(turn, qwen, "third", sid)
    parts = hook_parts(turns(server)[-1])
    assert parts[:-1] == told and parts[-1] == escape_angles("ACME-RULE changed: two (was one <b>&</b>)")

    (project / ".nia" / "plugins" / "acme.py").unlink()
    waited_turn(turn, qwen, "fourth", sid)
    parts = hook_parts(turns(server)[-1])
    assert len(parts) == 3 and parts[-1] == "ACME-RULE-REMOVED: the acme rule no longer applies."
    assert request_text(turns(server)[-1]).count("AGENTS-SAYS: use tabs.") == 1

    assert log_of(project, sid) == [
        ("UserPromptSubmit", "initialized", 1),
        ("UserPromptSubmit", "unchanged", 1),  # the escaped baseline in Qwen's session counts as delivered
        ("UserPromptSubmit", "updated", 1),
        ("UserPromptSubmit", "updated", 1),
    ]
    assert_answered_by([e for e in hook_log(project) if e["host_session"] == sid], first_turn=1)


def test_compress_starts_a_new_epoch(qwen, project, server):
    sid = turn(qwen, "PROMPT-ONE")
    write_plugin(project, "two")
    server.input_tokens = 50_000  # a conversation large enough that a summary is worth it to Qwen
    turn(qwen, "PROMPT-TWO", sid)
    server.input_tokens = 10
    turn(qwen, "/compress", sid)  # -p runs the slash command: a summarisation request, no turn, no hook
    assert any(is_compaction(r.body) for r in server.model_requests())

    turn(qwen, "PROMPT-FOUR", sid)
    after = turns(server)[-1]
    sent = request_text(after)
    assert SUMMARY in sent and "PROMPT-ONE" not in sent
    parts = hook_parts(after)
    assert len(parts) == 1 and parts[0].startswith("Environment:") and "ACME-RULE: two" in parts[0]
    turn(qwen, "PROMPT-FIVE", sid)
    assert hook_parts(turns(server)[-1]) == parts  # the new epoch's baseline once

    assert log_of(project, sid) == [
        ("UserPromptSubmit", "initialized", 1),
        ("UserPromptSubmit", "updated", 1),
        ("UserPromptSubmit", "initialized", 2),  # Qwen's chat_compression record kept none of nia's texts
        ("UserPromptSubmit", "unchanged", 2),
    ]


def test_a_lost_update_is_sent_again(qwen, project, server):
    sid = turn(qwen, "first")
    write_plugin(project, "two")
    # A hook run whose output never reached Qwen (it was killed, say): admitted, never delivered.
    transcript = qwen.transcripts()[-1]
    lost = {"session_id": sid, "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": "x"}
    lost["transcript_path"] = str(transcript)
    done = subprocess.run(
        [nia_program(), "hook", "qwen-code"],
        input=json.dumps(lost),
        cwd=project,
        capture_output=True,
        text=True,
        env=qwen.env(),
        timeout=60,
    )
    assert "ACME-RULE changed: two" in done.stdout
    turn(qwen, "second", sid)
    parts = hook_parts(turns(server)[-1])
    assert parts[-1] == "ACME-RULE changed: two (was one)" and len(parts) == 2
    assert [e["outcome"] for e in hook_log(project) if e["host_session"] == sid][-1] == "unchanged+resent"


def test_over_the_limit_the_model_gets_the_head_and_reads_the_rest(qwen, project, server):
    from nia_core.agents.qwen_code import LIMIT
    from tests.real_agents.test_gemini import long_text

    value, end = long_text(LIMIT)
    write_plugin(project, value)
    sid = turn(qwen, "first")
    (told,) = hook_parts(turns(server)[-1])
    spill = next((project / ".nia" / "hook-output").glob("*.md"))
    assert told.endswith(f"The complete text is in {spill} - read that file before relying on what is above.]")
    assert end not in told and end in spill.read_text()

    # The model reads it: Qwen's read_file gives a long file in pages, so the model asks for its end.
    tail = {"file_path": str(spill), "offset": len(spill.read_text().splitlines()) - 5, "limit": 10}
    server.script = [Reply(call=Call("read_file", json.dumps(tail)))]
    turn(qwen, "second", sid)
    follow_up = turns(server)[-1]
    read = [m for m in follow_up["messages"] if m.get("role") == "tool"]
    assert end in json.dumps(read)  # Qwen reads the project's git-ignored spill file
    assert hook_parts(follow_up) == [told]  # the printed head counts as delivered: nothing again
    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert entries[0]["full_text"] == str(spill) and entries[1]["outcome"] == "unchanged"


def test_another_hook_of_the_same_event_does_not_hide_nias_text(qwen, project, server):
    # The user's own UserPromptSubmit hook: Qwen joins both texts with a newline into one part.
    other = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "OTHER-HOOK <x>"}}
    command = f"printf '%s' '{json.dumps(other)}'"
    qwen.settings = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}}
    sid = turn(qwen, "first")
    (joined,) = hook_parts(turns(server)[-1])
    assert "OTHER-HOOK &lt;x&gt;" in joined and "ACME-RULE: one" in joined
    turn(qwen, "second", sid)
    write_plugin(project, "two")
    turn(qwen, "third", sid)
    assert [outcome for _, outcome, _ in log_of(project, sid)] == ["initialized", "unchanged", "updated"]
    sent = request_text(turns(server)[-1])
    assert sent.count("ACME-RULE: one") == 1 and sent.count("ACME-RULE changed: two (was one)") == 1


def test_agents_md_is_nias_when_qwens_settings_leave_it_out(qwen, project, server):
    qwen.settings = {"context": {"fileName": "QWEN.md"}}
    turn(qwen, "first")
    first = turns(server)[-1]
    sent = request_text(first)
    assert sent.count("AGENTS-SAYS: use tabs.") == 1 and sent.count("QWEN-SAYS: be brief.") == 1
    (told,) = hook_parts(first)
    assert "AGENTS-SAYS: use tabs." in told  # Qwen does not load it now: nia's baseline says it


@pytest.mark.both_hook_modes  # a resident watches the working tree; a hook in its own process runs git status
def test_a_real_git_repository_baseline_then_one_update_naming_the_edits_then_nothing(tmp_path, agent_home, server):
    agent_binary("qwen")
    root = tmp_path / "shop"
    repo = make_git_repository(root)
    done = nia("hook", "install", "qwen-code", "--program", nia_program(), cwd=root)
    assert done.returncode == 0, done.stderr
    repo.commit("Share the hooks")  # the hook's settings, as a team commits them
    agent = QwenCode(root, agent_home, server)

    sid = waited_turn(turn, agent, "first")
    told = hook_parts(turns(server)[-1])
    assert len(told) == 1 and told[0].startswith("Environment:") and told[0].count(GIT_BASELINE) == 1
    assert f"- Branch: `main` (no upstream)\n- HEAD: `{repo.short()}` Share the hooks\n- Working tree: clean" in told[0]
    assert repo.git("status", "--porcelain") == ""  # neither Qwen Code nor nia's own files (.nia/) dirtied the tree

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
        ("UserPromptSubmit", "initialized", []),
        ("UserPromptSubmit", "unchanged", []),
        ("UserPromptSubmit", "updated", ["~nia/git"]),
        ("UserPromptSubmit", "unchanged", []),
    ]
    assert_answered_by(entries, first_turn=1)
