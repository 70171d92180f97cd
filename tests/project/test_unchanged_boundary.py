"""An unchanged project boundary: a listing per folder and a stat per file, nothing re-read or rebuilt.

And the short cut never hides a change: a file added, removed, renamed or
edited (even to the same size), a file swapped for a hard link or a binary,
a folder swapped for a symlink out of the project are all seen at the very
next boundary, exactly as with cold caches.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import nia_core.files
from nia_core.context import Unchanged, Updated, initialize, reconcile
from nia_core.project import locate
from nia_core.project.merge import forget
from nia_core.project.sections import project_context_sources
from nia_core.project.workflow import Workflow, assemble_workflow
from tests.project.helpers import project

COMMANDS = """
[[workflows]]
target = "t"

[[workflows.context]]
type = "directory"
path = "docs/"

[[workflows.context]]
type = "directory"
path = "more/"

[[workflows.operations]]
name = "run"
"""


@pytest.fixture(autouse=True)
def cold() -> None:
    forget()


def _workflow(tmp_path: Path) -> tuple[Path, Workflow]:
    files: dict[str, str | bytes] = {f"docs/n{i}.md": f"note {i}\n" for i in range(6)}
    files |= {f"more/sub/m{i}.md": f"more {i}\n" for i in range(3)}
    files["docs/pic.png"] = b"\x89PNG\r\n\x1a\n\x00"
    root = project(tmp_path / "p", project_toml='[project]\nname = "x"\n', commands_toml=COMMANDS, files=files)
    return root, assemble_workflow(locate(root), "t", "run")


def _changes(result: object) -> list[tuple[str, str]]:
    assert isinstance(result, Updated), result
    return [(c.kind, c.text.split("\n")[0]) for c in result.changes]


def test_an_unchanged_boundary_opens_no_file_stats_none_twice_and_starts_no_thread(tmp_path, monkeypatch):
    _root, workflow = _workflow(tmp_path)
    snapshot = initialize(workflow.system_context()).snapshot
    reconcile(workflow.system_context(), snapshot)  # warm: the first lenient refresh fills the memos
    before = workflow.system_context().sources

    opened: list[str] = []
    stats: list[str] = []
    threads: list[str] = []
    real_open, real_stat, real_start = os.open, os.stat, threading.Thread.start

    def open_file(path, flags, *args, **kwargs):  # a listing opens its folder (O_DIRECTORY), as scandir does
        if not flags & os.O_DIRECTORY:
            opened.append(str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(nia_core.files.os, "open", open_file)
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: stats.append(os.fspath(p)) or real_stat(p, *a, **k))
    monkeypatch.setattr(threading.Thread, "start", lambda self: threads.append(self.name) or real_start(self))

    ctx = workflow.system_context()
    result = reconcile(ctx, snapshot)

    assert isinstance(result, Unchanged)
    assert all(a is b for a, b in zip(ctx.sources, before, strict=True))  # the very same sources, not rebuilt
    assert opened == []
    # Each file's one stat is the listing's (DirEntry.stat); nothing stats a context file again.
    assert [p for p in stats if p.endswith(".md")] == []
    assert threads == []


def test_files_added_removed_and_renamed_in_a_listed_folder_are_seen(tmp_path):
    root, workflow = _workflow(tmp_path)
    snapshot = initialize(workflow.system_context()).snapshot
    assert isinstance(reconcile(workflow.system_context(), snapshot), Unchanged)

    (root / "docs" / "n9.md").write_text("new\n")
    result = reconcile(workflow.system_context(), snapshot)
    assert _changes(result) == [("added", "## File: docs/n9.md")]
    snapshot = result.snapshot

    (root / "docs" / "n2.md").unlink()
    (root / "more" / "sub" / "m1.md").rename(root / "more" / "sub" / "m7.md")
    result = reconcile(workflow.system_context(), snapshot)
    kinds = sorted(kind for kind, _ in _changes(result))
    assert kinds == ["added", "removed", "removed"]
    assert "more 1" in result.text and "m7.md" in result.text
    assert [f.path for f in workflow.category2.files] == [
        *(f"docs/n{i}.md" for i in (0, 1, 3, 4, 5, 9)),
        "more/sub/m0.md",
        "more/sub/m2.md",
        "more/sub/m7.md",
    ]


def test_an_edit_that_keeps_the_size_is_seen(tmp_path):
    root, workflow = _workflow(tmp_path)
    snapshot = initialize(workflow.system_context()).snapshot
    reconcile(workflow.system_context(), snapshot)
    (root / "docs" / "n3.md").write_text("NOTE 3\n")  # same size as "note 3\n"
    result = reconcile(workflow.system_context(), snapshot)
    assert _changes(result) == [
        ("updated", "The file docs/n3.md (task context) changed. Its current content replaces the earlier one:")
    ]
    assert "NOTE 3" in result.text


def test_a_file_swapped_for_a_hard_link_to_outside_is_left_out_unread(tmp_path):
    root, workflow = _workflow(tmp_path)
    snapshot = initialize(workflow.system_context()).snapshot
    reconcile(workflow.system_context(), snapshot)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=hunter2\n")
    os.link(secret, root / "docs" / "tmp-link")
    os.replace(root / "docs" / "tmp-link", root / "docs" / "n1.md")

    result = reconcile(workflow.system_context(), snapshot)

    assert _changes(result) == [
        ("removed", "The file docs/n1.md is no longer part of the task context; disregard its earlier content.")
    ]
    assert "hunter2" not in result.text
    assert "docs/n1.md" not in [f.path for f in workflow.category2.files]


def test_a_file_turned_binary_is_left_out(tmp_path):
    root, workflow = _workflow(tmp_path)
    snapshot = initialize(workflow.system_context()).snapshot
    reconcile(workflow.system_context(), snapshot)
    (root / "docs" / "n4.md").write_bytes(b"note\x00 4\n")
    result = reconcile(workflow.system_context(), snapshot)
    assert [kind for kind, _ in _changes(result)] == ["removed"]
    assert [(s.original_path, s.reason) for s in workflow.category2.skipped if s.original_path == "docs/n4.md"] == [
        ("docs/n4.md", "binary")
    ]


def test_a_listed_folder_swapped_for_a_symlink_out_of_the_project_is_refused(tmp_path):
    root, workflow = _workflow(tmp_path)
    snapshot = initialize(workflow.system_context()).snapshot
    reconcile(workflow.system_context(), snapshot)
    outside = tmp_path / "outside"
    outside.mkdir()
    for i in range(3):  # the very names the folder held, with other bytes
        (outside / f"m{i}.md").write_text(f"SECRET {i}\n")
    (root / "more" / "sub").rename(tmp_path / "moved")
    (root / "more" / "sub").symlink_to(outside, target_is_directory=True)

    result = reconcile(workflow.system_context(), snapshot)

    assert [kind for kind, _ in _changes(result)] == ["removed"] * 3
    assert "SECRET" not in result.text
    assert any("outside" in w for w in workflow.category2.warnings)


def test_project_toml_context_entries_take_the_same_short_cut(tmp_path, monkeypatch):
    toml = '[project]\nname = "x"\n\n[[project.context]]\ntype = "directory"\npath = "docs/"\n'
    root = project(tmp_path / "p", project_toml=toml, files={f"docs/d{i}.md": f"doc {i}\n" for i in range(4)})
    location = locate(root)
    first = project_context_sources(location)
    second = project_context_sources(location)
    assert all(a is b for a, b in zip(first, second, strict=True)) and len(first) == 5
    (root / "docs" / "d9.md").write_text("doc 9\n")
    assert len(project_context_sources(location)) == 6
