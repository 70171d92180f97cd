"""What a ``UserPromptSubmit`` hook process imports (the agent waits for it at every prompt; bench/bench_hook.py).

Timings belong in the benchmark; this guards the cause: the hook must not
load modules that only other commands, a failure, a write of a cache, a
configured time zone or a ``project.toml`` need. Modules the bare interpreter
already holds at start-up (an editable install's finder may bring some) are
not the hook's doing and are left out of the comparison.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROBE = """\
import sys, atexit
atexit.register(lambda: sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n"))
sys.argv = ["nia", "hook", "claude-code"]
from nia_core.cli import main
main()
"""

BARE = "import sys; print(' '.join(sorted(sys.modules)))"

PLUGIN = """\
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    path = location.root / "rule.txt"
    return [ContextSource(key="acme/rule", load=lambda: path.read_text().strip(), baseline=lambda v: "Rule: " + v)]
"""

NEVER = {
    # other commands and doors
    "click",
    "tomlkit",
    "nia_core.cli.commands",
    "nia_core.agents.hook_install",
    "nia_core.mcp",
    "nia_core.providers.lookup",
    "nia_core.providers.transport",
    "nia_core.sessions.postgres",
    "nia_core.sessions.compaction",
    "nia_core.sessions.moves",
    "http.client",
    "urllib.request",
    "ssl",
    "asyncio",
    "subprocess",
    # the uncached entry-point scan (the cache is warm), and writing caches or files
    "importlib_metadata",
    "zipfile",
    "email",
    "tempfile",
    "shutil",
    "bz2",
    "lzma",
    "random",
    "secrets",
    # OpenSSL: nia_core.digest hashes small inputs with CPython's own SHA-256
    "hashlib",
    "_hashlib",
    # importlib.abc pulls importlib.resources, tempfile and shutil
    "importlib.abc",
    "importlib.resources",
    # only for a configured time zone, a name that is not a hook, a project.toml, the CLI's SIGINT handler
    "zoneinfo",
    "difflib",
    "tomllib",
    "signal",
    "platform",
}

LOGGING = {"logging", "traceback", "string"}
"""Imported when something is logged (nia_core.lazylog): an unchanged or changed prompt that logs nothing never is."""


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


def run_hook(project: Path, probe: Path, event: str, source: str = "") -> set[str]:
    return set(hook_process(project, probe, event, source).stderr.rsplit("MODULES ", 1)[1].split())


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"  # sys.path[0] of the hook process, as the console script's folder would be
    folder.mkdir()
    script = folder / "nia_probe.py"
    script.write_text(PROBE)
    past = time.time() - 3600  # settled: the entry-point cache trusts the folder's mtime
    os.utime(folder, (past, past))
    return script


def test_an_unchanged_and_a_changed_prompt_import_only_the_hooks_path(project, probe):
    bare = set(subprocess.run([sys.executable, "-c", BARE], capture_output=True, text=True).stdout.split())
    run_hook(project, probe, "SessionStart", "startup")  # the session exists, the entry-point cache is written
    unchanged = run_hook(project, probe, "UserPromptSubmit")
    assert "nia_core.agents.answer" in unchanged and "nia_core.sessions.sqlite" in unchanged
    assert (unchanged & (NEVER | LOGGING)) - bare == set()
    (project / "rule.txt").write_text("rule 1\n")
    changed = run_hook(project, probe, "UserPromptSubmit")
    assert (changed & (NEVER | LOGGING)) - bare == set()


def test_a_configured_time_zone_and_a_project_toml_still_work(project, probe):
    """The modules left out above load on demand: the date in a named zone, a [hooks] setting read."""
    (project / ".nia" / "project.toml").write_text('[plugins.nia-date]\ntimezone = "Pacific/Kiritimati"\n')
    modules = run_hook(project, probe, "SessionStart", "startup")
    assert {"zoneinfo", "tomllib"} <= modules


def test_a_plugins_own_logging_warning_still_reaches_stderr_with_the_nia_prefix(project, probe):
    """The door's handler is installed when anyone imports logging, not only nia's lazy loggers."""
    (project / ".nia" / "plugins" / "loud.py").write_text(
        "import logging\n"
        "logging.getLogger('nia.plugins.loud').warning('LOUD WARNING')\n"
        "logging.getLogger('nia.plugins.loud').debug('LOUD DEBUG')\n"
    )
    err = hook_process(project, probe, "SessionStart", "startup").stderr
    assert "nia: LOUD WARNING" in err.splitlines() and "LOUD DEBUG" not in err
    err = hook_process(project, probe, "UserPromptSubmit", NIA_DEBUG="1").stderr
    assert "nia: LOUD WARNING" in err.splitlines() and "nia: LOUD DEBUG" in err.splitlines()


def test_nia_debug_shows_the_debug_lines_of_lazy_loggers(project, probe):
    hook_process(project, probe, "SessionStart", "startup")
    done = hook_process(project, probe, "UserPromptSubmit", NIA_DEBUG="1")
    assert any(line.startswith("nia: entry points: ") for line in done.stderr.splitlines()), done.stderr
    assert "logging" in done.stderr.rsplit("MODULES ", 1)[1].split()


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
