"""Real git repositories for the ``nia-git`` tests, driven by the real ``git``, isolated from the user's config."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

GIT = shutil.which("git") or "git"
"""The real git, by full path: tests that put a fake ``git`` on PATH still build their repositories with this one."""
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

IDENTITY = ("-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-c", "commit.gpgsign=false")


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    return env


class Repo:
    """A work tree on disk, and ``git`` run in it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def init(cls, root: Path, *, branch: str = "main") -> Repo:
        root.mkdir(parents=True, exist_ok=True)
        repo = cls(root)
        repo.git("init", "-q", "-b", branch)
        return repo

    def git(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(
            [GIT, *IDENTITY, "-c", "protocol.file.allow=always", *args],
            cwd=self.root,
            env=git_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def commit(self, subject: str, **files: str) -> str:
        for name, text in files.items():
            self.write(name, text)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", subject)
        return self.short()

    def short(self, rev: str = "HEAD") -> str:
        return self.git("rev-parse", "--short", rev).strip()
