"""nia's hook inside the real GitHub Copilot CLI (pinned), against a loopback model server.

Every assertion is on the requests Copilot sent to the model. The hook is
installed with ``nia hook install copilot`` (project scope:
``.github/hooks/nia.json``); the folder is trusted the way Copilot records the
user's trust (``trustedFolders`` in ``~/.copilot/config.json``), which the test
writes in the user's place and nia never does. Copilot runs offline (BYOK,
chat completions); ``/compact`` works in ``-p`` mode.

One recorded session (``story``, seven turns) serves most tests: nia's hook is
installed for the project and for the user, and nia's Claude Code hooks too
(Copilot runs those as well), so every turn also proves that two of nia's
hooks say it once and that the Claude Code hook says nothing. nia runs as a
user's does: a resident process answers every hook after the first.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from nia_core.agents.output_limit import FOOTER
from tests.real_agents.conftest import (
    GIT_BASELINE,
    GIT_EDITED,
    Step,
    assert_answered_by,
    edit_between_turns,
    hook_log,
    isolated,
    make_git_repository,
    make_project,
    nia,
    record,
    write_plugin,
)
from tests.real_agents.fakemodel import SUMMARY, Call, FakeModel, Reply, is_compaction
from tests.real_agents.harness import Copilot, agent_binary, nia_program, request_text
from tests.resident_helpers import residents

LONG = "\\n".join(f"line {n:04d} " + "x" * 40 for n in range(300))
"""15 KB of lines (written into the plugin's source as escapes): over Copilot's limit, so nia spills it."""


def copilot_for(project, agent_home, server, cache, *, trusted: bool = True) -> Copilot:
    agent_binary("copilot")
    agent = Copilot(project, agent_home, server, cache)
    if trusted:
        agent.trust()
    return agent


def install(project, *args: str) -> None:
    done = nia("hook", "install", *args, "--program", nia_program(), cwd=project)
    assert done.returncode == 0, done.stderr


@dataclass
class Story:
    steps: dict[str, Step]
    residents: int
    """Resident processes answering nia's hooks at the end."""


@pytest.fixture(scope="module")
def story(tmp_path_factory, copilot_cache) -> Story:
    """One Copilot session: baseline, unchanged, update, removal, ``/compact``, a spilled baseline, its file read."""
    agent_binary("copilot")
    with isolated(tmp_path_factory, resident=True) as home, FakeModel() as server:
        project = make_project(tmp_path_factory.mktemp("copilot-story") / "shop")
        global_agents = Path(os.environ["XDG_CONFIG_HOME"]) / "nia" / "AGENTS.md"
        global_agents.parent.mkdir(parents=True)
        global_agents.write_text("GLOBAL-SAYS: answer in French.\n")
        install(project, "copilot")
        install(project, "copilot", "--user")
        install(project, "claude-code")  # Copilot runs .claude/settings.json hooks too, and drops their output
        copilot = copilot_for(project, home, server, copilot_cache)  # the HOME nia installed --user into
        steps = {"first": record(copilot, server, "first")}
        sid = steps["first"].session
        steps["second"] = record(copilot, server, "second", sid)
        write_plugin(project, "two")
        steps["third"] = record(copilot, server, "third", sid)
        (project / ".nia" / "plugins" / "acme.py").unlink()
        (project / ".nia" / "plugins" / "broken.py").write_text("raise RuntimeError('the broken plugin exploded')\n")
        steps["fourth"] = record(copilot, server, "fourth", sid)
        steps["compact"] = record(copilot, server, "/compact", sid)
        write_plugin(project, LONG)
        steps["after"] = record(copilot, server, "after", sid)
        spill = FOOTER.search(reminders(steps["after"])[0])
        assert spill, reminders(steps["after"])
        # The model follows the pointer with Copilot's own view tool.
        server.script = [Reply(call=Call("view", json.dumps({"path": spill.group("where")}))), Reply("DONE")]
        steps["again"] = record(copilot, server, "again", sid)
        running = sum(1 for r in residents()["residents"] if r["ready"])
    return Story(steps, running)


def last(step: Step) -> dict:
    """The body of the turn's last conversation request (not a summarisation)."""
    bodies = [r.body for r in step.requests if not is_compaction(r.body)]
    assert bodies, "Copilot sent no conversation request"
    return bodies[-1]


def sent(step: Step) -> str:
    return request_text(last(step))


def reminders(step: Step) -> list[str]:
    """nia's texts in the turn's last request: the ``<system_reminder>`` blocks Copilot appended to user messages."""
    found = []
    for message in last(step).get("messages", []):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str) and "<system_reminder>\n" in content:
            found.append(content.split("<system_reminder>\n", 1)[1].rsplit("\n</system_reminder>", 1)[0])
    return found


