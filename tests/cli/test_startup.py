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
    "nia_core.providers.transport",
    "nia_core.mcp",
    "nia_core.agents",
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


def loaded(project: Path, *args: str, env: dict[str, str] | None = None) -> tuple[str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=120,
        check=False,
        env=env,
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


NOT_FOR_CONTEXT_SHOW = {
    "nia_core.model",
    "nia_core.providers",
    "nia_core.project.workflow",
    "nia_core.project.merge",
    "nia_core.project.prompt",
}
"""What ``context show`` has no use for: models and providers, workflows, project context merging (no
project.toml)."""


def test_context_show_loads_its_command_and_the_engine_only(project):
    loaded(project, "context", "show")
    stdout, modules = loaded(project, "context", "show")
    assert "Colour: green" in stdout and "Run the tests." in stdout
    assert "nia_core.cli.context" in modules
    assert heavy(modules) == set()
    assert modules & OTHER_COMMANDS == set()
    assert modules & NOT_FOR_CONTEXT_SHOW == set()


def test_importing_the_command_line_loads_no_engine_until_a_command_runs():
    done = subprocess.run(
        [sys.executable, "-c", "import sys, nia_core.cli.commands; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules = set(done.stdout.split())
    assert {"nia_core.context", "nia_core.model", "nia_core.plugin_host", "nia_core.runtime"} & modules == set()


# -- the cached `nia --help` --------------------------------------------------------------------

PLUGIN_HOST = {
    "pluggy",
    "nia_core.plugin_host.manager",
    "nia_core.plugin_host.discovery",
    "nia_core.context",
    "nia_core.project.config",
}
"""What listing plugin commands imports; a cached ``--help`` imports none of it."""

PACKAGE = """\
import click
from nia_core import hookimpl
from nia_local_plugins.shelf.texts import HELP

@hookimpl
def nia_register_commands(cli):
    @cli.command(help=HELP)
    def shelve():
        click.echo("shelved")
"""


def age(*paths: Path) -> None:
    """Every file and folder under ``paths`` as if written an hour ago: old enough for the cache to trust."""
    past = time.time() - 3600
    for top in paths:
        for path in [top, *top.rglob("*")]:
            os.utime(path, (past, past))


@pytest.fixture
def cached(project: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The project after one ``nia --help`` wrote its rows, and the environment that finds them."""
    package = project / ".nia" / "plugins" / "shelf"
    package.mkdir()
    (package / "__init__.py").write_text(PACKAGE)
    (package / "texts.py").write_text('HELP = "Put things on the shelf."\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIA_")}
    env["NIA_CACHE_DIR"] = str(tmp_path / "cache")
    age(project)
    loaded(project, "--help", env=env)
    assert list((tmp_path / "cache").glob("help-*.json")), "the first --help wrote no rows"
    return project, env


def help_of(project: Path, env: dict[str, str], *args: str) -> tuple[str, set[str]]:
    """``nia ARGS --help``, checked against the same command with every cache off."""
    stdout, modules = loaded(project, *args, "--help", env=env)
    uncached, _ = loaded(project, *args, "--help", env={**env, "NIA_NO_CACHE": "1"})
    assert stdout == uncached
    return stdout, modules


def test_a_cached_help_lists_plugin_commands_without_importing_any_plugin(cached):
    project, env = cached
    stdout, modules = help_of(project, env)
    assert "greet" in stdout and "Greet from a local plugin." in stdout
    assert "shelve" in stdout and "Put things on the shelf." in stdout
    assert "issue" in stdout and "Work with issues" in stdout
    assert modules & PLUGIN_HOST == set()
    assert not any(m.startswith(("nia_local_plugins", "nia_plugins")) for m in modules)
    assert heavy(modules) == set()


def test_a_plugin_command_added_or_removed_shows_at_once(cached):
    project, env = cached
    (project / ".nia" / "plugins" / "late.py").write_text(
        PLUGIN.replace("greet", "wave").replace("Greet from a local plugin.", "Wave from a late plugin.")
    )
    stdout, _ = help_of(project, env)
    assert "Wave from a late plugin." in stdout
    (project / ".nia" / "plugins" / "acme.py").unlink()
    stdout, _ = help_of(project, env)
    assert "greet" not in stdout and "wave" in stdout


def test_editing_a_module_a_plugin_imports_shows_at_once(cached):
    project, env = cached
    (project / ".nia" / "plugins" / "shelf" / "texts.py").write_text('HELP = "Take things off the shelf."\n')
    stdout, _ = help_of(project, env)
    assert "Take things off the shelf." in stdout and "Put things" not in stdout


@pytest.mark.parametrize("how", ["config", "flag", "environment"])
def test_a_plugin_switched_off_loses_its_command_at_once(cached, how):
    project, env = cached
    args: tuple[str, ...] = ()
    if how == "config":
        (project / ".nia" / "project.toml").write_text('[plugins]\ndisabled = ["acme"]\n')
    elif how == "flag":
        args = ("-p", "no:acme")
    else:
        env = {**env, "NIA_DISABLE_PLUGINS": "acme"}
    stdout, _ = help_of(project, env, *args)
    assert "greet" not in stdout and "shelve" in stdout


def test_a_plugins_dir_and_a_new_workflow_target_show_at_once(cached, tmp_path):
    project, env = cached
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "far.py").write_text(PLUGIN.replace("greet", "beam").replace("Greet from", "Beam from"))
    stdout, _ = help_of(project, env, "--plugins-dir", str(extra))
    assert "Beam from a local plugin." in stdout
    with (project / ".nia" / "commands.toml").open("a") as out:
        out.write('\n[[workflows]]\ntarget = "release"\ndescription = "Cut a release"\n')
    stdout, _ = help_of(project, env)
    assert "Cut a release" in stdout and "beam" not in stdout


def test_an_installed_plugin_shows_at_once_and_goes_with_its_distribution(cached, tmp_path):
    project, env = cached
    site = tmp_path / "site"
    (site / "acme_pack").mkdir(parents=True)
    (site / "acme_pack" / "__init__.py").write_text(PLUGIN.replace("greet", "pack").replace("Greet from", "Pack from"))
    env = {**env, "PYTHONPATH": str(site)}
    age(site)
    loaded(project, "--help", env=env)  # cached with the folder empty of distributions
    info = site / "acme_pack-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-pack\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[nia]\nacme-pack = acme_pack\n")
    stdout, _ = help_of(project, env)
    assert "Pack from a local plugin." in stdout
    age(site)
    loaded(project, "--help", env=env)  # cached with the distribution
    for path in sorted(info.iterdir()):
        path.unlink()
    info.rmdir()
    stdout, _ = help_of(project, env)
    assert "Pack from" not in stdout


def test_a_broken_plugin_is_reported_by_every_help_never_cached(cached):
    project, env = cached
    (project / ".nia" / "plugins" / "bad.py").write_text("x = (\n")
    age(project)
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", PROBE, "--help"], capture_output=True, text=True, cwd=project, env=env, timeout=120
        )
        assert "plugin 'bad': failed to import" in done.stderr
        assert "greet" in done.stdout


@pytest.mark.parametrize("args", [("-p", "no:acme", "--help"), ("--help", "-p", "no:acme")])
def test_the_global_options_before_or_after_help_apply_to_the_listing(project, args):
    stdout, _ = loaded(project, *args)
    assert "greet" not in stdout and "issue" in stdout


def test_outside_a_repository_the_git_plugin_loads_none_of_its_code_but_still_checks_its_settings(tmp_path):
    """Nor is the import machinery of local plugins loaded where there are none."""
    root = tmp_path / "plain"
    (root / ".nia").mkdir(parents=True)
    (root / "AGENTS.md").write_text("# Agents\n\nNo repository here.\n")
    stdout, modules = loaded(root, "context", "show")
    assert "No repository here." in stdout and "Git status" not in stdout
    assert "nia_plugins.git" in modules and not [m for m in modules if m.startswith("nia_plugins.git.")]
    assert "nia_core.plugin_host.localimport" not in modules  # no local plugin, no editable one
    (root / ".nia" / "project.toml").write_text("[plugins.nia-git]\npaths = -1\n")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "context", "show"], capture_output=True, text=True, cwd=root, timeout=120
    )
    assert "[plugins.nia-git] paths must be a whole number, 0 or more, not -1" in done.stderr


EXIT_PLUGIN = """\
import atexit, sys
from nia_core import ContextSource, hookimpl

atexit.register(lambda: sys.stderr.write("plugin atexit ran\\n"))

@hookimpl
def nia_context_sources(location):
    handle = open("written-at-exit.txt", "w")
    handle.write("flushed by the atexit handler")
    atexit.register(handle.close)
    return [ContextSource(key="exiter/x", load=lambda: "x", baseline=lambda v: "Exit plugin: " + v)]
"""


def test_context_show_runs_a_plugins_atexit_handlers(project):
    """A plugin's ``atexit`` handler runs when ``context show`` ends, and what it writes is kept."""
    (project / ".nia" / "plugins" / "exiter.py").write_text(EXIT_PLUGIN)
    done = subprocess.run(
        [sys.executable, "-c", "from nia_core.cli import main; main()", "context", "show"],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Exit plugin: x" in done.stdout and "Run the tests." in done.stdout
    assert "plugin atexit ran" in done.stderr
    assert (project / "written-at-exit.txt").read_text() == "flushed by the atexit handler"


def test_a_failing_context_show_keeps_its_exit_status(project):
    (project / ".nia" / "project.toml").write_text("[project\n")
    done = subprocess.run(
        [sys.executable, "-c", "from nia_core.cli import main; main()", "context", "show"],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=120,
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.startswith("Error: ") and "project.toml" in done.stderr
