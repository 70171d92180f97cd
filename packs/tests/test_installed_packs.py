"""Both plugin packs as a user has them after ``nia plugins install ./packs/nia-python ./packs/nia-github``.

CI installs the packs into its fresh virtualenv with that command, runs each
pack's own suite (packs/*/tests: every plugin in depth), then these tests:
the installed plugins are listed, and a scripted Claude Code session (one
``nia hook claude-code`` process per hook, as the agent runs them; answered in
that process, or by the resident process nia starts) in which a pytest run
between two prompts is one update, and a check run that finishes on the
(fake) GitHub API is one update at the next prompt after the refresh.

Run them where the packs are installed (never in the environment of nia's
main suite, whose tests expect no plugin pack)::

    nia plugins install "./packs/nia-python[test]" "./packs/nia-github[test]"
    python -m pytest -q packs/tests
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
PLUGINS = {"nia-github", "nia-pytest", "nia-python", "nia-python-lint"}
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
def installed(tmp_path_factory):
    """This environment's ``nia`` with both packs installed, and an environment of a user with no settings."""
    found = {entry.name for entry in entry_points(group="nia")}
    nia = Path(sys.executable).parent / "nia"
    if not PLUGINS.issubset(found) or not nia.exists():
        pytest.fail(
            f"the packs are not installed here (plugins found: {sorted(found)}): run "
            '`nia plugins install "./packs/nia-python[test]" "./packs/nia-github[test]"` first'
        )
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GH_", "GITHUB_", "NIA_", "PYTEST_"))}
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        GIT_CEILING_DIRECTORIES=str(tmp_path_factory.getbasetemp()),
        NIA_GITHUB_API="http://127.0.0.1:9",  # never GitHub itself: each test names its fake server
        NIA_RESIDENT="0",
    )
    return SimpleNamespace(nia=nia, env=env)


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


def run_pytest(project: Path, env: dict[str, str]) -> None:
    """The user's (or the agent's) pytest run; the plugins installed beside pytest write nothing in its cache."""
    env = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # one of them (hypothesis's) takes seconds to import
    subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=project, env=env, capture_output=True, timeout=300)


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


def test_each_plugin_of_both_packs_is_listed(installed, tmp_path):
    project = shop(tmp_path / "shop")
    with github_with_pull_request(fakegithub()) as server:
        env = {**installed.env, "GH_TOKEN": TOKEN, "NIA_GITHUB_API": server.url}

        listed = json.loads(sh(installed.nia, "plugins", "list", "--json", cwd=project, env=env))

    assert {p["name"]: (p["distribution"], p["status"], p["source_keys"]) for p in listed if p["name"] in PLUGINS} == {
        "nia-github": ("nia-github", "enabled", ["github/pull-request"]),
        "nia-pytest": ("nia-python", "enabled", ["python/tests"]),
        "nia-python": ("nia-python", "enabled", ["python/interpreter", "python/project"]),
        "nia-python-lint": ("nia-python", "enabled", []),
    }


