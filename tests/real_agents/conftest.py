"""Fixtures for the end-to-end tests against the real agents (see harness.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.real_agents.fakemodel import FakeModel
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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("AGENTS-SAYS: use tabs.\n")
    write_plugin(root, "one")
    return root


@pytest.fixture
def server():
    with FakeModel() as fake:
        yield fake


@pytest.fixture
def agent_home(tmp_path: Path) -> Path:
    home = tmp_path / "agent-home"
    home.mkdir()
    return home


def pytest_generate_tests(metafunc):
    """A test marked ``both_hook_modes`` runs twice: its hooks answered in their own process, and by a resident."""
    if metafunc.definition.get_closest_marker("both_hook_modes"):
        metafunc.parametrize("real_hook_mode", ["in-process", "resident"], indirect=True)


@pytest.fixture(autouse=True)
def real_hook_mode(request, monkeypatch):
    """The hooks answered in their own process; by a resident process too where the test is marked.

    One test per agent is marked: several resumed turns with an update and a removal, whose hooks
    after the first are answered by the resident process the first started (tests/resident_helpers
    waits for it between turns and checks who answered). Every other path a resident takes is the
    in-process one it shares (nia_core/agents/answer.py), run both ways by tests/agents and
    tests/resident against the fake hosts, at a fraction of a real agent's cost.
    """
    from tests.resident_helpers import resident_mode

    with resident_mode(monkeypatch, getattr(request, "param", "in-process") == "resident") as mode:
        yield mode
