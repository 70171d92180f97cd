"""Fixtures for the end-to-end tests against the real agents (see harness.py)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolate, stop_residents
from tests.real_agents.fakemodel import FakeModel, Recorded
from tests.real_agents.harness import nia_program

PLUGIN = """
from pathlib import Path
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource(
        key="acme/rule",
        load=lambda: "{value}",
        baseline=lambda v: f"ACME-RULE: {{v}}",
        update=lambda old, new: f"ACME-RULE changed: {{new}} (was {{old}})",
        removal=lambda old: "ACME-RULE-REMOVED: the acme rule no longer applies.",
    )]
"""


def write_plugin(root: Path, value: str) -> Path:
    path = root / ".nia" / "plugins" / "acme.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PLUGIN.format(value=value))
    return path


def nia(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([nia_program(), *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def hook_log(cwd: Path) -> list[dict]:
    done = nia("hook", "log", "--json", "--last", "100", cwd=cwd)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def make_project(root: Path) -> Path:
    """A git work tree with an AGENTS.md and nia's test plugin (value "one")."""
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("AGENTS-SAYS: use tabs.\n")
    write_plugin(root, "one")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "shop")


GIT_BASELINE = "Git status (nia keeps this current; paths are relative to the project root):"
"""The first line of nia/git's baseline (nia_plugins/git/render.py)."""


def make_git_repository(root: Path):
    """A real git repository (``git init``, one commit) holding :func:`make_project`'s files and ``app.py``.

    Built with the real git without the user's config (tests/plugins/gitrepo.py). nia-git's refresh
    interval is a minute, longer than the test's turns take, so the hooks see an edit at once only by
    looking (a hook in its own process) or by the watch (a resident), never because the interval
    passed. Commit what a hook install wrote (``repo.commit(...)``) before the first turn: the tree is clean.
    """
    from tests.plugins.gitrepo import Repo

    repo = Repo.init(root)
    (root / "AGENTS.md").write_text("AGENTS-SAYS: use tabs.\n")
    write_plugin(root, "one")
    (root / ".nia" / "project.toml").write_text("[plugins.nia-git]\nrefresh = 60\n")
    repo.commit("Start the shop", **{"app.py": "print('shop')\n"})
    return repo


GIT_EDITED = "Working tree: 1 file modified since the last message (`app.py`); 1 new untracked file (`notes.txt`)."
"""nia/git's update after :func:`edit_between_turns` in a clean tree: both paths, and nothing else."""


def edit_between_turns(root: Path) -> None:
    """What the agent's edit tool or the user does between two turns: a tracked file edited, a new file."""
    (root / "app.py").write_text("print('shop, edited')\n")
    (root / "notes.txt").write_text("a new file\n")


def waited_turn(turn: Any, agent: Any, prompt: str, resume: str | None = None) -> str:
    """``turn(agent, prompt, resume)`` for a host whose harness runs it without :func:`agent_turn`: in the
    resident mode a ready resident must answer its hooks, and one its hook started is waited for."""
    from tests.resident_helpers import agent_turn

    with agent_turn(agent.env()):
        return turn(agent, prompt, resume)


def assert_answered_by(entries: list[dict], first_turn: int) -> None:
    """Who answered a conversation's hooks (its hook log entries, oldest first), in this test's hook mode.

    In their own process: every hook. With a resident: the first hook in-process (none ran yet), which
    starts one, and every hook from ``entries[first_turn]`` on (the later turns) by the resident; a hook of
    the first turn after its first may come while the resident still starts.
    """
    paths = [(e["event"], e["answered_by"], e["fallback"]) for e in entries]
    if os.environ.get("NIA_RESIDENT") != "1":
        assert {e["answered_by"] for e in entries} == {"in-process"}, paths
        return
    assert entries[0]["answered_by"] == "in-process" and "yet" in entries[0]["fallback"], paths
    assert len(entries) > first_turn and {e["answered_by"] for e in entries[first_turn:]} == {"resident"}, paths


@contextmanager
def isolated(tmp_path_factory: pytest.TempPathFactory, resident: bool = False) -> Iterator[Path]:
    """The environment every test gets (tests/conftest.py), for a module-scoped fixture, which runs before it.

    A module's tests share one recorded agent session: the fixture drives the
    agent inside this environment and the tests assert on what it recorded.
    """
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as monkeypatch:
        runtime = isolate(monkeypatch, home, tmp_path_factory.getbasetemp())
        if resident:  # as a user runs nia: a resident process answers the hooks after the first
            monkeypatch.setenv("NIA_RESIDENT", "1")
        try:
            yield home
        finally:
            stop_residents(runtime)


@dataclass
class Step:
    """One agent turn of a shared session, as recorded: what the agent sent the model and what nia logged."""

    session: str
    requests: list[Recorded]
    """Every model request of the turn, in order (side calls and summaries included)."""
    log: list[dict]
    """nia's hook log after the turn (``nia hook log --json``), oldest first."""


@pytest.fixture
def server():
    with FakeModel() as fake:
        yield fake


@pytest.fixture
def agent_home(tmp_path: Path) -> Path:
    home = tmp_path / "agent-home"
    home.mkdir()
    return home


@pytest.fixture(scope="session")
def copilot_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where Copilot unpacks its runtime on its first start (``COPILOT_CACHE_HOME``), shared by a test session."""
    return tmp_path_factory.mktemp("copilot-cache")


def record(agent: Any, server: FakeModel, *turn: Any) -> Step:
    """One turn of ``agent`` (its ``turn(prompt, session, ...)``), which must succeed, as a :class:`Step`."""
    from tests.resident_helpers import RESIDENT, one_hook

    before = len(server.model_requests())
    RESIDENT["on"] = os.environ.get("NIA_RESIDENT") == "1"
    try:
        with one_hook():  # the resident the turn's first hook started answers the next turn's
            result = agent.turn(*turn)
    finally:
        RESIDENT["on"] = False
    assert result.returncode == 0, result.stderr[-2000:] + result.stdout[-2000:]
    assert result.session_id
    return Step(result.session_id, server.model_requests()[before:], hook_log(agent.project))


def pytest_generate_tests(metafunc):
    """A test marked ``both_hook_modes`` runs twice: its hooks answered in their own process, and by a resident."""
    if metafunc.definition.get_closest_marker("both_hook_modes"):
        metafunc.parametrize("real_hook_mode", ["in-process", "resident"], indirect=True)


@pytest.fixture(autouse=True)
def real_hook_mode(request, monkeypatch):
    """The hooks answered in their own process; by a resident process too where the test is marked.

    One test per hook agent is marked: several resumed turns with an update and a removal, whose hooks
    after the first are answered by the resident process the first started (tests/resident_helpers
    waits for it between turns and checks who answered). Every other path a resident takes is the
    in-process one it shares (nia_core/agents/answer.py), run both ways by tests/agents and
    tests/resident against the fake hosts, at a fraction of a real agent's cost.
    """
    from tests.resident_helpers import resident_mode

    with resident_mode(monkeypatch, getattr(request, "param", "in-process") == "resident") as mode:
        yield mode
