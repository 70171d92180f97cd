"""The cheap start path: what ``nia --help`` and ``nia context show`` processes import (see bench/bench_startup.py).

Timings belong in the benchmark; these tests guard the cause instead: a
command must not load the store, sessions, providers, HTTP or the other
built-in commands' code it does not use. ``--help`` still lists the plugin
commands and workflow targets, so the plugin host is loaded, but nothing more.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROBE = (
    "import sys, atexit\n"
    "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
    "sys.argv = ['nia', *sys.argv[1:]]\n"
    "from nia_core.cli import main\n"
    "main()\n"
)

PLUGIN = """\
import click
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_register_commands(cli):
    @cli.command(help="Greet from a local plugin.")
    def greet():
        click.echo("hello")

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="acme/colour", load=lambda: "green", baseline=lambda v: "Colour: " + v)]
"""

COMMANDS = """\
[[workflows]]
target = "issue"
description = "Work with issues"

[[workflows.operations]]
name = "draft"
task_prompt = "Draft an issue."
"""

NEVER = {
    "sqlite3",
    "http.client",
    "urllib.request",
    "ssl",
    "asyncio",
    "tomlkit",
    "importlib_metadata",
    "nia_core.sessions",
    "nia_core.runtime.reports",
    "nia_core.runtime.attached",
    "nia_core.providers.lookup",
    "nia_core.providers.http",
    "nia_core.mcp",
    "nia_core.hosts",
}
"""Modules neither command needs: the store, HTTP, MCP, the agent hooks, the full entry-point scan (cached)."""

OTHER_COMMANDS = {f"nia_core.cli.{name}" for name in ("session", "dev", "plugins", "db", "hook", "mcp", "turn")}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / ".nia" / "plugins" / "acme.py").write_text(PLUGIN)
    (root / ".nia" / "commands.toml").write_text(COMMANDS)
    (root / "AGENTS.md").write_text("# Agents\n\nRun the tests.\n")
    past = time.time() - 3600
    os.utime(root, (past, past))  # sys.path[0]: a folder changed this very second keeps the scan cache unwritten
    return root


def loaded(project: Path, *args: str) -> tuple[str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=project, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    _, _, modules = done.stderr.rpartition("\nMODULES ")
    return done.stdout, set(modules.split())


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m in NEVER or m.rpartition(".")[0] in NEVER or m.startswith("nia_core.sessions.")}


def test_help_lists_plugin_commands_and_workflows_without_loading_the_store_or_other_commands(project):
    # twice: the first run may write the entry-point cache, the second is the everyday start
    loaded(project, "--help")
    stdout, modules = loaded(project, "--help")
    assert "greet" in stdout and "Greet from a local plugin." in stdout
    assert "issue" in stdout and "Work with issues" in stdout
    assert "context" in stdout and "session" in stdout
    assert heavy(modules) == set()
    assert modules & (OTHER_COMMANDS | {"nia_core.cli.context"}) == set()


def test_context_show_loads_its_command_and_the_engine_only(project):
    loaded(project, "context", "show")
    stdout, modules = loaded(project, "context", "show")
    assert "Colour: green" in stdout and "Run the tests." in stdout
    assert "nia_core.cli.context" in modules
    assert heavy(modules) == set()
    assert modules & OTHER_COMMANDS == set()


def test_importing_the_command_line_loads_no_engine_until_a_command_runs():
    done = subprocess.run(
        [sys.executable, "-c", "import sys, nia_core.cli.main; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules = set(done.stdout.split())
    assert {"nia_core.context", "nia_core.model", "nia_core.host", "nia_core.runtime"} & modules == set()
