"""The runtime through its public API: boundaries without a provider, turns, attached sessions."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nia_core.errors import UsageError
from nia_core.runtime import Runtime, attached_id
from nia_core.sessions import Blocked, Idle, Replied

STATUS_PLUGIN = """
from pathlib import Path
from nia_core import UNAVAILABLE, ContextSource, hookimpl

NIA_NAMESPACE = "acme"


@hookimpl
def nia_context_sources(location):
    status = Path(location.root) / "status.txt"

    def load():
        try:
            return status.read_text()
        except FileNotFoundError:
            return UNAVAILABLE

    return [
        ContextSource(
            key="acme/status",
            load=load,
            baseline=lambda v: f"Build status: {v}",
            removal=lambda v: "The build status is no longer tracked.",
        )
    ]
"""

PROVIDER_PLUGIN = """
from nia_core import hookimpl
from nia_core.sessions.messages import Reply


class Shout:
    name = "shout"

    def lower(self, request):
        return {"system": request.baseline, "last": request.messages[-1].text}

    def send(self, request, *, stream=None):
        return Reply(text=self.lower(request)["last"].upper())


@hookimpl
def nia_providers():
    return [Shout()]


@hookimpl
def nia_summarize(messages):
    return "Summary by plugin: " + str(len(messages))
"""


BROKEN_PLUGIN = """
from nia_core import hookimpl


@hookimpl
def nia_context_sources(location):
    raise RuntimeError("boom")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Be brief.\n")
    return root


def with_plugin(project: Path, name: str, code: str) -> None:
    (project / ".nia" / "plugins" / f"{name}.py").write_text(code)


def test_a_boundary_without_a_provider_gives_the_baseline_then_only_what_changed(project, store):
    runtime = Runtime()
    session = runtime.create_session(store, project)

    first = runtime.boundary(store, session.id)
    assert first.outcome == "initialized" and first.epoch == 1
    assert first.text is not None and "Be brief." in first.text
    assert first.text == store.state(session.id).epoch.baseline

    unchanged = runtime.boundary(store, session.id)
    assert (unchanged.outcome, unchanged.text, unchanged.changes) == ("unchanged", None, ())

    (project / "AGENTS.md").write_text("Be thorough.\n")
    updated = runtime.boundary(store, session.id)
    assert updated.outcome == "updated" and "Be thorough." in updated.text
    assert [(c.kind, c.text) for c in updated.changes] == [("updated", updated.text)]
    last = store.history(session.id)[-1].message
    assert (last.kind, last.text) == ("system_update", updated.text)  # admitted durably, once

    again = runtime.boundary(store, session.id)
    assert again.text is None and len(store.history(session.id)) == 1
    assert store.state(session.id).epoch.baseline == first.text  # the baseline never moved


def test_a_removed_contributor_arrives_as_its_removal_text(project, store):
    with_plugin(project, "status", STATUS_PLUGIN)
    (project / "status.txt").write_text("green")
    session = Runtime().create_session(store, project)
    assert "Build status: green" in Runtime().boundary(store, session.id).text

    (project / ".nia" / "plugins" / "status.py").unlink()  # each hook is a new process: a new runtime
    removed = Runtime().boundary(store, session.id)

    assert removed.outcome == "updated"
    assert [(c.key, c.kind) for c in removed.changes] == [("acme/status", "removed")]
    assert removed.text == "The build status is no longer tracked."


def test_unavailable_context_blocks_initialization_and_comes_back_as_data(project, store):
    with_plugin(project, "status", STATUS_PLUGIN)
    runtime = Runtime()
    session = runtime.create_session(store, project)

    blocked = runtime.boundary(store, session.id)
    assert isinstance(blocked.result, Blocked) and blocked.outcome == "blocked"
    assert blocked.blocked_on == ("acme/status",) and blocked.text is None
    assert store.state(session.id).epoch is None  # nothing stored

    (project / "status.txt").write_text("green")
    assert runtime.boundary(store, session.id).outcome == "initialized"
    (project / "status.txt").unlink()
    held = runtime.boundary(store, session.id)
    assert held.text is None
    assert any("acme/status" in w and "unavailable" in w for w in held.warnings)


def test_plugin_problems_are_warnings_in_the_report(project, store):
    with_plugin(
        project,
        "broken",
        BROKEN_PLUGIN,
    )
    runtime = Runtime()
    session = runtime.create_session(store, project)

    report = runtime.boundary(store, session.id)

    assert report.outcome == "initialized"
    assert any(w.startswith("plugin 'broken'") and "boom" in w for w in report.warnings)


MAKER_PLUGIN = """
from nia_core import ContextSource, hookimpl


@hookimpl
def nia_context_sources(location):
    def load():
        if (location.root / "make-it").exists():
            (location.path / ".nia").mkdir(exist_ok=True)  # as `nia init` run there at that moment would
        return 1

    return [ContextSource(key="maker/x", load=load, baseline=lambda v: "MAKER")]
"""


@pytest.mark.parametrize("door_location", [False, True])
def test_the_broken_plugins_reported_are_those_of_the_host_the_boundary_used(project, store, door_location):
    """A ``.nia/`` made in the session's folder during the boundary is the next boundary's project, not this one's."""
    with_plugin(project, "broken", "raise RuntimeError('boom on import')\n")  # said by the host, not the assembly
    with_plugin(project, "maker", MAKER_PLUGIN)
    (project / "api").mkdir()
    runtime = Runtime()
    location = runtime.locate(project / "api")
    session = runtime.create_session(store, location)
    assert runtime.boundary(store, session.id).outcome == "initialized"
    (project / "make-it").write_text("")

    report = runtime.boundary(store, session.id, **({"location": location} if door_location else {}))

    assert (project / "api" / ".nia").is_dir()
    assert report.outcome == "unchanged"
    assert any(w.startswith("plugin 'broken'") and "boom on import" in w for w in report.warnings), report.warnings


