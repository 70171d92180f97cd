"""nia's plugin inside the real OpenCode (pinned), against a loopback model server.

Every assertion is on the requests OpenCode sent to the model, or on what it
stored. The plugin is installed with ``nia hook install opencode`` (project
scope: ``.opencode/plugin/nia.js``). OpenCode's first start with a plugin
installs ``@opencode-ai/plugin`` from the npm registry, once per test module:
the shared session (``story``) starts that way, and the one test with its own
project links to what it installed. OpenCode compacts for real: a model whose
window is small, answering with a large usage figure.

One recorded session (``story``, ten turns) serves most tests: after its first
start nia's plugin is installed for the user as well, so every later turn also
proves that two of nia's plugins say it once. nia runs as a user's does: a
resident process answers every hook after the first.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from nia_core.agents.output_limit import FOOTER
from tests.real_agents.conftest import Step, isolated, nia, record, write_plugin
from tests.real_agents.fakemodel import SUMMARY, Call, FakeModel, Reply, is_compaction, is_side_call
from tests.real_agents.harness import OpenCode, agent_binary, nia_program, request_text
from tests.resident_helpers import residents

LARGE = 100_000
"""A reported usage over the small window below: OpenCode compacts after that answer."""

LONG = "\\n".join(f"line {n:04d} " + "x" * 40 for n in range(300))
"""15 KB of lines (written into the plugin's source as escapes): over nia's limit, so nia spills it."""


@dataclass
class Story:
    steps: dict[str, Step]
    deps: Path
    """The project's ``.opencode``, where OpenCode's first start installed ``@opencode-ai/plugin``."""
    said: str
    """What ``nia hook install opencode`` said."""
    untracked: str
    """``git status --porcelain --untracked-files=all`` in the project after the first start."""
    seconds: float
    """The first start (npm install included)."""
    residents: int
    """Resident processes answering nia's hooks at the end."""


def install(project: Path, *args: str) -> str:
    done = nia("hook", "install", "opencode", *args, cwd=project)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Story:
    """One OpenCode session: baseline, unchanged, update, a fork, removal, a compaction, a spilled baseline read."""
    agent_binary("opencode")
    with isolated(tmp_path_factory, resident=True) as home, FakeModel() as server:
        project = tmp_path_factory.mktemp("opencode-story") / "shop"
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        (project / "AGENTS.md").write_text("AGENTS-SAYS: use tabs.\n")
        write_plugin(project, "one")
        global_agents = Path(os.environ["XDG_CONFIG_HOME"]) / "nia" / "AGENTS.md"
        global_agents.parent.mkdir(parents=True)
        global_agents.write_text("GLOBAL-SAYS: answer in French.\n")
        said = install(project)  # the default: this installation's nia, by its absolute path
        agent = OpenCode(project, home, server, context=50_000)
        started = time.monotonic()
        steps = {"first": record(agent, server, "first")}
        seconds = time.monotonic() - started
        untracked = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"], cwd=project, capture_output=True, text=True
        ).stdout
        agent.deps = project / ".opencode"
        install(project, "--user", "--program", nia_program())
        sid = steps["first"].session
        steps["second"] = record(agent, server, "second", sid)
        write_plugin(project, "two")
        steps["third"] = record(agent, server, "third", sid)
        write_plugin(project, "three")
        steps["forked"] = record(agent, server, "forked", sid, True)
        steps["fork again"] = record(agent, server, "again", steps["forked"].session)
        (project / ".nia" / "plugins" / "acme.py").unlink()
        (project / ".nia" / "plugins" / "broken.py").write_text("raise RuntimeError('the broken plugin exploded')\n")
        steps["fourth"] = record(agent, server, "fourth", sid)
        server.script = [Reply(input_tokens=LARGE)]  # this answer fills the window: OpenCode compacts after it
        steps["fifth"] = record(agent, server, "fifth", sid)
        write_plugin(project, LONG)
        steps["sixth"] = record(agent, server, "sixth", sid)
        spill = FOOTER.search(nia_parts(steps["sixth"])[0])
        assert spill, nia_parts(steps["sixth"])
        # The model follows the pointer with OpenCode's own read tool.
        server.script = [Reply(call=Call("read", json.dumps({"filePath": spill.group("where")}))), Reply("DONE")]
        steps["seventh"] = record(agent, server, "seventh", sid)
        running = sum(1 for r in residents()["residents"] if r["ready"])
    return Story(steps, project / ".opencode", said, untracked, seconds, running)


