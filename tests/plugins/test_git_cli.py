"""``nia-git`` through the command line: ``nia context show``, a session, switches, and a real ``nia dev``."""

from __future__ import annotations

import json

import pytest

from tests.dev import helpers as dev_helpers

from .conftest import run
from .gitrepo import Repo, needs_git

pytestmark = needs_git

HEADER = "Git status (nia keeps this current; paths are relative to the project root):"


@pytest.fixture
def repo(tmp_path) -> Repo:
    repo = Repo.init(tmp_path / "project")
    repo.commit("Initial commit", **{"app.py": "print('app')\n", ".gitignore": ".nia/\n"})
    (repo.root / ".nia").mkdir()
    return repo


def test_context_show_ends_with_the_git_status(repo):
    repo.write("app.py", "print('edited')\n")

    result = run("context", "show", "--location", str(repo.root))

    assert result.exit_code == 0, result.output
    assert result.stdout.endswith(
        f"{HEADER}\n- Branch: `main` (no upstream)\n- HEAD: `{repo.short()}` Initial commit\n"
        "- Working tree: 1 changed path (1 modified):\n  - `app.py` (modified)\n"
    )


def test_context_show_json_names_the_source_and_its_plugin(repo):
    data = json.loads(run("context", "show", "--json", "--location", str(repo.root)).stdout)

    by_key = {s["key"]: s for s in data["sources"]}
    assert by_key["nia/git"]["plugin"] == "nia-git" and by_key["nia/git"]["status"] == "ok"
    assert data["blocked_on"] == []


def test_outside_a_repository_context_show_has_no_git_part(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()

    data = json.loads(run("context", "show", "--json", "--location", str(folder)).stdout)

    assert "nia/git" not in [s["key"] for s in data["sources"]]
    assert "Git status" not in data["baseline"]


def listed(repo: Repo, *switches: str) -> dict[str, dict]:
    result = run(*switches, "plugins", "list", "--json", "--all", "--location", str(repo.root))
    return {p["name"]: p for p in json.loads(result.stdout)}


def test_switched_off_for_one_run_or_in_the_project(repo):
    once = run("-p", "no:nia-git", "context", "show", "--location", str(repo.root))
    listed_once = listed(repo, "-p", "no:nia-git")
    (repo.root / ".nia" / "project.toml").write_text('[plugins]\ndisabled = ["nia-git"]\n')
    configured = run("context", "show", "--location", str(repo.root))

    assert once.exit_code == 0 and HEADER not in once.stdout
    assert configured.exit_code == 0 and HEADER not in configured.stdout
    assert listed_once["nia-git"]["status"] == "disabled"
    assert listed(repo)["nia-git"]["status"] == "disabled"


def test_plugins_list_shows_the_builtin_and_its_source(repo):
    git = listed(repo)["nia-git"]

    assert (git["origin"], git["status"], git["source_keys"]) == ("built-in", "enabled", ["nia/git"])


def test_a_bad_setting_is_one_line_and_the_rest_of_the_context_stays(repo):
    (repo.root / ".nia" / "project.toml").write_text("[plugins.nia-git]\npaths = -3\n")

    result = run("context", "show", "--location", str(repo.root))

    assert result.exit_code == 0
    assert HEADER not in result.stdout and "Environment:" in result.stdout
    assert "[plugins.nia-git] paths must be a whole number, 0 or more, not -3" in result.stderr
    assert "Traceback" not in result.output


def test_without_git_context_show_says_why_in_one_line(repo, tmp_path, monkeypatch):
    empty = tmp_path / "no-git"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))

    result = run("context", "show", "--location", str(repo.root))

    assert result.exit_code == 0 and "Traceback" not in result.output
    assert result.stdout.endswith(
        "Git: the status of this repository is not available (no `git` executable was found on PATH).\n"
    )


# -- a session ----------------------------------------------------------------------------


def test_a_session_is_told_the_branch_switch_at_the_next_input(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    session = run("session", "new", "--location", str(repo.root)).stdout.strip()
    first = run("session", "send", session, "hello")

    repo.git("checkout", "-q", "-b", "fix/login")
    waiting = json.loads(run("session", "show", session, "--model-view", "--json").stdout)
    second = run("session", "send", session, "what now?")
    view = json.loads(run("session", "show", session, "--model-view", "--json").stdout)
    text = run("session", "show", session, "--model-view").stdout

    assert first.exit_code == 0 and second.exit_code == 0, second.output
    assert "- Branch: `main` (no upstream)" in view["system"]  # the baseline is never rewritten
    assert [m["role"] for m in waiting["messages"]] == ["user", "assistant"]  # told only at the next boundary
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "user", "system", "assistant"]
    assert view["messages"][3]["content"] == (
        f"The branch is now `fix/login` (was `main`).\nHEAD: `{repo.short()}` Initial commit."
    )
    assert "The branch is now `fix/login` (was `main`)." in text


def test_a_session_in_a_container_without_git_is_not_blocked(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    session = run("session", "new", "--location", str(repo.root)).stdout.strip()
    empty = tmp_path / "no-git"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))

    sent = run("session", "send", session, "hello")

    assert sent.exit_code == 0, sent.output
    view = json.loads(run("session", "show", session, "--model-view", "--json").stdout)
    assert "Git: the status of this repository is not available (no `git` executable" in view["system"]


# -- nia dev, a real process --------------------------------------------------------------


@pytest.mark.slow
def test_nia_dev_shows_the_git_status_and_its_change_at_the_next_reload(repo, tmp_path, monkeypatch):
    monkeypatch.setattr(dev_helpers, "QUIET", tuple(q for q in dev_helpers.QUIET if q != "no:nia-git"))
    config = repo.root / ".nia" / "project.toml"
    dev_helpers.write(config, "[plugins.nia-git]\npaths = 10\n")
    process = dev_helpers.DevProcess(repo.root, tmp_path / "home")
    try:
        baseline, _watching = process.started()
        repo.git("checkout", "-q", "-b", "feature")
        dev_helpers.write(config, "[plugins.nia-git]\npaths = 5\n")  # a save: nia dev reconciles
        event = process.until(dev_helpers.about(config))
    finally:
        process.close()

    assert baseline["sources"] == ["nia/environment", "nia/git"]
    assert f"{HEADER}\n- Branch: `main` (no upstream)" in baseline["baseline"]
    assert dev_helpers.changes(event) == [
        ("updated", "nia/git", f"The branch is now `feature` (was `main`).\nHEAD: `{repo.short()}` Initial commit.")
    ]
