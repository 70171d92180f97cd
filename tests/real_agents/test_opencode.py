"""nia's plugin inside the real OpenCode (pinned), against a loopback model server.

Every assertion is on the requests OpenCode sent to the model, or on what it
stored. The plugin is installed with ``nia hook install opencode`` (project
scope: ``.opencode/plugin/nia.js``). OpenCode's first start with a plugin
installs ``@opencode-ai/plugin`` from the npm registry; that happens once per
test session (``opencode_deps`` in conftest.py) and every other test links to
it. OpenCode compacts for real: a model whose window is small, answering with
a large usage figure.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from nia_core.agents.output_limit import FOOTER
from tests.real_agents.conftest import hook_log, nia, write_plugin
from tests.real_agents.fakemodel import SUMMARY, Call, Reply, is_compaction, is_side_call
from tests.real_agents.harness import OpenCode, agent_binary, nia_program, request_text

LARGE = 100_000
"""A reported usage over the small window below: OpenCode compacts after that answer."""


def installed(project, agent_home, server, deps, *, program: str | None = None, **extra) -> OpenCode:
    agent_binary("opencode")
    done = nia("hook", "install", "opencode", "--program", program or nia_program(), cwd=project)
    assert done.returncode == 0, done.stderr
    return OpenCode(project, agent_home, server, deps.folder, **extra)


@pytest.fixture
def opencode(project, agent_home, server, opencode_deps):
    return installed(project, agent_home, server, opencode_deps)


def conversation(server) -> list:
    """OpenCode's conversation requests: not its title generation, not its summarisation."""
    return [r for r in server.model_requests() if not is_side_call(r.body) and not is_compaction(r.body)]


def sent(server) -> str:
    requests = conversation(server)
    assert requests, "OpenCode sent no conversation request"
    return request_text(requests[-1].body)


def nia_parts(server, request=None) -> list[str]:
    """The texts nia's plugin added to user messages: the second part of a user message, after the prompt."""
    body = (request or conversation(server)[-1]).body
    return [
        part["text"]
        for message in body.get("messages", [])
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for part in message["content"][1:]
        if isinstance(part, dict) and ("ACME-RULE" in part.get("text", "") or "Environment:" in part.get("text", ""))
    ]


def turn(agent: OpenCode, prompt: str, session: str | None = None, fork: bool = False) -> str:
    result = agent.turn(prompt, session, fork)
    assert result.returncode == 0, result.stderr[-2000:] + result.stdout[-2000:]
    assert result.session_id
    return result.session_id


def test_the_first_start_installs_opencodes_package_once_and_leaves_git_status_clean(opencode_deps):
    assert (opencode_deps.folder / "node_modules" / "@opencode-ai" / "plugin" / "package.json").exists()
    assert "@opencode-ai/plugin" in opencode_deps.said and "npm registry" in opencode_deps.said
    assert ".opencode" not in opencode_deps.untracked  # nia's plugin and OpenCode's install stay out of git
    assert opencode_deps.sent.count("ACME-RULE: one") == 1  # the plugin worked on that very first start
    print(f"OpenCode's first start with nia's plugin (npm install included): {opencode_deps.seconds:.1f} s")


def test_baseline_once_unchanged_turn_silent_update_and_removal(opencode, project, server):
    sid = turn(opencode, "first")
    text = sent(server)
    assert text.count("ACME-RULE: one") == 1
    assert text.count("AGENTS-SAYS: use tabs.") == 1  # OpenCode's own copy in its system message; nia leaves it
    told = nia_parts(server)
    assert len(told) == 1 and told[0].startswith("Environment:")

    turn(opencode, "second", sid)
    assert nia_parts(server) == told  # re-sent unchanged, nothing added

    write_plugin(project, "two")
    turn(opencode, "third", sid)
    assert sent(server).count("ACME-RULE changed: two (was one)") == 1

    (project / ".nia" / "plugins" / "acme.py").unlink()
    (project / ".nia" / "plugins" / "broken.py").write_text("raise RuntimeError('the broken plugin exploded')\n")
    turn(opencode, "fourth", sid)  # a broken plugin never fails the agent's turn
    text = sent(server)
    assert text.count("ACME-RULE-REMOVED: the acme rule no longer applies.") == 1
    assert text.count("ACME-RULE: one") == 1 and text.count("ACME-RULE changed: two (was one)") == 1

    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert [(e["event"], e["outcome"]) for e in entries[:3]] == [
        ("chat.message", "initialized"),
        ("chat.message", "unchanged"),
        ("chat.message", "updated"),
    ]
    assert any("exploded" in w for w in entries[-1]["warnings"])
    assert {e["epoch"] for e in entries} == {1}