@contextmanager
def resident_folder(installed) -> Iterator[Path]:
    """A private runtime folder for resident processes (a short path: their sockets live there); they end with it."""
    runtime = Path(tempfile.mkdtemp(prefix="nia-rt-"))
    runtime.chmod(0o700)
    try:
        yield runtime
    finally:
        env = {**installed.env, "XDG_RUNTIME_DIR": str(runtime)}
        subprocess.run([installed.nia, "hook", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(runtime, ignore_errors=True)


def wait_until_a_resident_answers(installed, env: dict[str, str]) -> None:
    """Until the resident process the first hook started is ready (it loads nia and the project first)."""
    for _ in range(120):
        listed = json.loads(sh(installed.nia, "hook", "residents", "--json", cwd=Path(env["HOME"]), env=env))
        if any(resident["ready"] for resident in listed["residents"]):
            return
    raise AssertionError(f"no resident process is ready: {listed}")


@pytest.mark.parametrize("mode", ["in-process", "resident"])
def test_a_scripted_session_tells_each_change_once(installed, tmp_path, mode):
    """Each prompt in a hook process of its own (in-process), or answered by the resident process nia starts."""
    project = shop(tmp_path / "shop")
    run_pytest(project, installed.env)
    module = fakegithub()
    with github_with_pull_request(module) as server, resident_folder(installed) as runtime:
        env = {
            **installed.env,
            "GH_TOKEN": TOKEN,
            "NIA_GITHUB_API": server.url,
            "NIA_GITHUB_REFRESH": "1",
            "NIA_DISABLE_PLUGINS": "nia-git",  # the edits below would be git news too; this test is about the packs
            "NIA_HOOK_DEADLINE": "120",
            "NIA_RESIDENT": "1" if mode == "resident" else "0",
            "XDG_RUNTIME_DIR": str(runtime),
            "NIA_HOOK_LOG": str(tmp_path / "hook-log"),  # this session's hooks only
        }

        def hook(event: str, **extra: str) -> str | None:
            payload = {"session_id": "s-1", "cwd": str(project), "hook_event_name": event, **extra}
            out = sh(installed.nia, "hook", "claude-code", cwd=project, env=env, stdin=json.dumps(payload)).strip()
            return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else None

        baseline = hook("SessionStart", source="startup")
        assert baseline is not None
        assert (
            "Python tests (pytest's last results in `.pytest_cache`): 3 tests failing: "
            "`tests/test_shop.py::test_cart`, `tests/test_shop.py::test_login`, `tests/test_shop.py::test_pay`."
        ) in baseline
        assert "Python project (`pyproject.toml`): `shop` 1.4.0, requires Python >=3.11." in baseline
        assert "GitHub: branch `feature` has pull request #12 in `acme/shop`" in baseline
        if mode == "resident":
            wait_until_a_resident_answers(installed, env)
        assert hook("UserPromptSubmit", prompt="Fix the login and the cart.") is None

        (project / "tests" / "test_shop.py").write_text(
            "def test_login(): pass\ndef test_cart(): pass\ndef test_pay(): assert False\n"
        )
        run_pytest(project, installed.env)

        assert hook("UserPromptSubmit", prompt="Now the payment.") == (
            "Python tests (pytest's last results in `.pytest_cache`): now failing: 1 (fixed: "
            "`tests/test_shop.py::test_cart`, `tests/test_shop.py::test_login`; still failing: "
            "`tests/test_shop.py::test_pay`)."
        )

        server.repo()["check_runs"][SHA][1] = module.check_run("tests", "completed", "failure", run_id=2)
        if mode == "resident":
            # The resident asks GitHub in the background every second: an observation whose first request came
            # after the change saw it, and it is the resident's answer once the next observation begins.
            server.wait_for_observations(server.observations() + 2)
        # (A hook process of its own asks GitHub before it answers.)
        assert hook("UserPromptSubmit", prompt="And CI?") == (
            "GitHub, pull request #12 (branch `feature`):\n"
            "- Checks changed: `tests` failing now (was running). Checks on `a1b2c3d`: 1 failing (`tests`), 1 passed."
        )
        assert hook("UserPromptSubmit", prompt="Thanks.") is None
        log = sh(installed.nia, "hook", "log", "--json", cwd=project, env=env)
        assert all(TOKEN not in str(request["path"]) for request in server.requests)

    answered = [json.loads(line)["answered_by"] for line in log.splitlines()]
    assert answered == (["in-process"] * 5 if mode == "in-process" else ["in-process"] + ["resident"] * 4)


def test_docs_plugins_md_links_both_packs_as_worked_examples(installed):
    doc = (REPOSITORY / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = doc.split("## Worked examples: the plugin packs in `packs/`", 1)[1].split("\n## ", 1)[0]

    links = set(re.findall(r"\]\((\.\./packs/[^)]+)\)", section))
    shown = re.search(r"^Plugins now available: (.+)$", section, re.MULTILINE)

    assert links == {"../packs/nia-python/README.md", "../packs/nia-github/README.md"}
    assert all((REPOSITORY / "docs" / link).resolve().is_file() for link in links)
    assert shown is not None and set(shown[1].split(", ")) == PLUGINS  # the plugins installed here