def test_a_boundary_given_its_sessions_location_does_not_look_for_the_project_again(project, store, monkeypatch):
    """A door that found the Location (an agent hook, from the hook's folder) hands it over: no folder above
    the session's is looked at again, at a boundary or a fresh start."""
    (project / "api").mkdir()
    runtime = Runtime()
    location = runtime.locate(project / "api")
    session = runtime.create_session(store, location)
    runtime.boundary(store, session.id, location=location)
    looked: list[str] = []
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: looked.append(os.fspath(p)) or real_stat(p, *a, **k))

    assert runtime.boundary(store, session.id, location=location).outcome == "unchanged"
    assert runtime.start_over(store, session.id, reason="test", location=location).outcome == "initialized"

    assert str(project / "api" / ".nia") not in looked
    monkeypatch.undo()
    looked.clear()
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: looked.append(os.fspath(p)) or real_stat(p, *a, **k))
    assert runtime.boundary(store, session.id).outcome == "unchanged"  # without it, the session's path is located
    assert looked.count(str(project / "api" / ".nia")) == 1


def test_start_over_begins_a_fresh_epoch_with_the_current_baseline(project, store):
    runtime = Runtime()
    session = runtime.create_session(store, project)
    runtime.boundary(store, session.id)
    (project / "AGENTS.md").write_text("Be thorough.\n")

    fresh = runtime.start_over(store, session.id, reason="host cleared the conversation")

    assert fresh.outcome == "initialized" and fresh.epoch == 2
    assert "Be thorough." in fresh.text and "Be brief." not in fresh.text
    assert store.epochs(session.id)[-1].reason == "host cleared the conversation"
    assert runtime.boundary(store, session.id).text is None


def test_start_over_with_unavailable_context_ends_the_epoch_so_the_next_boundary_initializes(project, store):
    with_plugin(project, "status", STATUS_PLUGIN)
    (project / "status.txt").write_text("green")
    runtime = Runtime()
    session = runtime.create_session(store, project)
    runtime.boundary(store, session.id)
    (project / "status.txt").unlink()

    assert runtime.start_over(store, session.id, reason="clear").outcome == "blocked"
    assert store.state(session.id).epoch is None
    (project / "status.txt").write_text("red")
    later = runtime.boundary(store, session.id)
    assert later.outcome == "initialized" and "Build status: red" in later.text


def test_attached_sessions_are_found_again_by_host_and_host_session_id(project, store):
    runtime = Runtime()
    one = runtime.attach(store, "claude-code", "abc-123", project)
    again = runtime.attach(store, "claude-code", "abc-123", project / ".nia")

    assert again == one and one.id == attached_id("claude-code", "abc-123")
    assert one.id.startswith("claude-code-") and one.location == str(project)
    assert attached_id("codex", "abc-123") != one.id
    assert len(store.sessions()) == 1
    assert runtime.boundary(store, one.id).outcome == "initialized"
    with pytest.raises(UsageError, match="host name"):
        runtime.attach(store, "Bad Host", "x", project)


def test_a_turn_calls_the_provider_and_stores_the_reply(project, store):
    runtime = Runtime()
    session = runtime.create_session(store, project, "echo/echo")
    streamed: list[str] = []

    report = runtime.turn(store, session.id, "Tidy up cart.py", stream=streamed.append)

    assert isinstance(report.result, Replied)
    assert "you said: Tidy up cart.py" in report.reply and "".join(streamed) == report.reply
    assert [e.message.kind for e in store.history(session.id)] == ["user", "assistant"]
    (project / "AGENTS.md").write_text("Be thorough.\n")
    second = runtime.turn(store, session.id, "And checkout.py")
    assert second.admission is not None and second.admission.outcome == "updated"
    assert [e.message.kind for e in store.history(session.id)][-3:] == ["user", "system_update", "assistant"]
    assert isinstance(runtime.turn(store, session.id).result, Idle)


def test_a_turn_finds_plugin_providers_and_the_summarizer_asks_plugins(project, store):
    with_plugin(project, "shout", PROVIDER_PLUGIN)
    runtime = Runtime()
    session = runtime.create_session(store, project, "shout/loud")

    assert runtime.turn(store, session.id, "hello").reply == "HELLO"
    assert "shout" in runtime.providers(project).names()
    assert runtime.summarizer(project)([]) == "Summary by plugin: 0"


def test_an_unknown_provider_keeps_nothing_pending(project, store):
    runtime = Runtime()
    session = runtime.create_session(store, project, "nobody/model")

    with pytest.raises(UsageError, match="unknown provider 'nobody'"):
        runtime.turn(store, session.id, "hello")
    assert store.state(session.id).pending == ()


def test_one_host_per_project_and_one_view_per_location(project):
    runtime = Runtime()
    (project / "sub").mkdir()
    host, view = runtime.open(project)

    assert runtime.open(project) == (host, view)
    assert runtime.host(project / "sub") is host
    assert runtime.open(project / "sub")[1] is not view
    assert runtime.context_for(str(project)).keys == host.assemble(view).context.keys


def test_the_runtime_imports_no_click():
    code = "import sys, nia_core.runtime; sys.exit('click' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_no_command_module_imports_the_cli_group_back():
    """`main` attaches the command modules' groups; none of them imports `main` (no import circle)."""
    cli = Path(__file__).resolve().parents[2] / "nia_core" / "cli"
    offenders = []
    for path in cli.glob("*.py"):
        if path.name in ("__init__.py", "main.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "nia_core.cli.commands":
                offenders.append(path.name)
    assert offenders == []
