"""nia keeps what it generates under .nia/ out of ``git status``, and never touches a .gitignore it did not write."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from nia_core.project.generated import GITIGNORE, ignore_generated
from tests.project.helpers import project, run

COMMANDS = '[[workflows]]\ntarget = "code"\n\n[[workflows.operations]]\nname = "create"\n'


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True).stdout


def test_the_first_transaction_log_leaves_git_status_clean(tmp_path: Path) -> None:
    root = project(tmp_path / "repo", commands_toml=COMMANDS)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")

    assert run(root, "code", "create", "--print-prompt").exit_code == 0

    assert (root / ".nia" / "logs" / "transactions" / "latest.json").is_file()
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""  # the ignore file lists itself
    assert (root / ".nia" / ".gitignore").read_text() == GITIGNORE


def test_a_gitignore_already_there_is_left_alone(tmp_path: Path) -> None:
    root = project(tmp_path / "repo", commands_toml=COMMANDS)
    (root / ".nia" / ".gitignore").write_text("mine\n")

    assert run(root, "code", "create", "--print-prompt").exit_code == 0

    assert (root / ".nia" / ".gitignore").read_text() == "mine\n"


def test_nothing_is_written_through_a_nia_folder_that_leads_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".nia").symlink_to(outside)

    assert ignore_generated(root) is False
    assert list(outside.iterdir()) == []


def test_a_dangling_gitignore_link_is_not_followed(tmp_path: Path) -> None:
    root = project(tmp_path / "repo")
    target = tmp_path / "victim"
    (root / ".nia" / ".gitignore").symlink_to(target)

    assert ignore_generated(root) is False
    assert not target.exists()
