"""Live development through the hooks: each hook is a fresh process, and nothing stale hides an edit.

A local plugin (``.nia/plugins``) and an editable-installed one are edited
between two prompts in the way that defeats ``.pyc`` caching (same size, same
modification time); the next prompt's hook must still report the edit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.resident_helpers import one_hook

SOURCE = """
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="{key}", load=lambda: "{value}", baseline=lambda v: f"LIVE {{v}}",
                          removal=lambda v: "LIVE-REMOVED")]
"""


def hook(project: Path, env: dict[str, str], event: str, source: str = "") -> str | None:
    payload = {"session_id": "live", "cwd": str(project), "hook_event_name": event}
    if source:
        payload["source"] = source
    with one_hook(env):
        done = subprocess.run(
            [sys.executable, "-c", "from nia_core.cli import main; main()", "hook", "claude-code"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=env,
            cwd=project,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        return None
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def edit_keeping_size_and_mtime(path: Path, old: str, new: str) -> None:
    assert len(old) == len(new)
    stat = path.stat()
    path.write_text(path.read_text().replace(old, new))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # what a stale .pyc cannot tell apart


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    return root


def test_an_edited_local_plugin_is_an_update_and_a_deleted_one_a_removal(project):
    plugin = project / ".nia" / "plugins" / "live.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(SOURCE.format(key="live/local", value="aaa"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # bytecode as users have it
    assert "LIVE aaa" in (hook(project, env, "SessionStart", "startup") or "")
    edit_keeping_size_and_mtime(plugin, '"aaa"', '"bbb"')
    assert hook(project, env, "UserPromptSubmit") == "LIVE bbb"
    plugin.unlink()
    assert hook(project, env, "UserPromptSubmit") == "LIVE-REMOVED"


def test_an_edited_editable_install_is_an_update(project, tmp_path):
    site, src = tmp_path / "site", tmp_path / "src"
    package = src / "acme_live"
    package.mkdir(parents=True)
    module = package / "__init__.py"
    module.write_text(SOURCE.format(key="live/editable", value="aaa"))
    dist = site / "acme_live-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-live\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[nia]\nacme-live = acme_live\n")
    (dist / "direct_url.json").write_text(json.dumps({"url": src.as_uri(), "dir_info": {"editable": True}}))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # bytecode as users have it
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(src)])
    assert "LIVE aaa" in (hook(project, env, "SessionStart", "startup") or "")
    edit_keeping_size_and_mtime(module, '"aaa"', '"bbb"')
    assert hook(project, env, "UserPromptSubmit") == "LIVE bbb"
    assert not list(package.glob("__pycache__/*.pyc"))  # compiled from source, nothing cached to go stale


def test_the_hook_process_loads_no_click_and_no_provider_or_http_code(project):
    """The agent waits for the hook at every prompt: its import path stays lean (see bench/bench_hook.py)."""
    payload = json.dumps({"session_id": "lean", "cwd": str(project), "hook_event_name": "UserPromptSubmit"})
    probe = (
        "import sys, atexit\n"
        "atexit.register(lambda: sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
        "sys.argv = ['nia', 'hook', 'claude-code']\n"
        "from nia_core.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], input=payload, capture_output=True, text=True, cwd=project, timeout=60
    )
    assert done.returncode == 0, done.stderr
    modules = set(done.stderr.split("MODULES ", 1)[1].split())
    assert "nia_core.agents.answer" in modules
    heavy = {"click", "http.client", "urllib.request", "nia_core.providers.builtin", "nia_core.providers.transport"}
    assert modules & heavy == set()