def answers(story: Story, host: str = "copilot") -> list[tuple[str, int | None]]:
    """(outcome, epoch) of the first of nia's ``host`` hooks at each prompt of the story's session."""
    sid = story.steps["first"].session
    entries = [e for e in story.steps["again"].log if e["host"] == host and e["host_session"] == sid]
    firsts = [e for n, e in enumerate(entries) if n == 0 or e["turn"] != entries[n - 1]["turn"]]
    return [(e["outcome"], e["epoch"]) for e in firsts]


def test_baseline_once_unchanged_turn_silent_update_and_removal(story):
    text = sent(story.steps["first"])
    assert text.count("ACME-RULE: one") == 1
    assert text.count("AGENTS-SAYS: use tabs.") == 1  # Copilot's own <custom_instruction>; nia leaves it
    told = reminders(story.steps["first"])
    assert len(told) == 1 and told[0].startswith("Environment:")
    assert reminders(story.steps["second"]) == told  # stored in the first prompt's message, re-sent; nothing added
    assert reminders(story.steps["third"]) == [*told, "ACME-RULE changed: two (was one)"]
    assert sent(story.steps["fourth"]).count("ACME-RULE-REMOVED: the acme rule no longer applies.") == 1
    assert answers(story)[:4] == [("initialized", 1), ("unchanged", 1), ("updated", 1), ("updated", 1)]
    fourth = [e for e in story.steps["fourth"].log if e["host"] == "copilot"][-2:]
    assert any("exploded" in w for e in fourth for w in e["warnings"])  # a broken plugin never fails the turn


def test_the_user_global_agents_md_reaches_the_model_once_and_the_projects_once(story):
    text = sent(story.steps["first"])
    assert text.count("GLOBAL-SAYS: answer in French.") == 1  # nia's: Copilot never loads it
    assert text.count("AGENTS-SAYS: use tabs.") == 1


def test_installed_for_the_user_and_for_the_project_it_says_it_once(story):
    sid = story.steps["first"].session
    entries = [e for e in story.steps["again"].log if e["host"] == "copilot" and e["host_session"] == sid]
    prompts = [e["turn"] for n, e in enumerate(entries) if n == 0 or e["turn"] != entries[n - 1]["turn"]]
    assert [e["turn"] for e in entries] == [t for t in prompts for _ in range(2)]  # both hooks ran at each prompt
    seconds = entries[1::2]
    assert {e["printed"] for e in seconds} == {0}  # the second one says nothing the first one said
    assert sent(story.steps["second"]).count("ACME-RULE: one") == 1


def test_nias_claude_code_hooks_say_nothing_inside_copilot(story):
    entries = [e for e in story.steps["again"].log if e["host"] == "claude-code"]
    assert len(entries) >= len(answers(story))  # they ran at every prompt...
    assert {e["outcome"] for e in entries} == {"ignored"}  # ...and counted nothing as delivered
    assert answers(story)[0] == ("initialized", 1)  # nia's copilot hook is the one that delivers


