"""Fixtures for the end-to-end tests against the real agents (see harness.py)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.real_agents.fakemodel import FakeModel, is_side_call
from tests.real_agents.harness import OpenCode, agent_binary, nia_program, request_text

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


@dataclass
class FirstStart:
    """OpenCode's first start with nia's plugin in a fresh project (see :func:`opencode_deps`)."""

    folder: Path
    """The project's ``.opencode``, where OpenCode installed ``@opencode-ai/plugin``."""
    seconds: float
    untracked: str
    """``git status --porcelain --untracked-files=all`` in the project after that start."""
    said: str
    """What ``nia hook install opencode`` said."""
    sent: str
    """Every text of the conversation request OpenCode sent."""


@pytest.fixture(scope="session")
def opencode_deps(tmp_path_factory: pytest.TempPathFactory) -> FirstStart:
    """OpenCode's first start in a project with nia's plugin, once per test session.

    That start installs ``@opencode-ai/plugin`` from the npm registry into the
    project's ``.opencode`` (and the user's config folder): the one network
    cost of the OpenCode tests. Every other test links to what it installed
    (:class:`~tests.real_agents.harness.OpenCode` ``deps``).
    """
    agent_binary("opencode")
    base = tmp_path_factory.mktemp("opencode-first-start")
    root = base / "shop"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "AGENTS.md").write_text("AGENTS-SAYS: use tabs.\n")
    write_plugin(root, "one")
    folders = {name: base / name for name in ("config", "data", "state", "cache")}
    env = {f"XDG_{name.upper()}_HOME": str(path) for name, path in folders.items()}
    said = subprocess.run(
        [nia_program(), "hook", "install", "opencode"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert said.returncode == 0, said.stderr
    with FakeModel() as fake:
        agent = OpenCode(root, base / "home", fake, extra_env=env)
        agent.home.mkdir()
        started = time.monotonic()
        turn = agent.turn("hello")
        seconds = time.monotonic() - started
        assert turn.returncode == 0, turn.stderr[-2000:]
        sent = [r for r in fake.model_requests() if not is_side_call(r.body)]
        assert sent, "OpenCode sent no conversation request"
    untracked = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, capture_output=True, text=True
    ).stdout
    return FirstStart(root / ".opencode", seconds, untracked, said.stdout, request_text(sent[-1].body))


@pytest.fixture(scope="session")
def copilot_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where Copilot unpacks its runtime on its first start (``COPILOT_CACHE_HOME``), shared by a test session."""
    return tmp_path_factory.mktemp("copilot-cache")
