"""The plugin packs in packs/ as users get them: installed into a fresh venv, listed, and live in an agent session.

The packs' own suites (packs/*/tests, run by .ci/run) test each plugin in
depth; these tests show the whole path: ``nia plugins install`` from the
repository, ``nia plugins list``, and a scripted Claude Code session (one ``nia
hook claude-code`` process per hook, as the agent runs them) in which a pytest
run between two prompts is one update, and a check run that finishes on the
(fake) GitHub API is one update at the next prompt after the refresh.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from tests.venvs import child_venv

REPOSITORY = Path(__file__).resolve().parents[2]
PACKS = ("nia-python", "nia-github")
JUNK = shutil.ignore_patterns("__pycache__", "build", "*.egg-info", ".pytest_cache")
TOKEN = "ghp_FAKEtoken0123456789abcdefABCDEF01"
SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


def fakegithub() -> ModuleType:
    """The nia-github pack's fake GitHub API (its tests' fixture), loaded from the pack."""
    path = REPOSITORY / "packs" / "nia-github" / "tests" / "fakegithub.py"
    spec = importlib.util.spec_from_file_location("fakegithub", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sh(*command: str | Path, cwd: Path, env: dict[str, str], stdin: str | None = None) -> str:
    result = subprocess.run(
        [str(c) for c in command], input=stdin, capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )
    assert result.returncode == 0, f"{command}: {result.stdout}{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv (nia and its dependencies lent by ours, no plugin) with both packs installed by nia."""
    root = tmp_path_factory.mktemp("packs")
    python = child_venv(root / "venv")
    home = root / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    env = {k: v for k, v in env.items() if not k.startswith(("GH_", "GITHUB_", "NIA_"))}  # no token of the user's
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        NIA_GITHUB_API="http://127.0.0.1:9",  # never GitHub itself: each test names its fake server
        NIA_RESIDENT="0",
    )
    sh(python, "-m", "pip", "install", "-q", "setuptools>=70.1", cwd=root, env=env)  # builds need no isolated env
    env["PIP_NO_BUILD_ISOLATION"] = "0"
    copies = []
    for pack in PACKS:  # pip builds in the folder it is given: a copy keeps the checkout clean
        copies.append(root / pack)
        shutil.copytree(REPOSITORY / "packs" / pack, copies[-1], ignore=JUNK)
    nia = (python, "-c", "from nia_core.cli import main; main()")  # the lent nia, run by the venv's python
    installed = sh(*nia, "plugins", "install", *copies, cwd=root, env=env)
    return SimpleNamespace(python=python, nia=nia, env=env, installed=installed)


def shop(root: Path) -> Path:
    """A Python project that is a checkout of acme/shop on branch ``feature`` (its ``.git`` as git leaves it)."""
    (root / ".nia").mkdir(parents=True)
    (root / ".git" / "refs" / "heads").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/feature\n")
    (root / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/shop.git\n'
        '[branch "feature"]\n\tremote = origin\n\tmerge = refs/heads/feature\n'
    )
    (root / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "1.4.0"\nrequires-python = ">=3.11"\n')
    (root / "tests").mkdir()
    (root / "tests" / "test_shop.py").write_text(
        "def test_login(): assert False\ndef test_cart(): assert False\ndef test_pay(): assert False\n"
    )
    return root


def github_with_pull_request(module: ModuleType) -> object:
    server = module.FakeGitHub()
    repo = server.repo()
    repo["pulls"].append(module.pull_request(12, "Fix the login page", sha=SHA))
    repo["check_runs"][SHA] = [
        module.check_run("lint", run_id=1),
        module.check_run("tests", "in_progress", None, run_id=2),
    ]
    repo["decisions"]["12"] = "REVIEW_REQUIRED"
    return server


@pytest.mark.slow
def test_both_packs_install_and_each_plugin_is_listed(venv, tmp_path):
    assert "Plugins now available: nia-github, nia-pytest, nia-python, nia-python-lint" in venv.installed
    project = shop(tmp_path / "shop")
    with github_with_pull_request(fakegithub()) as server:
        env = {**venv.env, "GH_TOKEN": TOKEN, "NIA_GITHUB_API": server.url}

        listed = json.loads(sh(*venv.nia, "plugins", "list", "--json", cwd=project, env=env))

    assert {p["name"]: (p["distribution"], p["status"], p["source_keys"]) for p in listed} == {
        "nia-github": ("nia-github", "enabled", ["github/pull-request"]),
        "nia-pytest": ("nia-python", "enabled", ["python/tests"]),
        "nia-python": ("nia-python", "enabled", ["python/interpreter", "python/project"]),
        "nia-python-lint": ("nia-python", "enabled", []),
    }


@pytest.mark.slow
def test_a_scripted_session_tells_each_change_once(venv, tmp_path):
    project = shop(tmp_path / "shop")
    run_pytest = [venv.python, "-m", "pytest", "-q", "-p", "no:nia"]
    subprocess.run(run_pytest, cwd=project, env=venv.env, capture_output=True, timeout=300)
    module = fakegithub()
    with github_with_pull_request(module) as server:
        env = {
            **venv.env,
            "GH_TOKEN": TOKEN,
            "NIA_GITHUB_API": server.url,
            "NIA_GITHUB_REFRESH": "1",
            "NIA_DISABLE_PLUGINS": "nia-git",  # the edits below would be git news too; this test is about the packs
            "NIA_HOOK_DEADLINE": "120",
        }

        def hook(event: str, **extra: str) -> str | None:
            payload = {"session_id": "s-1", "cwd": str(project), "hook_event_name": event, **extra}
            out = sh(*venv.nia, "hook", "claude-code", cwd=project, env=env, stdin=json.dumps(payload)).strip()
            return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else None

        baseline = hook("SessionStart", source="startup")
        assert baseline is not None
        assert (
            "Python tests (pytest's last results in `.pytest_cache`): 3 tests failing: "
            "`tests/test_shop.py::test_cart`, `tests/test_shop.py::test_login`, `tests/test_shop.py::test_pay`."
        ) in baseline
        assert "Python project (`pyproject.toml`): `shop` 1.4.0, requires Python >=3.11." in baseline
        assert "GitHub: branch `feature` has pull request #12 in `acme/shop`" in baseline
        assert hook("UserPromptSubmit", prompt="Fix the login and the cart.") is None

        (project / "tests" / "test_shop.py").write_text(
            "def test_login(): pass\ndef test_cart(): pass\ndef test_pay(): assert False\n"
        )
        subprocess.run(run_pytest, cwd=project, env=venv.env, capture_output=True, timeout=300)

        assert hook("UserPromptSubmit", prompt="Now the payment.") == (
            "Python tests (pytest's last results in `.pytest_cache`): now failing: 1 (fixed: "
            "`tests/test_shop.py::test_cart`, `tests/test_shop.py::test_login`; still failing: "
            "`tests/test_shop.py::test_pay`)."
        )

        server.repo()["check_runs"][SHA][1] = module.check_run("tests", "completed", "failure", run_id=2)
        told = []
        for _ in range(8):  # prompts come and go; the change arrives once, after the refresh
            time.sleep(1.5)
            told.append(hook("UserPromptSubmit", prompt="And CI?"))
            if told[-1] is not None:
                break
        assert [text for text in told if text is not None] == [
            "GitHub, pull request #12 (branch `feature`):\n"
            "- Checks changed: `tests` failing now (was running). Checks on `a1b2c3d`: 1 failing (`tests`), 1 passed."
        ]
        assert hook("UserPromptSubmit", prompt="Thanks.") is None
        assert all(TOKEN not in str(request["path"]) for request in server.requests)
