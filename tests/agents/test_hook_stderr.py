"""The agent hook as its own process: what it says on stderr (``nia:`` lines, ``NIA_DEBUG``), its entry-point cache,
what it imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROBE = """\
import sys, atexit, os
if os.environ.get("SHOW_MODULES"):
    atexit.register(lambda: sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n"))
sys.argv = ["nia", "hook", "claude-code"]
from nia_core.cli import main
main()
"""

PLUGIN = """\
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    path = location.root / "rule.txt"
    return [ContextSource(key="acme/rule", load=lambda: path.read_text().strip(), baseline=lambda v: "Rule: " + v)]
"""


@pytest.fixture
def hook_mode():
    """One mode only: what the in-process hook imports; the thin client's own imports are tests/resident's."""
    return "in-process"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / ".nia" / "plugins" / "acme.py").write_text(PLUGIN)
    (root / "AGENTS.md").write_text("Use tabs.\n")
    (root / "rule.txt").write_text("rule 0\n")
    return root


def hook_process(project: Path, probe: Path, event: str, source: str = "", **env: str) -> subprocess.CompletedProcess:
    payload = {"session_id": "imports", "cwd": str(project), "hook_event_name": event, "prompt": "go on"}
    if source:
        payload["source"] = source
    done = subprocess.run(
        [sys.executable, str(probe)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=project,
        timeout=60,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"  # sys.path[0] of the hook process, as the console script's folder would be
    folder.mkdir()
    script = folder / "nia_probe.py"
    script.write_text(PROBE)
    past = time.time() - 3600  # settled: the entry-point cache trusts the folder's mtime
    os.utime(folder, (past, past))
    return script


def test_a_plugins_own_logging_warning_still_reaches_stderr_with_the_nia_prefix(project, probe):
    """The hook's ``nia:`` handler sits on the ``nia`` logger, which a plugin's own ``nia.plugins.*`` logger reaches."""
    (project / ".nia" / "plugins" / "loud.py").write_text(
        "import logging\n"
        "logging.getLogger('nia.plugins.loud').warning('LOUD WARNING')\n"
        "logging.getLogger('nia.plugins.loud').debug('LOUD DEBUG')\n"
    )
    err = hook_process(project, probe, "SessionStart", "startup").stderr
    assert "nia: LOUD WARNING" in err.splitlines() and "LOUD DEBUG" not in err
    err = hook_process(project, probe, "UserPromptSubmit", NIA_DEBUG="1").stderr
    assert "nia: LOUD WARNING" in err.splitlines() and "nia: LOUD DEBUG" in err.splitlines()


def test_nia_debug_shows_nias_own_debug_lines_and_nothing_shows_them_without_it(project, probe):
    hook_process(project, probe, "SessionStart", "startup")
    done = hook_process(project, probe, "UserPromptSubmit", NIA_DEBUG="1")
    assert any(line.startswith("nia: entry points: ") for line in done.stderr.splitlines()), done.stderr
    quiet = hook_process(project, probe, "UserPromptSubmit")
    assert not any(line.startswith("nia: entry points: ") for line in quiet.stderr.splitlines()), quiet.stderr


def test_two_sys_paths_of_one_interpreter_do_not_evict_each_others_entry_point_cache(project, probe, tmp_path):
    """A hook with PYTHONPATH and one without alternate: each scans installed plugins once, then reads its cache."""
    extra = tmp_path / "extra"
    extra.mkdir()
    past = time.time() - 3600
    os.utime(extra, (past, past))
    variants: list[dict[str, str]] = [{}, {"PYTHONPATH": str(extra)}]
    scanned = []
    for _round in range(3):
        for variant in variants:
            err = hook_process(project, probe, "UserPromptSubmit", NIA_DEBUG="1", **variant).stderr
            scanned.append(any(line.startswith("nia: entry points: scanned") for line in err.splitlines()))
    assert scanned == [True, True, False, False, False, False]
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "nia"
    assert len(list(cache.glob("entry-points-*.json"))) == 2


OTHER_DOORS = {
    "nia_core.sessions.turn",  # a session's model turn (nia session send, the workflows)
    "nia_core.sessions.projection",  # the request a turn sends
    "nia_core.model",  # provider requests and replies, the provider table
    "nia_core.runtime.turn_report",  # a turn's report
    "nia_core.sessions.replacement",  # nia session compact / a model switch, applied now
    "nia_core.sessions.listing",  # nia session ls
    "nia_core.project.commands_config",  # commands.toml's workflows
}


def test_an_unchanged_prompt_answered_in_process_imports_no_module_of_another_door(project, probe):
    """The hook defines only the types a hook can use: every class it imports costs each prompt its creation."""
    hook_process(project, probe, "SessionStart", "startup")
    hook_process(project, probe, "UserPromptSubmit")  # the entry-point cache is written by now
    err = hook_process(project, probe, "UserPromptSubmit", SHOW_MODULES="1").stderr
    assert set(err.rpartition("\nMODULES ")[2].split()) & OTHER_DOORS == set()


def test_a_hook_that_asks_no_resident_process_loads_no_socket_code(project, probe):
    """``NIA_RESIDENT=0`` (and a first hook, before any resident exists) never connects: ``socket`` is not loaded."""
    hook_process(project, probe, "SessionStart", "startup", NIA_RESIDENT="0")
    err = hook_process(project, probe, "UserPromptSubmit", NIA_RESIDENT="0", SHOW_MODULES="1").stderr
    assert "socket" not in err.rpartition("\nMODULES ")[2].split()