def test_an_automatic_compaction_starts_a_new_epoch(project, agent_home, server, opencode_deps):
    opencode = installed(project, agent_home, server, opencode_deps, context=50_000)
    server.script = [Reply(input_tokens=LARGE)]  # the first answer fills the window: OpenCode compacts after it
    sid = turn(opencode, "first")
    summaries = [r for r in server.model_requests() if is_compaction(r.body)]
    assert len(summaries) == 1 and "ACME-RULE: one" in request_text(summaries[0].body)  # what was summarised

    write_plugin(project, "two")
    turn(opencode, "second", sid)
    text = sent(server)
    assert SUMMARY in text and "ACME-RULE: one" not in text  # the compacted history: the summary, not nia's text
    told = nia_parts(server)
    assert len(told) == 1 and told[0].startswith("Environment:") and "ACME-RULE: two" in told[0]
    assert "ACME-RULE changed" not in text  # no update against a baseline the model no longer has

    turn(opencode, "third", sid)
    assert nia_parts(server) == told

    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert [(e["outcome"], e["epoch"]) for e in entries] == [("initialized", 1), ("initialized", 2), ("unchanged", 2)]
    assert any("a new epoch starts" in w for w in entries[1]["warnings"])


def test_a_text_over_the_limit_is_spilled_and_the_model_can_read_it(opencode, project, server):
    long = "\\n".join(f"line {n:04d} " + "x" * 40 for n in range(300))  # 15 KB of lines, written as escapes
    write_plugin(project, long)
    sid = turn(opencode, "first")
    told = nia_parts(server)
    assert len(told) == 1 and len(told[0]) <= 10_000 and "line 0299" not in told[0]
    spill = FOOTER.search(told[0]).group("where")
    assert Path(spill).parent == project / ".nia" / "hook-output" and "line 0299" in Path(spill).read_text()
    # The model follows the pointer with OpenCode's own read tool: the git-ignored file is readable to it.
    server.script = [Reply(call=Call("read", json.dumps({"filePath": spill}))), Reply("DONE")]
    turn(opencode, "second", sid)
    assert "line 0299" in sent(server)  # the tool's result, in the follow-up request
    assert nia_parts(server) == told  # found in OpenCode's store: not sent again
    assert [e["outcome"] for e in hook_log(project)] == ["initialized", "unchanged"]


def test_the_user_global_agents_md_reaches_the_model_once_and_the_projects_once(opencode, server):
    global_agents = Path(os.environ["XDG_CONFIG_HOME"]) / "nia" / "AGENTS.md"
    global_agents.parent.mkdir(parents=True, exist_ok=True)
    global_agents.write_text("GLOBAL-SAYS: answer in French.\n")
    turn(opencode, "first")
    text = sent(server)
    assert text.count("GLOBAL-SAYS: answer in French.") == 1  # nia's: OpenCode never loads it
    assert text.count("AGENTS-SAYS: use tabs.") == 1  # OpenCode's own copy


def test_a_fork_continues_the_parents_context_with_only_the_delta(opencode, project, server):
    first = turn(opencode, "first")
    write_plugin(project, "two")
    forked = turn(opencode, "forked", first, fork=True)
    assert forked != first
    told = nia_parts(server)
    assert sum(t.startswith("Environment:") for t in told) == 1  # the parent's copied baseline, no second one
    assert told.count("ACME-RULE changed: two (was one)") == 1
    turn(opencode, "again", forked)
    assert nia_parts(server) == told
    entries = [e for e in hook_log(project) if e["host_session"] == forked]
    assert [(e["outcome"], e["epoch"]) for e in entries] == [("forked+updated", 1), ("unchanged", 1)]


def test_installed_for_the_user_and_for_the_project_it_says_it_once(opencode, project, server):
    done = nia("hook", "install", "opencode", "--user", "--program", nia_program(), cwd=project)
    assert done.returncode == 0, done.stderr
    sid = turn(opencode, "first")
    assert sent(server).count("ACME-RULE: one") == 1  # two plugins asked at the same prompt: one answer
    entries = [e for e in hook_log(project) if e["host_session"] == sid]
    assert sorted(e["outcome"] for e in entries) == ["initialized", "unchanged"]


def test_a_nia_that_hangs_never_holds_opencode(project, agent_home, server, opencode_deps, tmp_path):
    hung = tmp_path / "hung-nia"
    hung.write_text("#!/bin/sh\nexec sleep 9139\n")
    hung.chmod(0o755)
    opencode = installed(
        project, agent_home, server, opencode_deps, program=str(hung), extra_env={"NIA_HOOK_DEADLINE": "1"}
    )
    started = time.monotonic()
    turn(opencode, "first")
    took = time.monotonic() - started
    assert "ACME-RULE" not in sent(server) and "Environment:" not in sent(server)
    assert took >= 10  # the plugin waited nia's deadline (1 s) and 10 s more, then let the prompt go
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 9139" not in left