def test_compact_starts_a_new_epoch(story):
    assert any(is_compaction(r.body) for r in story.steps["compact"].requests)
    text = sent(story.steps["after"])
    assert SUMMARY in text and "ACME-RULE: one" not in text  # Copilot's summary replaced nia's first text
    told = reminders(story.steps["after"])
    assert len(told) == 1 and told[0].startswith("Environment:") and "ACME-RULE: line 0000" in told[0]
    assert "ACME-RULE changed" not in text  # no update against a baseline the model no longer has
    assert reminders(story.steps["again"]) == told
    assert answers(story)[4:] == [("initialized", 2), ("unchanged", 2)]


def test_a_text_over_the_limit_is_spilled_and_the_model_can_read_it(story):
    told = reminders(story.steps["after"])[0]
    assert len(told) <= 10_000 and "line 0299" not in told
    spill = Path(FOOTER.search(told).group("where"))
    assert spill.parent.name == "hook-output" and spill.parent.parent.name == ".nia"
    assert "line 0299" in spill.read_text()
    assert "line 0299" in sent(story.steps["again"])  # the view tool's result: the git-ignored file is readable to it


def test_a_resident_process_answers_every_hook_after_the_first_prompt(story):
    first = story.steps["first"].log
    later = [e for e in story.steps["again"].log if e not in first]
    assert later and {e["answered_by"] for e in later} == {"resident"}
    assert story.residents == 1  # nia's hooks at both scopes and its Claude Code hooks: one environment


def test_an_untrusted_folder_runs_no_project_hook_and_status_says_so(project, agent_home, server, copilot_cache):
    install(project, "copilot")
    copilot = copilot_for(project, agent_home, server, copilot_cache, trusted=False)
    result = copilot.turn("first")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ACME-RULE" not in request_text(server.model_requests()[-1].body) and hook_log(project) == []
    status = nia("hook", "status", cwd=project).stdout
    assert "folder NOT trusted" in status
    config = agent_home / ".copilot" / "config.json"
    assert not config.exists() or str(project) not in json.loads(
        "\n".join(line for line in config.read_text().splitlines() if not line.startswith("//"))
    ).get("trustedFolders", [])


@pytest.mark.both_hook_modes  # a resident watches the working tree; a hook in its own process runs git status
def test_a_real_git_repository_baseline_then_one_update_naming_the_edits_then_nothing(
    tmp_path, agent_home, server, copilot_cache
):
    root = tmp_path / "shop"
    repo = make_git_repository(root)
    install(root, "copilot")
    repo.commit("Share the hooks")  # .github/hooks/nia.json, as a team commits it
    copilot = copilot_for(root, agent_home, server, copilot_cache)

    first = record(copilot, server, "first")
    sid = first.session
    told = reminders(first)
    assert len(told) == 1 and told[0].startswith("Environment:") and told[0].count(GIT_BASELINE) == 1
    assert f"- Branch: `main` (no upstream)\n- HEAD: `{repo.short()}` Share the hooks\n- Working tree: clean" in told[0]
    assert repo.git("status", "--porcelain") == ""  # neither Copilot nor nia's own files (.nia/) dirtied the tree

    # a resident has observed the tree by now (its watch comes from its second look)
    assert reminders(record(copilot, server, "second", sid)) == told

    edit_between_turns(root)
    third = record(copilot, server, "third", sid)
    assert reminders(third) == [*told, GIT_EDITED]
    assert sent(third).count("Working tree: ") == 2

    assert reminders(record(copilot, server, "fourth", sid)) == [*told, GIT_EDITED]  # nothing added

    entries = [e for e in hook_log(root) if e["host_session"] == sid]
    assert [(e["outcome"], e["changed"]) for e in entries] == [
        ("initialized", []),
        ("unchanged", []),
        ("updated", ["~nia/git"]),
        ("unchanged", []),
    ]
    assert_answered_by(entries, first_turn=1)