def last(step: Step) -> dict:
    """The body of the turn's last conversation request: not a title generation, not a summarisation."""
    bodies = [r.body for r in step.requests if not is_side_call(r.body) and not is_compaction(r.body)]
    assert bodies, "OpenCode sent no conversation request"
    return bodies[-1]


def sent(step: Step) -> str:
    return request_text(last(step))


def nia_parts(step: Step) -> list[str]:
    """The texts nia's plugin added to user messages: the second part of a user message, after the prompt."""
    return [
        part["text"]
        for message in last(step).get("messages", [])
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for part in message["content"][1:]
        if isinstance(part, dict) and ("ACME-RULE" in part.get("text", "") or "Environment:" in part.get("text", ""))
    ]


def entries(story: Story, session: str) -> list[dict]:
    return [e for e in story.steps["seventh"].log if e["host_session"] == session]


def answers(story: Story, session: str) -> list[tuple[str, int | None]]:
    """(outcome, epoch) of the first of nia's plugins at each prompt of ``session``."""
    found = entries(story, session)
    firsts = [e for n, e in enumerate(found) if n == 0 or e["turn"] != found[n - 1]["turn"]]
    return [(e["outcome"], e["epoch"]) for e in firsts]


def test_the_first_start_installs_opencodes_package_once_and_leaves_git_status_clean(story):
    assert (story.deps / "node_modules" / "@opencode-ai" / "plugin" / "package.json").exists()
    assert "@opencode-ai/plugin" in story.said and "npm registry" in story.said
    assert ".opencode" not in story.untracked  # nia's plugin and OpenCode's install stay out of git
    assert sent(story.steps["first"]).count("ACME-RULE: one") == 1  # the plugin worked on that very first start
    print(f"OpenCode's first start with nia's plugin (npm install included): {story.seconds:.1f} s")


def test_baseline_once_unchanged_turn_silent_update_and_removal(story):
    steps = story.steps
    text = sent(steps["first"])
    assert text.count("ACME-RULE: one") == 1
    assert text.count("AGENTS-SAYS: use tabs.") == 1  # OpenCode's own copy in its system message; nia leaves it
    told = nia_parts(steps["first"])
    assert len(told) == 1 and told[0].startswith("Environment:")
    assert nia_parts(steps["second"]) == told  # re-sent unchanged, nothing added
    assert nia_parts(steps["third"]) == [*told, "ACME-RULE changed: two (was one)"]
    text = sent(steps["fourth"])  # a broken plugin never fails the agent's turn
    assert text.count("ACME-RULE-REMOVED: the acme rule no longer applies.") == 1
    assert text.count("ACME-RULE: one") == 1 and text.count("ACME-RULE changed: two (was one)") == 1
    sid = steps["first"].session
    assert answers(story, sid)[:4] == [("initialized", 1), ("unchanged", 1), ("updated", 1), ("updated", 1)]
    assert {e["event"] for e in entries(story, sid)} == {"chat.message"}
    fourth = [e for e in steps["fourth"].log if e["host_session"] == sid][-2:]
    assert any("exploded" in w for e in fourth for w in e["warnings"])


def test_the_user_global_agents_md_reaches_the_model_once_and_the_projects_once(story):
    text = sent(story.steps["first"])
    assert text.count("GLOBAL-SAYS: answer in French.") == 1  # nia's: OpenCode never loads it
    assert text.count("AGENTS-SAYS: use tabs.") == 1  # OpenCode's own copy


