"""A disk almost full and a -shm file left read-only (issue #11 item 22): the documented, actionable messages.

These use a real small file system (a tmpfs of 2 MiB) and a real read-only bind
mount, which need the right to mount (root in the CI container).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nia_core.cli import cli

NIA = [sys.executable, "-c", "from nia_core.cli import main; main()"]


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


@contextlib.contextmanager
def small_disk(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "disk"
    folder.mkdir()
    try:
        mount("-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder))
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount a small tmpfs here ({exc}); the case needs a real full disk")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, leave: int) -> Path:
    filler = folder / "filler"
    with filler.open("wb") as out:
        out.write(b"x" * max(0, shutil.disk_usage(folder).free - leave))
    return filler


def rows(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return [str(row) for row in conn.execute("SELECT seq, kind, body FROM messages ORDER BY session_id, seq")]


@pytest.mark.parametrize("leave", [16 * 1024, 0])
def test_a_disk_almost_full_gives_the_documented_disk_full_message(
    tmp_path: Path, cli_env: dict[str, str], leave: int
) -> None:
    with small_disk(tmp_path) as disk:
        db = disk / "nia.db"
        env = {**os.environ, **cli_env, "NIA_DB": str(db)}
        (tmp_path / "AGENTS.md").write_text("Rule one.\n")
        session_id = subprocess.run(
            [*NIA, "session", "new", "--location", str(tmp_path)], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        first = subprocess.run([*NIA, "session", "send", session_id, "hello"], env=env, capture_output=True, text=True)
        assert first.returncode == 0, first.stderr
        before = rows(db)
        filler = fill(disk, leave)
        for _ in range(2):
            result = subprocess.run(
                [*NIA, "session", "send", session_id, "y" * 50_000], env=env, capture_output=True, text=True
            )
            assert result.returncode == 1
            assert result.stderr.startswith(f"Error: session {session_id}: cannot ")
            assert result.stderr.endswith(f"the database {db} or its disk is full; nothing was changed\n")
            assert "disk I/O error" not in result.stderr
        filler.unlink()
        assert rows(db) == before
        again = subprocess.run([*NIA, "session", "send", session_id, "room again"], env=env, capture_output=True)
        assert again.returncode == 0


def open_wal(db: Path) -> sqlite3.Connection:
    """Another process's reader, keeping the -wal and -shm files in place."""
    conn = sqlite3.connect(db)
    conn.execute("SELECT count(*) FROM sessions").fetchall()
    return conn


@pytest.fixture
def session_with_shm(tmp_path: Path, cli_env: dict[str, str], sqlite_path: Path) -> Iterator[tuple[str, Path]]:
    (tmp_path / "AGENTS.md").write_text("Rule one.\n")
    runner = CliRunner()
    session_id = runner.invoke(cli, ["session", "new", "--location", str(tmp_path)]).output.strip()
    assert runner.invoke(cli, ["session", "send", session_id, "hello"]).exit_code == 0
    reader = open_wal(sqlite_path)
    shm = sqlite_path.with_name(sqlite_path.name + "-shm")
    assert shm.exists()
    yield session_id, shm
    reader.close()


def test_a_shm_file_left_read_only_by_an_earlier_run_does_not_block_writes(
    session_with_shm: tuple[str, Path], cli_env: dict[str, str]
) -> None:
    session_id, shm = session_with_shm
    shm.chmod(0o444)
    result = subprocess.run(
        [*NIA, "session", "send", session_id, "more"], env={**os.environ, **cli_env}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(shm.stat().st_mode) & stat.S_IWUSR


def test_a_shm_file_nia_cannot_make_writable_gets_an_actionable_message(
    session_with_shm: tuple[str, Path], cli_env: dict[str, str], sqlite_path: Path
) -> None:
    session_id, shm = session_with_shm
    try:
        mount("--bind", str(shm), str(shm))
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot bind-mount here ({exc}); the case needs a file no one may write")
    try:
        mount("-o", "remount,bind,ro", str(shm))
        before = rows(sqlite_path)
        result = subprocess.run(
            [*NIA, "session", "send", session_id, "more"], env={**os.environ, **cli_env}, capture_output=True, text=True
        )
        assert result.returncode == 1
        assert result.stderr.startswith(f"Error: session {session_id}: cannot ")
        assert result.stderr.endswith(
            f": {shm} is read-only (left by an earlier run as another user?), so the database {sqlite_path} "
            f"cannot be used; make it writable (chmod u+w {shm}) or delete it while no nia uses the database; "
            "nothing was changed\n"
        )
        assert len(result.stderr.splitlines()) == 1
        assert rows(sqlite_path) == before
    finally:
        subprocess.run(["umount", str(shm)], check=False)
    again = subprocess.run([*NIA, "session", "send", session_id, "more"], env={**os.environ, **cli_env})
    assert again.returncode == 0
