"""nia's hooks inside the real Codex CLI (pinned), against a loopback model server.

Every assertion is on the requests Codex sent to the model. The hooks are
installed with ``nia hook install codex`` (project scope: ``.codex/hooks.json``
and the feature flag in ``.codex/config.toml``); Codex's hook trust is given
per run with ``--dangerously-bypass-hook-trust`` because it is the user's
consent, which nia never writes.
"""

from __future__ import annotations

import pytest

from tests.agents.conftest import hook_log, nia, write_plugin
from tests.agents.harness import Codex, agent_binary, nia_program, request_text


@pytest.fixture
def codex(project, agent_home, server):
    agent_binary("codex")
    agent = Codex(project, agent_home, server)
    agent.configure()  # the fake provider only: the feature flag comes from nia's installer
    done = nia("hook", "install", "codex", "--program", nia_program(), cwd=project)
    assert done.returncode == 0, done.stderr
    return agent


def developer_texts(server) -> list[str]:
    """The developer messages of the last request (where Codex puts hook context), in order."""
    requests = server.model_requests()
    assert requests, "Codex sent no request"
    items = requests[-1].body.get("input", [])
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


def test_agents_md_edit_is_one_nia_update_with_the_switch_on(codex, project, server):
    (project / ".nia" / "project.toml").write_text("[hooks.codex]\ndeliver_native_files = true\n")
    sid = turn(codex, "first")
    assert any("AGENTS-SAYS: use tabs." in t for t in developer_texts(server))  # nia's baseline carries it now
    (project / "AGENTS.md").write_text("AGENTS-SAYS: use spaces.\n")
    turn(codex, "second", sid)
    updates = [t for t in developer_texts(server) if t.startswith("The AGENTS.md instructions changed.")]
    assert len(updates) == 1 and "AGENTS-SAYS: use spaces." in updates[0]