def test_installed_for_the_user_and_for_the_project_it_says_it_once(story):
    found = entries(story, story.steps["first"].session)[1:]  # the user's plugin joins after the first start
    assert [e["turn"] for e in found[::2]] == [e["turn"] for e in found[1::2]]  # both plugins asked at each prompt
    assert {e["printed"] for e in found[1::2]} == {0}  # the second one says nothing the first one said
    assert sent(story.steps["second"]).count("ACME-RULE: one") == 1
    assert sent(story.steps["third"]).count("ACME-RULE changed: two (was one)") == 1


def test_a_fork_continues_the_parents_context_with_only_the_delta(story):
    forked = story.steps["forked"]
    assert forked.session != story.steps["first"].session
    told = nia_parts(forked)
    assert sum(t.startswith("Environment:") for t in told) == 1  # the parent's copied baseline, no second one
    assert told[1:] == ["ACME-RULE changed: two (was one)", "ACME-RULE changed: three (was two)"]
    assert nia_parts(story.steps["fork again"]) == told
    assert answers(story, forked.session) == [("forked+updated", 1), ("unchanged", 1)]


def test_an_automatic_compaction_starts_a_new_epoch(story):
    steps = story.steps
    summaries = [r for r in steps["fifth"].requests if is_compaction(r.body)]
    assert len(summaries) == 1 and "ACME-RULE: one" in request_text(summaries[0].body)  # what was summarised
    text = sent(steps["sixth"])
    assert SUMMARY in text and "ACME-RULE: one" not in text  # the compacted history: the summary, not nia's text
    told = nia_parts(steps["sixth"])
    assert len(told) == 1 and told[0].startswith("Environment:") and "ACME-RULE: line 0000" in told[0]
    assert "ACME-RULE changed" not in text  # no update against a baseline the model no longer has
    assert nia_parts(steps["seventh"]) == told
    sid = steps["first"].session
    assert answers(story, sid)[4:] == [("unchanged", 1), ("initialized", 2), ("unchanged", 2)]
    started = next(e for e in entries(story, sid) if e["epoch"] == 2)
    assert any("a new epoch starts" in w for w in started["warnings"])


def test_a_text_over_the_limit_is_spilled_and_the_model_can_read_it(story):
    told = nia_parts(story.steps["sixth"])[0]
    assert len(told) <= 10_000 and "line 0299" not in told
    spill = Path(FOOTER.search(told).group("where"))
    assert spill.parent.name == "hook-output" and spill.parent.parent.name == ".nia"
    assert "line 0299" in spill.read_text()
    assert "line 0299" in sent(story.steps["seventh"])  # the read tool's result: the git-ignored file is readable


def test_a_resident_process_answers_every_hook_after_the_first_prompt(story):
    first = story.steps["first"].log
    later = [e for e in story.steps["seventh"].log if e not in first]
    assert later and {e["answered_by"] for e in later} == {"resident"}
    assert story.residents == 1  # one for every `opencode` process, each with its own OPENCODE_PID, and both scopes


def test_a_nia_that_hangs_never_holds_opencode(story, project, agent_home, server, tmp_path):
    agent_binary("opencode")
    hung = tmp_path / "hung-nia"
    hung.write_text("#!/bin/sh\nexec sleep 9139\n")
    hung.chmod(0o755)
    install(project, "--program", str(hung))
    opencode = OpenCode(project, agent_home, server, story.deps, extra_env={"NIA_HOOK_DEADLINE": "1"})
    started = time.monotonic()
    result = opencode.turn("first")
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-2000:]
    text = request_text([r for r in server.model_requests() if not is_side_call(r.body)][-1].body)
    assert "ACME-RULE" not in text and "Environment:" not in text
    assert took >= 10  # the plugin waited nia's deadline (1 s) and 10 s more, then let the prompt go
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 9139" not in left
