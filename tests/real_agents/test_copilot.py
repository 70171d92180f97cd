"""nia's hook inside the real GitHub Copilot CLI (pinned), against a loopback model server.

Every assertion is on the requests Copilot sent to the model. The hook is
installed with ``nia hook install copilot`` (project scope:
``.github/hooks/nia.json``); the folder is trusted the way Copilot records the
user's trust (``trustedFolders`` in ``~/.copilot/config.json``), which the test
writes in the user's place and nia never does. Copilot runs offline (BYOK,
chat completions); ``/compact`` works in ``-p`` mode.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nia_core.agents.output_limit import FOOTER
from tests.real_agents.conftest import hook_log, nia, write_plugin
from tests.real_agents.fakemodel import SUMMARY, Call, Reply, is_compaction
from tests.real_agents.harness import Copilot, agent_binary, nia_program, request_text


def copilot_for(project, agent_home, server, cache, *, trusted: bool = True) -> Copilot:
    agent_binary("copilot")
    agent = Copilot(project, agent_home, server, cache)
    if trusted:
        agent.trust()
    return agent


def install(project, *args: str) -> None:
    done = nia("hook", "install", *args, "--program", nia_program(), cwd=project)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def copilot(project, agent_home, server, copilot_cache):
    install(project, "copilot")
    return copilot_for(project, agent_home, server, copilot_cache)


def conversation(server) -> list:
    return [r for r in server.model_requests() if not is_compaction(r.body)]


def sent(server) -> str:
    requests = conversation(server)
    assert requests, "Copilot sent no conversation request"
    return request_text(requests[-1].body)


def reminders(server) -> list[str]:
    """nia's texts in the last request: the ``<system_reminder>`` blocks Copilot appended to user messages."""
    found = []
    for message in conversation(server)[-1].body.get("messages", []):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str) and "<system_reminder>\n" in content:
            found.append(content.split("<system_reminder>\n", 1)[1].rsplit("\n</system_reminder>", 1)[0])
    return found


def turn(agent: Copilot, prompt: str, resume: str | None = None) -> str:
    result = agent.turn(prompt, resume)
    assert result.returncode == 0, result.stderr[-2000:] + result.stdout[-2000:]
    assert result.session_id
    return result.session_id


def test_baseline_once_unchanged_turn_silent_update_and_removal(copilot, project, server):
    sid = turn(copilot, "first")
    text = sent(server)
    assert text.count("ACME-RULE: one") == 1
    assert text.count("AGENTS-SAYS: use tabs.") == 1  # Copilot's own <custom_instruction>; nia leaves it
    told = reminders(server)
    assert len(told) == 1 and told[0].startswith("Environment:")

    turn(copilot, "second", sid)
    assert reminders(server) == told  # stored in the first prompt's message, re-sent; nothing added

    write_plugin(project, "two")
    turn(copilot, "third", sid)
    assert reminders(server) == [*told, "ACME-RULE changed: two (was one)"]

    (project / ".nia" / "plugins" / "acme.py").unlink()
    (project / ".nia" / "plugins" / "broken.py").write_text("raise RuntimeError('the broken plugin exploded')\n")
    turn(copilot, "fourth", sid)
    assert sent(server).count("ACME-RULE-REMOVED: the acme rule no longer applies.") == 1

    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert [(e["event"], e["outcome"]) for e in entries[:3]] == [
        ("userPromptSubmitted", "initialized"),
        ("userPromptSubmitted", "unchanged"),
        ("userPromptSubmitted", "updated"),
    ]
    assert any("exploded" in w for w in entries[-1]["warnings"])
    assert {e["epoch"] for e in entries} == {1}


