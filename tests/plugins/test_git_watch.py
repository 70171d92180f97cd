"""``nia-git`` in a long-lived process: the working tree is watched, and git runs only after something changed."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time

import pytest

import nia_plugins.git
import nia_plugins.git.observer
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


@pytest.fixture
def slow_git(tmp_path, monkeypatch):
    """A ``git`` first on PATH that sleeps (``slow(NAME, seconds)``) when its arguments hold NAME, then runs the
    real one."""
    real = shutil.which("git")
    folder = tmp_path / "slow-bin"
    folder.mkdir()
    script = folder / "git"
    script.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do\n'
        f'  if [ -e {tmp_path}/slow-"$a" ]; then sleep "$(cat {tmp_path}/slow-"$a")"; fi\n'
        "done\n"
        f'exec {real} "$@"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")

    def slow(name: str, seconds: float | None) -> None:
        marker = tmp_path / f"slow-{name}"
        if seconds is None:
            marker.unlink(missing_ok=True)
        else:
            marker.write_text(f"{seconds}\n")

    return slow


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


def test_the_second_observation_sets_the_watches_however_soon_after_the_first(fake_git, repo, nia_project):
    # A resident's first hook observes as a hook in its own process does (no watch); its next hook may come
    # well within the refresh interval (a real agent's next turn), and an edit made before it was unseen
    # until the interval passed (found with the real agents in a real repository, tests/real_agents).
    Project(nia_project.root).configure("nia-git", refresh=60)
    chat = BoundaryDriver(nia_project.location).conversation(nia_plugins.git)
    before = statuses(fake_git)
    second = chat.boundary()  # at once: git looks once more, to set the watches
    setting = statuses(fake_git) - before
    repo.write("app.py", "print('edited')\n")
    (nia_project.root / "notes.txt").write_text("a new file\n")
    edited = chat.boundary()
    unchanged = chat.boundary()

    assert (second.kind, setting, unchanged.kind) == ("unchanged", 1, "unchanged")
    assert (
        edited.text
        == "Working tree: 1 file modified since the last message (`app.py`); 1 new untracked file (`notes.txt`)."
    )
    assert statuses(fake_git) - before == 2  # the watches' status and the edit's: none for the unchanged boundary


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
    found = 0
    for fd in os.listdir(folder):
        try:
            found += os.readlink(os.path.join(folder, fd)) == "anon_inode:inotify"  # realpath makes it a path
        except OSError:
            continue  # the descriptor listdir itself had open
    return found


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

    assert 0 < queues <= WATCHED_TREES
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


def test_a_new_file_in_a_folder_whose_files_are_all_ignored_is_seen_at_the_next_boundary(fake_git, nia_project):
    repo = Repo.init(nia_project.root)
    repo.commit("Initial commit", **{"app.py": "x = 1\n", ".gitignore": "*.o\n.nia/\n"})
    repo.write("objs/a.o", "object\n")  # git lists `objs/` among the ignored folders: no rule names it
    chat = watched_conversation(nia_project.location)

    repo.write("objs/new.c", "int x;\n")
    created = chat.boundary()

    assert created.text == "Working tree: 1 new untracked file (`objs/`)."


def test_a_change_of_the_repositorys_own_exclude_file_is_seen_at_the_next_boundary(fake_git, nia_project):
    repo = Repo.init(nia_project.root)
    repo.commit("Initial commit", **{"app.py": "x = 1\n", ".gitignore": ".nia/\n"})
    repo.write(".git/info/exclude", "build/\n")
    repo.write("build/out.txt", "1\n")
    chat = watched_conversation(nia_project.location)

    repo.write(".git/info/exclude", "# nothing\n")
    uncovered = chat.boundary()

    assert uncovered.text == "Working tree: 1 new untracked file (`build/`)."


def test_a_change_of_an_ignore_file_above_a_project_inside_a_larger_repository_is_seen_at_the_next_boundary(
    fake_git, tmp_path
):
    repo = Repo.init(tmp_path / "mono")
    repo.commit("Initial commit", **{"app/main.py": "x = 1\n", "other/x.py": "x\n", ".gitignore": ".nia/\nbuild/\n"})
    repo.write("app/.nia/project.toml", "")
    repo.write("app/build/out.txt", "1\n")
    chat = watched_conversation(locate(tmp_path / "mono" / "app"))
    before = statuses(fake_git)

    repo.write("README.md", "beside the project, above it\n")
    (tmp_path / "mono" / "docs").mkdir()
    beside = quiet_boundary(chat)
    beside_runs = statuses(fake_git) - before
    repo.write(".gitignore", ".nia/\n")
    uncovered = chat.boundary()

    assert (beside.kind, beside_runs) == ("unchanged", 0)
    assert uncovered.text == "Working tree: 1 new untracked file (`build/`)."


def test_an_edit_read_from_the_queue_before_git_timed_out_is_seen_at_the_next_boundary(slow_git, repo, nia_project):
    chat = watched_conversation(nia_project.location, timeout=1.0)

    repo.write("app.py", "print('edited')\n")
    slow_git("status", 5)
    timed_out = chat.boundary()
    slow_git("status", None)
    edited = quiet_boundary(chat)

    assert timed_out.kind == "unchanged"
    assert edited.text == "Working tree: 1 file modified since the last message (`app.py`)."


def test_listing_the_folders_git_ignores_shares_the_observations_time_budget(slow_git, repo, nia_project):
    chat = watched_conversation(nia_project.location, timeout=2.0)
    repo.write("lib/util.py", "x = 1\n")  # a new folder: the watches are set again, and git lists what it ignores

    slow_git("config", 1.8)
    slow_git("ls-files", 0.7)
    started = time.monotonic()
    chat.boundary()
    took = time.monotonic() - started

    assert took < 2.0 + 0.3  # the observation's budget, and no more (ls-files alone would end past 2.5 s)


def test_fifos_sockets_symlink_loops_and_deep_folders_are_watched_without_following_nor_opening_them(
    fake_git, repo, nia_project
):
    root = nia_project.root
    os.mkfifo(root / "fifo")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(root / "socket"))
    (root / "loop").mkdir()
    os.symlink("..", root / "loop" / "up")
    os.symlink("itself", root / "itself")
    deep = root.joinpath(*["d" * 50] * 60)  # a path of 3,000 characters
    deep.mkdir(parents=True)
    chat = watched_conversation(nia_project.location)
    before = statuses(fake_git)

    quiet = quiet_boundary(chat)
    quiet_runs = statuses(fake_git) - before
    (deep / "x.txt").write_text("1\n")
    created = chat.boundary()
    listening.close()

    assert (quiet.kind, quiet_runs) == ("unchanged", 0)
    assert created.kind == "updated"


def test_a_process_forked_after_the_watches_are_set_holds_none_of_them(fake_git, repo, nia_project):
    """A plugin's helper process would keep the kernel's queue alive after nia closed it, and read its events."""
    chat = watched_conversation(nia_project.location)
    reading, writing = os.pipe()

    pid = os.fork()
    if pid == 0:
        os.write(writing, str(inotify_queues()).encode())
        os._exit(0)
    os.close(writing)
    in_child = os.read(reading, 16)
    os.close(reading)
    os.waitpid(pid, 0)
    repo.write("app.py", "print('edited')\n")
    edited = chat.boundary()

    assert (inotify_queues() > 0, in_child) == (True, b"0")
    assert edited.text == "Working tree: 1 file modified since the last message (`app.py`)."


def test_the_git_calls_that_list_ignored_folders_get_the_overrides_and_environment_of_git_status(fake_git, nia_project):
    repo = Repo.init(nia_project.root)
    repo.commit("Initial commit", **{"app.py": "x = 1\n", ".gitignore": "*.o\n.nia/\n"})
    repo.write("objs/a.o", "object\n")  # a folder `git check-ignore` is asked about
    watched_conversation(nia_project.location)

    environments = {call.split()[4]: variables for call, variables in fake_git()}

    assert environments["ls-files"] == environments["check-ignore"] == environments["--work-tree"]  # status
    assert "GIT_CONFIG_KEY_0=core.fsmonitor" in environments["ls-files"]


def test_a_tree_another_took_the_watch_of_is_looked_at_by_time_and_takes_no_watch_back(fake_git, tmp_path):
    """More trees than a process watches, used in turn: no tug of war over the watches, each a rebuild and a git."""
    chats, repos = [], []
    for index in range(WATCHED_TREES + 1):  # the last one takes the first one's place
        repo = Repo.init(tmp_path / f"p{index}")
        repo.commit("Initial commit", **{"app.py": "x = 1\n", ".gitignore": ".nia/\n"})
        (repo.root / ".nia").mkdir()
        repos.append(repo)
        chats.append(watched_conversation(locate(repo.root)))
    repos[0].write("app.py", "x = 2\n")
    edited = chats[0].boundary()  # git looks: what happened since it lost its watch is unknown
    time.sleep(REFRESH * 1.5)
    before = statuses(fake_git)

    quiet = [chat.boundary().kind for chat in chats[1:]]

    assert edited.text == "Working tree: 1 file modified since the last message (`app.py`)."
    assert (quiet, statuses(fake_git) - before) == (["unchanged"] * WATCHED_TREES, 0)


def test_a_tree_that_could_not_be_watched_is_tried_again_later(fake_git, repo, nia_project, monkeypatch):
    monkeypatch.setattr(nia_plugins.git.observer, "WATCH_RETRY", REFRESH * 2)
    for index in range(WATCHED_FOLDERS + 1):
        (nia_project.root / "src" / f"d{index}").mkdir(parents=True)
    chat = watched_conversation(nia_project.location)  # too many folders: not watched
    shutil.rmtree(nia_project.root / "src")
    time.sleep(REFRESH * 2)
    chat.boundary()  # git looks (the refresh interval passed), and the watches are tried again
    before = statuses(fake_git)

    quiet = quiet_boundary(chat)

    assert (quiet.kind, statuses(fake_git) - before) == ("unchanged", 0)


def test_a_rule_the_user_adds_to_the_projects_own_ignore_file_is_seen_at_the_next_boundary(fake_git, nia_project):
    repo = Repo.init(nia_project.root)
    repo.commit("Initial commit", **{"app.py": "x = 1\n", ".nia/project.toml": "[plugins.nia-git]\nrefresh = 0.2\n"})
    (nia_project.root / ".nia" / "cache").mkdir()
    (nia_project.root / ".nia" / "cache" / "x.bin").write_text("x\n")
    chat = BoundaryDriver(nia_project.location).conversation(nia_plugins.git)
    time.sleep(REFRESH * 1.5)
    chat.boundary()  # the watches are set
    time.sleep(REFRESH * 1.5)

    (nia_project.root / ".nia" / ".gitignore").write_text("/cache/\n")  # nia writes it once; then it is the user's
    ruled = chat.boundary()

    assert "`.nia/cache/`" in chat.baseline
    assert ruled.text == "The working tree is clean again."
