"""End to end: render the template, install it with nia (from a wheel) in a fresh venv, run its tests, see it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.venvs import child_venv

REPOSITORY = Path(__file__).resolve().parents[2]
JUNK = shutil.ignore_patterns("__pycache__", "build", "*.egg-info", ".pytest_cache")


def sh(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run from ``cwd`` (never the checkout, whose nia_core would shadow the installed one)."""
    result = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, cwd=cwd, env=env, timeout=180, check=False
    )
    assert result.returncode == 0, f"{command}: {result.stdout}{result.stderr}"
    return result.stdout


@pytest.mark.slow
def test_a_rendered_plugin_installs_tests_lists_and_contributes(tmp_path):
    # nia as a user gets it: built into a wheel from a copy of the sources, so package data must carry the template.
    source = tmp_path / "nia-src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPOSITORY / name, source / name)
    for name in ("nia_core", "nia_plugins", "plugin-template"):
        shutil.copytree(REPOSITORY / name, source / name, symlinks=True, ignore=JUNK)
    venv = tmp_path / "venv"
    # The child venv borrows pip, pytest and nia's dependencies from ours; nia itself is installed fresh below.
    python = child_venv(venv)
    nia = venv / "bin" / "nia"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    sh(
        python, "-m", "pip", "install", "-q", "setuptools>=70.1", cwd=tmp_path, env=env
    )  # so builds need no isolated env
    env["PIP_NO_BUILD_ISOLATION"] = "0"
    sh(python, "-m", "pip", "install", "-q", "--no-deps", source, cwd=tmp_path, env=env)
    installed = sh(
        python, "-c", "import nia_core.plugin_template as t; print(t.template_dir())", cwd=tmp_path, env=env
    ).strip()
    assert installed.startswith(str(venv)), installed

    plugin = tmp_path / "nia-notes"
    sh(nia, "plugin", "new", "nia-notes", "--dir", plugin, cwd=tmp_path, env=env)
    assert "Plugins now available: nia-notes" in sh(nia, "plugins", "install", plugin, cwd=tmp_path, env=env)

    assert "5 passed" in sh(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=plugin, env=env)
    # The "Next:" lines end in a visible result: the plugin's own NOTES.md, through the plugin.
    shown = sh(nia, "context", "show", cwd=plugin, env=env)
    assert "Project notes (NOTES.md):\n\n# Notes for the model\n\nnia-notes put this file" in shown

    project = tmp_path / "project"
    (project / ".nia").mkdir(parents=True)
    (project / "NOTES.md").write_text("Ship on Fridays.\n")
    (listed,) = json.loads(sh(nia, "plugins", "list", "--json", cwd=project, env=env))
    assert (listed["name"], listed["distribution"], listed["status"]) == ("nia-notes", "nia-notes", "enabled")
    assert listed["source_keys"] == ["notes/notes"] and listed["hooks"] == ["nia_context_sources"]
    assert "Project notes (NOTES.md):\n\nShip on Fridays.\n" in sh(nia, "context", "show", cwd=project, env=env)

    sh(nia, "plugins", "disable", "nia-notes", cwd=project, env=env)
    assert "Project notes" not in sh(nia, "context", "show", cwd=project, env=env)
    sh(nia, "plugins", "enable", "nia-notes", cwd=project, env=env)

    assert "Plugins removed: nia-notes" in sh(nia, "plugins", "uninstall", "--yes", "nia-notes", cwd=tmp_path, env=env)
    assert json.loads(sh(nia, "plugins", "list", "--json", cwd=project, env=env)) == []

    # The same round trip, machine-readable: pip's own output stays on stderr.
    added = json.loads(sh(nia, "plugins", "install", "--json", plugin, cwd=tmp_path, env=env))
    assert added == {"installed": ["nia-notes-0.1.0"], "plugins_added": ["nia-notes"]}
    gone = json.loads(sh(nia, "plugins", "uninstall", "--yes", "--json", "nia-notes", cwd=tmp_path, env=env))
    assert gone == {"uninstalled": ["nia-notes-0.1.0"], "plugins_removed": ["nia-notes"]}


def _commands(readme: str, section: str) -> list[str]:
    """The commands of the first ``bash`` block under the README heading ``section``, comments dropped."""
    after = readme.split(f"## {section}\n", 1)[1]
    block = after.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_a_generated_plugins_own_commands_work_where_the_package_index_has_no_nia(tmp_path):
    """nia-context is not on the index: the README's commands take nia from where ``nia plugin new``'s nia came from."""
    source = tmp_path / "nia-src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPOSITORY / name, source / name)
    for name in ("nia_core", "nia_plugins", "plugin-template"):
        shutil.copytree(REPOSITORY / name, source / name, symlinks=True, ignore=JUNK)
    python = child_venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV", "NIA_SOURCE")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    sh(python, "-m", "pip", "install", "-q", "setuptools>=70.1", cwd=tmp_path, env=env)
    build = {**env, "PIP_NO_BUILD_ISOLATION": "0"}
    sh(python, "-m", "pip", "install", "-q", "--no-deps", source, cwd=tmp_path, env=build)
    plugin = tmp_path / "nia-notes"
    nia = tmp_path / "venv" / "bin" / "nia"
    created = sh(nia, "plugin", "new", "nia-notes", "--dir", plugin, cwd=tmp_path, env=env)
    assert f"nia for its own virtualenv: {source}" in created

    readme = (plugin / "README.md").read_text()
    develop = [c for c in _commands(readme, "Develop it with live reload") if not c.startswith(("cd ", "nia dev"))]
    assert develop[1] == f'pip install "${{NIA_SOURCE:-{source}}}"', develop
    script = " && ".join([*develop, *_commands(readme, "Test it"), "nia plugins list --json"])
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, cwd=plugin, env=env, timeout=900, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "5 passed" in done.stdout
    listed = json.loads(done.stdout[done.stdout.rindex("\n[") + 1 :])
    assert [p["name"] for p in listed] == ["nia-notes"]
