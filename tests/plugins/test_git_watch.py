"""``nia-git`` in a long-lived process: the working tree is watched, and git runs only after something changed."""

from __future__ import annotations

import os
import sys
import time

import pytest

import nia_plugins.git
import nia_plugins.git.watch
from nia_core.project import locate
from nia_core.testing import BoundaryDriver, Project
from nia_plugins.git.watch import WATCHED_FOLDERS, WATCHED_TREES

from .gitrepo import Repo, needs_git

pytestmark = [needs_git, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")]

REFRESH = 0.2
"""The refresh interval of these tests: each waits past it, so only the watch can keep git from running."""


@pytest.fixture
def repo(nia_project) -> Repo:
    repo = Repo.init(nia_project.root)
    repo.commit("Initial commit", **{"app.py": "print('app')\n", ".gitignore": "build/\n.nia/\n"})
    return repo


def statuses(fake_git) -> int:
    return len([call for call, _ in fake_git() if " status " in call])


def watched_conversation(location, **settings):
    """A conversation whose second observation has set the watches (the first is a hook's whole life)."""
    Project(location.root).configure("nia-git", refresh=REFRESH, **settings)
    chat = BoundaryDriver(location).conversation(nia_plugins.git)
    time.sleep(REFRESH * 1.5)
    chat.boundary()
    return chat


def quiet_boundary(chat):
    """A boundary after the refresh interval: without a watch, git would look again."""
    time.sleep(REFRESH * 1.5)
    return chat.boundary()


def test_an_unchanged_tree_runs_no_git_past_the_refresh_interval_and_an_edit_is_seen_at_the_next_boundary(
    fake_git, repo, nia_project
):
    chat = watched_conversation(nia_project.location)
    before = statuses(fake_git)

    unchanged = [quiet_boundary(chat).kind for _ in range(3)]
    quiet = statuses(fake_git)
    repo.write("app.py", "print('edited')\n")
    edited = chat.boundary()  # at once: no refresh interval to wait for

    assert (unchanged, quiet - before) == (["unchanged"] * 3, 0)
    assert edited.text == "Working tree: 1 file modified since the last message (`app.py`)."


def test_a_hook_in_its_own_process_observes_once_and_sets_no_watch(fake_git, repo, nia_project):
    Project(nia_project.root).configure("nia-git", refresh=REFRESH)

    BoundaryDriver(nia_project.location).conversation(nia_plugins.git)

    assert sorted(call.split()[4] for call, _ in fake_git()) == ["--work-tree", "config", "log"]  # status


def test_a_file_in_a_new_folder_is_seen_and_so_is_its_next_edit(fake_git, repo, nia_project):
    chat = watched_conversation(nia_project.location)

    repo.write("lib/deep/util.py", "X = 1\n")
    created = chat.boundary()
    repo.git("add", "lib")
    chat.boundary()
    quiet_boundary(chat)
    before = statuses(fake_git)
    repo.write("lib/deep/util.py", "X = 2\n")
    edited = chat.boundary()

    assert created.text == "Working tree: 1 new untracked file (`lib/`)."
    assert (statuses(fake_git) - before, edited.text) == (
        1,
        "Working tree: `lib/deep/util.py` is now staged (new file) and modified (was staged (new file))."
        " It now has 1 changed path (1 staged, 1 modified):\n  - `lib/deep/util.py` (staged (new file) and modified)",
    )


def test_changes_in_folders_git_ignores_run_no_git_and_do_not_count_against_the_watch_limit(
    fake_git, repo, nia_project
):
    for index in range(WATCHED_FOLDERS + 10):
        (nia_project.root / "build" / f"d{index}").mkdir(parents=True)
    chat = watched_conversation(nia_project.location)
    before = statuses(fake_git)

    (nia_project.root / "build" / "d7" / "out.o").write_text("object\n")
    (nia_project.root / "build" / "new").mkdir()
    quiet = quiet_boundary(chat)

    assert (quiet.kind, statuses(fake_git) - before) == ("unchanged", 0)


def test_what_nia_writes_in_the_projects_own_folder_runs_no_git(fake_git, nia_project):
    repo = Repo.init(nia_project.root)
    repo.commit("Initial commit", **{"app.py": "print('app')\n"})  # nothing ignored: .nia/ is in the tree
    chat = watched_conversation(nia_project.location)
    before = statuses(fake_git)

    for name in ("logs", "hook-output"):
        (nia_project.root / ".nia" / name).mkdir(exist_ok=True)
        (nia_project.root / ".nia" / name / "2026.log").write_text("written by nia\n")
    (nia_project.root / ".nia" / ".gitignore").write_text("/logs/\n")
    quiet = quiet_boundary(chat)

    assert (quiet.kind, statuses(fake_git) - before) == ("unchanged", 0)


def test_a_folder_an_ignore_rule_no_longer_hides_is_watched_from_then_on(fake_git, repo, nia_project):
    (nia_project.root / "build").mkdir()
    (nia_project.root / "build" / "out.txt").write_text("1\n")
    chat = watched_conversation(nia_project.location)

    repo.write(".gitignore", ".nia/\n")
    uncovered = chat.boundary()
    quiet_boundary(chat)
    before = statuses(fake_git)
    (nia_project.root / "build" / "out.txt").write_text("2\n")
    chat.boundary()

    assert "`build/`" in uncovered.text
    assert statuses(fake_git) - before == 1


def test_a_project_inside_a_larger_repository_watches_its_own_folder_only(fake_git, tmp_path):
    repo = Repo.init(tmp_path / "mono")
    repo.commit("Initial commit", **{"app/main.py": "x = 1\n", "other/lib.py": "y = 1\n", ".gitignore": ".nia/\n"})
    (tmp_path / "mono" / "app" / ".nia").mkdir()
    chat = watched_conversation(locate(tmp_path / "mono" / "app"))
    before = statuses(fake_git)

    repo.write("other/lib.py", "y = 2\n")
    outside = quiet_boundary(chat)
    outside_runs = statuses(fake_git) - before
    repo.write("app/main.py", "x = 2\n")
    inside = chat.boundary()

    assert (outside.kind, outside_runs) == ("unchanged", 0)
    assert inside.text == "Working tree: 1 file modified since the last message (`main.py`)."


def test_a_tree_too_large_to_watch_is_looked_at_after_the_refresh_interval(fake_git, repo, nia_project):
    for index in range(WATCHED_FOLDERS + 1):
        (nia_project.root / "src" / f"d{index}").mkdir(parents=True)
    chat = watched_conversation(nia_project.location)
    before = statuses(fake_git)

    quiet_boundary(chat)

    assert statuses(fake_git) - before == 1


def test_a_tree_holding_another_repository_is_looked_at_after_the_refresh_interval(fake_git, repo, nia_project):
    Repo.init(nia_project.root / "vendor" / "lib").commit("Inner", **{"a.txt": "a\n"})
    chat = watched_conversation(nia_project.location)
    before = statuses(fake_git)

    quiet_boundary(chat)

    assert statuses(fake_git) - before == 1


def test_refresh_zero_runs_git_at_every_boundary(fake_git, repo, nia_project):
    Project(nia_project.root).configure("nia-git", refresh=0)
    chat = BoundaryDriver(nia_project.location).conversation(nia_plugins.git)
    before = statuses(fake_git)

    for _ in range(3):
        chat.boundary()

    assert statuses(fake_git) - before == 3
    assert not [call for call, _ in fake_git() if " ls-files " in call]


def inotify_queues() -> int:
    folder = "/proc/self/fd"
    return sum(1 for fd in os.listdir(folder) if os.path.realpath(os.path.join(folder, fd)) == "anon_inode:inotify")


def test_a_process_watches_a_few_trees_at_most_and_one_it_stopped_watching_still_sees_edits(fake_git, tmp_path):
    chats, repos = [], []
    for index in range(WATCHED_TREES + 2):
        repo = Repo.init(tmp_path / f"p{index}")
        repo.commit("Initial commit", **{"app.py": "x = 1\n", ".gitignore": ".nia/\n"})
        (repo.root / ".nia").mkdir()
        repos.append(repo)
        chats.append(watched_conversation(locate(repo.root)))

    queues = inotify_queues()
    repos[0].write("app.py", "x = 2\n")
    edited = chats[0].boundary()

    assert queues <= WATCHED_TREES
    assert edited.text == "Working tree: 1 file modified since the last message (`app.py`)."


def test_a_tree_with_too_many_entries_to_list_is_looked_at_after_the_refresh_interval(
    fake_git, repo, nia_project, monkeypatch
):
    monkeypatch.setattr(nia_plugins.git.watch, "LISTED_ENTRIES", 500)
    (nia_project.root / "data").mkdir()
    for index in range(501):
        (nia_project.root / "data" / f"f{index}.txt").touch()
    chat = watched_conversation(nia_project.location)
    before = statuses(fake_git)

    quiet_boundary(chat)

    assert statuses(fake_git) - before == 1


def test_a_failed_observation_is_retried_after_the_refresh_interval_though_the_tree_is_quiet(
    fake_git, repo, nia_project, monkeypatch, tmp_path
):
    chat = watched_conversation(nia_project.location)
    path = os.environ["PATH"]
    empty = tmp_path / "no-git"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    repo.write("app.py", "print('edited')\n")
    failed = chat.boundary()
    monkeypatch.setenv("PATH", path)

    again = quiet_boundary(chat)

    assert "no `git` executable was found on PATH" in failed.text
    assert again.text.startswith("The git status is available again.\n")