def test_compact_starts_a_new_epoch(copilot, project, server):
    sid = turn(copilot, "first")
    turn(copilot, "/compact", sid)
    assert any(is_compaction(r.body) for r in server.model_requests())
    write_plugin(project, "two")
    turn(copilot, "after", sid)
    text = sent(server)
    assert SUMMARY in text and "ACME-RULE: one" not in text  # Copilot's summary replaced nia's first text
    told = reminders(server)
    assert len(told) == 1 and told[0].startswith("Environment:") and "ACME-RULE: two" in told[0]
    turn(copilot, "again", sid)
    assert reminders(server) == told
    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert [(e["outcome"], e["epoch"]) for e in entries] == [("initialized", 1), ("initialized", 2), ("unchanged", 2)]


def test_a_text_over_the_limit_is_spilled_and_the_model_can_read_it(copilot, project, server):
    long = "\\n".join(f"line {n:04d} " + "x" * 40 for n in range(300))  # 15 KB of lines, written as escapes
    write_plugin(project, long)
    sid = turn(copilot, "first")
    told = reminders(server)
    assert len(told) == 1 and len(told[0]) <= 10_000 and "line 0299" not in told[0]
    spill = FOOTER.search(told[0]).group("where")
    assert Path(spill).parent == project / ".nia" / "hook-output" and "line 0299" in Path(spill).read_text()
    # The model follows the pointer with Copilot's own view tool: the git-ignored file is readable to it.
    server.script = [Reply(call=Call("view", json.dumps({"path": spill}))), Reply("DONE")]
    turn(copilot, "second", sid)
    assert "line 0299" in sent(server)
    assert reminders(server) == told
    assert [e["outcome"] for e in hook_log(project)] == ["initialized", "unchanged"]


def test_nias_claude_code_hooks_say_nothing_inside_copilot(project, agent_home, server, copilot_cache):
    install(project, "claude-code")  # Copilot runs .claude/settings.json hooks too, and drops their output
    copilot = copilot_for(project, agent_home, server, copilot_cache)
    sid = turn(copilot, "first")
    assert "ACME-RULE" not in sent(server)
    assert [(e["host"], e["outcome"]) for e in hook_log(project)] == [("claude-code", "ignored")] * 2

    install(project, "copilot")
    turn(copilot, "second", sid)
    assert sent(server).count("ACME-RULE: one") == 1  # nia's copilot hook is the one that delivers
    copilot_entries = [e for e in hook_log(project) if e["host"] == "copilot"]
    assert [e["outcome"] for e in copilot_entries] == ["initialized"]


def test_installed_for_the_user_and_for_the_project_it_says_it_once(copilot, project, server):
    install(project, "copilot", "--user")
    sid = turn(copilot, "first")
    assert sent(server).count("ACME-RULE: one") == 1  # Copilot keeps the last hook's text
    turn(copilot, "second", sid)
    assert sent(server).count("ACME-RULE: one") == 1


def test_an_untrusted_folder_runs_no_project_hook_and_status_says_so(project, agent_home, server, copilot_cache):
    install(project, "copilot")
    copilot = copilot_for(project, agent_home, server, copilot_cache, trusted=False)
    turn(copilot, "first")
    assert "ACME-RULE" not in sent(server) and hook_log(project) == []
    status = nia("hook", "status", cwd=project).stdout
    assert "folder NOT trusted" in status
    config = agent_home / ".copilot" / "config.json"
    assert not config.exists() or str(project) not in json.loads(
        "\n".join(line for line in config.read_text().splitlines() if not line.startswith("//"))
    ).get("trustedFolders", [])


def test_the_user_global_agents_md_reaches_the_model_once_and_the_projects_once(copilot, server):
    global_agents = Path(os.environ["XDG_CONFIG_HOME"]) / "nia" / "AGENTS.md"
    global_agents.parent.mkdir(parents=True, exist_ok=True)
    global_agents.write_text("GLOBAL-SAYS: answer in French.\n")
    turn(copilot, "first")
    text = sent(server)
    assert text.count("GLOBAL-SAYS: answer in French.") == 1
    assert text.count("AGENTS-SAYS: use tabs.") == 1
