"""What ``nia/git`` costs at a boundary on a 10,000-file repository, beside ``git status`` itself.

Run: ``python bench/bench_git.py``. Prints one table (median of repeats, ms).
The baseline is ``git status`` in the same run on the same repository: the
naive way to keep a git status current is to run it at every boundary. The
target: an unchanged observation costs under a tenth of one ``git status``.
The "watched tree" rows are what a process observing more than once (a
resident, ``nia dev``, ``nia mcp``) pays: git runs only after an event in the
tree, however long after the refresh interval.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nia_core.context import SystemContext, initialize, reconcile
from nia_core.project import locate
from nia_plugins.git import nia_context_sources
from nia_plugins.git.observer import Observer
from nia_plugins.git.repository import find_repository
from nia_plugins.git.settings import Settings
from nia_plugins.git.source import git_source


def git(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", *identity, *args], cwd=root, env=env, check=True, capture_output=True)


def make_repository(root: Path, files: int) -> None:
    git(root, "init", "-q", "-b", "main")
    per_folder = 100
    for index in range(files):
        folder = root / f"d{index // per_folder:03d}"
        if index % per_folder == 0:
            folder.mkdir()
        (folder / f"f{index % per_folder:03d}.py").write_text(f"VALUE = {index}\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Ten thousand files")
    (root / "d000" / "f000.py").write_text("VALUE = 'edited'\n")  # a working tree with a change in it


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def measure(root: Path, repeats: int) -> list[tuple[str, float]]:
    location = locate(root)
    repo = find_repository(str(location.path))
    assert repo is not None
    watching = git_source(repo, str(location.root), Settings(refresh=3600.0))
    every_time = git_source(repo, str(location.root), Settings(refresh=0.0))
    ctx = SystemContext([watching])
    snapshot = initialize(ctx).snapshot
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}

    # A process that observes more than once watches the tree: `refresh` is past at every call here, and only an
    # event in the tree makes git run (nia_plugins/git/watch.py).
    watched = git_source(repo, str(location.root), Settings(refresh=0.001))
    for _ in range(2):  # the first observation, then the one that sets the watches
        time.sleep(0.002)
        watched.load()
    edited_file = root / "d001" / "f001.py"

    def edited() -> None:
        edited_file.write_text(f"VALUE = {time.monotonic()}\n")
        watched.load()

    def setting_watches(repeats: int) -> float:
        samples = []
        for _ in range(repeats):
            observer = Observer(repo, str(location.root), Settings(refresh=0.001))
            observer()
            time.sleep(0.002)
            started = time.perf_counter()
            observer()
            samples.append((time.perf_counter() - started) * 1000)
        return statistics.median(samples)

    def git_status() -> None:
        subprocess.run(["git", "status"], cwd=root, env=env, check=True, capture_output=True)

    def git_status_porcelain() -> None:
        command = ["git", "--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z"]
        subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)

    return [
        ("git status", median_ms(git_status, repeats)),
        ("git --no-optional-locks status --porcelain=v2 --branch -z", median_ms(git_status_porcelain, repeats)),
        ("nia/git load, nothing moved (stat only)", median_ms(watching.load, repeats * 20)),
        ("nia/git reconcile, nothing moved", median_ms(lambda: reconcile(ctx, snapshot), repeats * 20)),
        ("nia-git hook (finds the repository)", median_ms(lambda: nia_context_sources(location, {}), repeats * 20)),
        ("nia/git load, refresh interval elapsed (runs git)", median_ms(every_time.load, repeats)),
        ("nia/git load, watched tree, interval elapsed, nothing changed", median_ms(watched.load, repeats * 20)),
        ("nia/git load, watched tree, one file edited (runs git)", median_ms(edited, repeats)),
        ("nia/git: setting the watches (git ls-files, a watch per folder, then git status)", setting_watches(repeats)),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        make_repository(root, args.files)
        rows = measure(root, args.repeats)
    baseline = rows[0][1]
    width = max(len(name) for name, _ in rows)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    print(
        f"nia/git on a {args.files:,}-file repository, median of {args.repeats} (ms); "
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {load} (1, 5, 15 min)"
    )
    print(f"{'what':<{width}} | {'ms':>9} | {'vs git status':>13}")
    for name, ms in rows:
        print(f"{name:<{width}} | {ms:>9.3f} | {ms / baseline:>12.4f}x")
    unchanged = rows[2][1]
    verdict = "met" if unchanged < baseline / 10 else "NOT met"
    print(f"target (unchanged observation < 1/10 of git status): {verdict}, {baseline / unchanged:,.0f}x cheaper")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
