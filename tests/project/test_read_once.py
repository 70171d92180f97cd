"""One boundary reads each context file once, and holds what it read once.

Proven through the CLI (``nia context show``, ``nia session send``) by
counting, per file, the checked reads and the bytes taken from its
descriptors: a file read for the binary check and again for its content, or
read again by a second reader, would show twice its size.
"""

from __future__ import annotations

import collections
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import nia_core.files
from nia_core.cli import cli
from nia_core.project.merge import forget
from tests.project.helpers import project

FILES = 30


class Reads:
    """Checked reads and bytes read, per file below ``root``, while installed."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = str(root)
        self.checked: collections.Counter[str] = collections.Counter()
        self.bytes: collections.Counter[str] = collections.Counter()
        self._paths: dict[int, str] = {}
        read_checked, real_open, real_read, real_close = nia_core.files.read_checked, os.open, os.read, os.close

        def counted_read_checked(path, root, limit):  # type: ignore[no-untyped-def]
            self.checked[os.fspath(path)] += 1
            return read_checked(path, root, limit)

        def counted_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
            fd = real_open(path, flags, *args, **kwargs)
            if isinstance(path, str) and path.startswith(self.root):
                self._paths[fd] = path
            return fd

        def counted_read(fd, size):  # type: ignore[no-untyped-def]
            data = real_read(fd, size)
            if fd in self._paths:
                self.bytes[self._paths[fd]] += len(data)
            return data

        def counted_close(fd):  # type: ignore[no-untyped-def]
            self._paths.pop(fd, None)
            return real_close(fd)

        monkeypatch.setattr(nia_core.files, "read_checked", counted_read_checked)
        monkeypatch.setattr(os, "open", counted_open)
        monkeypatch.setattr(os, "read", counted_read)
        monkeypatch.setattr(os, "close", counted_close)

    def clear(self) -> None:
        self.checked.clear()
        self.bytes.clear()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    forget()  # a cold process: nothing cached from earlier tests
    files: dict[str, str | bytes] = {
        f"docs/d{i:02d}.md": f"# Doc {i}\n" + "words " * (50 + i * 40) for i in range(FILES)
    }
    files["docs/image.png"] = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    files["AGENTS.md"] = "Be brief.\n"
    toml = '[project]\nname = "x"\n\n[[project.context]]\ntype = "directory"\npath = "docs/"\n'
    root = project(tmp_path / "repo", project_toml=toml, files=files)
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(root)
    return root


def _context_files(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in sorted((root / "docs").glob("*.md"))}


def _assert_each_read_once(reads: Reads, root: Path) -> None:
    sizes = _context_files(root)
    assert len(sizes) == FILES
    for path, size in sizes.items():
        assert reads.checked[path] == 1, f"{path} checked-read {reads.checked[path]} times"
        assert reads.bytes[path] == size, f"{path}: {reads.bytes[path]} bytes read for a {size}-byte file"


def test_context_show_reads_each_context_file_once(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(repo, monkeypatch)
    result = CliRunner().invoke(cli, ["context", "show"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.output.count("File: docs/d") == FILES
    _assert_each_read_once(reads, repo)
    assert reads.bytes[str(repo / "docs" / "image.png")] == 0  # a binary extension is never even opened


def test_session_send_reads_each_file_once_and_the_next_turn_reads_none(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    session = runner.invoke(cli, ["session", "new", "--model", "echo/echo"], catch_exceptions=False).output.strip()
    reads = Reads(repo, monkeypatch)

    first = runner.invoke(cli, ["session", "send", session, "hello"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    _assert_each_read_once(reads, repo)

    reads.clear()
    second = runner.invoke(cli, ["session", "send", session, "again"], catch_exceptions=False)
    assert second.exit_code == 0, second.output
    assert sum(reads.bytes.values()) == 0 and not reads.checked  # unchanged: stat only, in the same process

    (repo / "docs" / "d07.md").write_text("# Doc 7, edited\n")
    reads.clear()
    third = runner.invoke(cli, ["session", "send", session, "and again"], catch_exceptions=False)
    assert third.exit_code == 0, third.output
    edited = str(repo / "docs" / "d07.md")
    assert dict(reads.checked) == {edited: 1}
    assert reads.bytes[edited] == len("# Doc 7, edited\n")


def test_a_new_epoch_is_not_read_back_from_the_database_it_was_just_written_to(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The first turn stores the baseline and snapshot, then uses them: it never SELECTs them back."""
    statements: list[str] = []
    real_connect = sqlite3.connect

    def connect(*args, **kwargs):  # type: ignore[no-untyped-def]
        conn = real_connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    runner = CliRunner()
    session = runner.invoke(cli, ["session", "new", "--model", "echo/echo"], catch_exceptions=False).output.strip()
    statements.clear()
    result = runner.invoke(cli, ["session", "send", session, "hello"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert any(s.startswith("INSERT INTO epochs") for s in statements)
    assert not [s for s in statements if "FROM blobs" in s or "FROM snapshots" in s]


def test_agents_md_files_are_read_once_and_an_edit_rereads_only_that_file(tmp_path: Path) -> None:
    from nia_core import Location
    from nia_plugins import instructions

    root = project(tmp_path / "r", files={"AGENTS.md": "Root rules.\n", "sub/AGENTS.md": "Sub rules.\n"})
    location = Location(root / "sub", root)
    reads: list[str] = []
    real = nia_core.files.read_checked
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nia_core.files, "read_checked", lambda p, r, lim: reads.append(str(p)) or real(p, r, lim))
        [source] = instructions.nia_context_sources(location=location, config={})
        first = source.load()
        assert [item["text"] for item in first] == ["Sub rules.\n", "Root rules.\n"]
        assert source.load() is first
        (root / "AGENTS.md").write_text("Root rules, edited.\n")
        second = source.load()
    assert [item["text"] for item in second] == ["Sub rules.\n", "Root rules, edited.\n"]
    assert second[0] is first[0]  # the unchanged file's part, as made before: not read or decoded again
    assert sorted(reads) == sorted([str(root / "sub" / "AGENTS.md"), str(root / "AGENTS.md"), str(root / "AGENTS.md")])
