"""The merging rules within a category: order, dedup, expansion, exclusions, limits, skipping."""

from __future__ import annotations

import os

import pytest

import nia_core.files
from nia_core.project.binary import binary_extension, looks_binary
from nia_core.project.config import ContextEntry
from nia_core.project.merge import MAX_FILE_BYTES, classify, merge
from nia_core.project.prompt import CONTEXT_FILES, file_key, file_source
from tests.project.helpers import project

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def entry(kind, path, description="", origin="o"):
    return ContextEntry(kind, path, description, origin)


def paths(merged):
    return [f.path for f in merged.files]


def test_union_in_order_target_operation_files_dirs(tmp_path):
    root = project(tmp_path, files={n: n for n in ("A.md", "B.md", "C.md", "D.md", "E.md", "F/1.md", "F/2.md")})
    entries = [entry("file", n) for n in ("A.md", "B.md", "C.md", "D.md", "E.md")] + [entry("directory", "F/")]
    assert paths(merge(root, entries)) == ["A.md", "B.md", "C.md", "D.md", "E.md", "F/1.md", "F/2.md"]


def test_directory_order_is_files_by_name_then_subfolders_depth_first(tmp_path):
    names = [
        "docs/b.md",
        "docs/a.md",
        "docs/B.md",
        "docs/sub/z.md",
        "docs/sub/deeper/y.md",
        "docs/sub/c.md",
        "docs/aa/x.md",
    ]
    root = project(tmp_path, files={n: n for n in names})
    merged = merge(root, [entry("directory", "docs")])
    assert paths(merged) == [
        "docs/B.md",
        "docs/a.md",
        "docs/b.md",
        "docs/aa/x.md",
        "docs/sub/c.md",
        "docs/sub/z.md",
        "docs/sub/deeper/y.md",
    ]


def test_expanded_files_inherit_the_description_and_keep_the_written_prefix(tmp_path):
    root = project(tmp_path, files={"docs/p/one.md": "1", "docs/p/two.md": "2"})
    merged = merge(root, [entry("directory", "./docs/p", "Patterns", "origin-x")])
    assert [(f.original_path, f.description, f.directory, f.origin) for f in merged.files] == [
        ("./docs/p/one.md", "Patterns (from directory)", "./docs/p/", "origin-x"),
        ("./docs/p/two.md", "Patterns (from directory)", "./docs/p/", "origin-x"),
    ]
    plain = merge(root, [entry("directory", "docs/p/")])
    assert {f.description for f in plain.files} == {"(from directory)"}


def test_excluded_folders_are_never_walked(tmp_path):
    excluded = [".git", ".nia", "node_modules", ".venv", "__pycache__", ".mypy_cache", "target", "dist", "build"]
    files = {f"docs/{name}/hidden.md": "no" for name in excluded}
    files.update({"docs/keep.md": "yes", "docs/build.md": "a file named like a folder", "docs/.github/ci.md": "yes"})
    root = project(tmp_path, files=files)
    assert paths(merge(root, [entry("directory", "docs")])) == ["docs/build.md", "docs/keep.md", "docs/.github/ci.md"]
    whole = merge(root, [entry("directory", ".")])
    assert not any(part in excluded for f in whole.files for part in f.path.split("/")[:-1])


def test_an_explicit_file_inside_an_excluded_folder_is_allowed(tmp_path):
    root = project(tmp_path, files={"build/report.md": "report"})
    assert paths(merge(root, [entry("file", "build/report.md")])) == ["build/report.md"]


def test_dedup_within_a_category_keeps_the_first_and_notes_the_rest(tmp_path):
    root = project(tmp_path, files={"docs/a.md": "a", "docs/b.md": "b"})
    merged = merge(root, [entry("file", "docs/b.md", origin="first"), entry("directory", "docs", origin="dir")])
    assert paths(merged) == ["docs/b.md", "docs/a.md"]
    assert [(s.original_path, s.reason) for s in merged.skipped] == [("docs/b.md", "duplicate of first")]


def test_directory_limit_warns_and_skips_the_rest(tmp_path):
    root = project(tmp_path, files={f"docs/f{i:03d}.md": str(i) for i in range(105)})
    merged = merge(root, [entry("directory", "docs/")])
    assert paths(merged) == [f"docs/f{i:03d}.md" for i in range(100)]
    assert merged.warnings == ("Maximum file limit (100) reached for directory docs/\n  Skipped remaining files",)


def test_exactly_100_files_and_skipped_files_do_not_trip_the_limit(tmp_path):
    files: dict[str, str | bytes] = {f"docs/f{i:03d}.md": str(i) for i in range(100)}
    files.update({f"docs/z{i}.png": PNG for i in range(5)})
    root = project(tmp_path, files=files)
    merged = merge(root, [entry("directory", "docs")])
    assert len(merged.files) == 100 and merged.warnings == ()
    assert [s.reason for s in merged.skipped] == ["binary"] * 5


def test_limit_is_per_directory_source(tmp_path):
    files = {f"{d}/f{i:03d}.md": f"{d}{i}" for d in ("a", "b") for i in range(101)}
    root = project(tmp_path, files=files)
    merged = merge(root, [entry("directory", "a"), entry("directory", "b")])
    assert len(merged.files) == 200
    assert [w.splitlines()[0] for w in merged.warnings] == [
        "Maximum file limit (100) reached for directory a/",
        "Maximum file limit (100) reached for directory b/",
    ]


def test_the_folder_limit_stops_the_walk_once_with_one_warning_naming_the_entry(tmp_path):
    files = {f"docs/d{i}/f.md": str(i) for i in range(4)}  # docs/ and four subfolders: five folders
    files["more/m.md"] = "m"
    root = project(tmp_path, files=files)
    for name in ("e0", "e1", "e2"):
        os.makedirs(root / "docs" / "d3" / name)  # empty: only the folder limit can stop their walk
    entries = [
        entry("directory", "docs", origin="project.toml [[project.context]][0]"),
        entry("directory", "more", origin="project.toml [[project.context]][1]"),
    ]
    merged = merge(root, entries, folder_limit=3)
    assert paths(merged) == ["docs/d0/f.md", "docs/d1/f.md"]
    assert merged.warnings == (
        "Maximum folder limit (3) reached for directory docs/ (project.toml [[project.context]][0])\n"
        "  Skipped remaining folders",
    )
    assert [(s.original_path, s.origin, s.reason) for s in merged.skipped] == [
        ("more/", "project.toml [[project.context]][1]", "not walked: the limit of 3 folders was reached")
    ]
    assert merge(root, entries, folder_limit=9).warnings == (), "nine folders in all: the limit is not reached"


def test_oversize_and_binary_files_are_skipped_with_a_reason(tmp_path):
    root = project(
        tmp_path,
        files={
            "docs/ok.md": "fine",
            "docs/diagram.png": PNG,
            "docs/disguised.md": PNG,
            "docs/lib.so": "text, but a library by name",
            "docs/nul.txt": b"abc\x00def",
            "docs/exactly.md": "x" * MAX_FILE_BYTES,
        },
    )
    with open(root / "docs/dump.sql", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    merged = merge(root, [entry("directory", "docs")])
    assert paths(merged) == ["docs/exactly.md", "docs/ok.md"]
    assert {s.original_path: s.reason for s in merged.skipped} == {
        "docs/diagram.png": "binary",
        "docs/disguised.md": "binary",
        "docs/dump.sql": "exceeds 1MB limit",
        "docs/lib.so": "binary",
        "docs/nul.txt": "binary",
    }
    assert {s.note() for s in merged.skipped} >= {
        "Skipped: docs/diagram.png (binary)",
        "Skipped: docs/dump.sql (exceeds 1MB limit)",
    }


def test_skipped_explicit_files_are_notes_not_errors(tmp_path):
    root = project(tmp_path, files={"docs/diagram.png": PNG})
    merged = merge(root, [entry("file", "docs/diagram.png")], strict=True)
    assert merged.files == () and merged.skipped[0].reason == "binary"


def test_special_files_met_while_walking_are_skipped(tmp_path):
    root = project(tmp_path, files={"docs/ok.md": "ok"})
    os.mkfifo(root / "docs/pipe")
    os.symlink("nowhere.md", root / "docs/broken.md")
    merged = merge(root, [entry("directory", "docs")])
    assert paths(merged) == ["docs/ok.md"]
    assert {s.original_path: s.reason for s in merged.skipped} == {
        "docs/broken.md": "broken symlink",
        "docs/pipe": "not a regular file",
    }


@pytest.mark.parametrize(
    ("head", "binary"),
    [
        (b"\x89PNG\r\n\x1a\nrest", True),
        (b"\xff\xd8\xff\xe0JFIF", True),
        (b"GIF89a....", True),
        (b"%PDF-1.7\n", True),
        (b"PK\x03\x04zip", True),
        (b"\x1f\x8b\x08gzip", True),
        (b"\x7fELF\x02\x01", True),
        (b"\xcf\xfa\xed\xfe", True),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", True),
        (b"SQLite format 3\x00", True),
        (b"text" + b"\x00" + b"more", True),
        (b"x" * 8191 + b"\x00", True),
        (b"x" * 8192 + b"\x00", False),  # only the first 8 KB are examined
        (b"MZ is the start of this sentence.", False),
        (b"# Markdown\n\nplain text\n", False),
        ("unicode é ü 中文".encode(), False),
    ],
)
def test_looks_binary(head, binary):
    assert looks_binary(head) is binary


def test_binary_extensions():
    for name in ("a.exe", "b.DLL", "c.so", "d.dylib", "e.png", "f.tar.gz", "g.pyc"):
        assert binary_extension(name), name
    for name in ("a.md", "b.py", "Makefile", ".so", "so"):
        assert not binary_extension(name), name


def test_classification_is_cached_by_stat_signature(tmp_path, monkeypatch):
    path = tmp_path / "a.md"
    path.write_text("text")
    info = os.stat(path)
    root = str(tmp_path)
    assert classify(str(path), info, root) == (None, 4)
    reads = []
    original = nia_core.files.StatCache.read
    monkeypatch.setattr(
        nia_core.files.StatCache, "read", lambda self, *a, **k: reads.append(a) or original(self, *a, **k)
    )
    assert classify(str(path), info, root) == (None, 4)
    assert reads == []
    path.write_bytes(b"now \x00 binary")
    assert classify(str(path), os.stat(path), root) == ("binary", 12)
    assert len(reads) == 1


def test_an_unchanged_file_costs_one_stat_and_returns_the_same_value(tmp_path, monkeypatch):
    path = tmp_path / "a.md"
    path.write_text("hello")
    source = file_source(file_key(CONTEXT_FILES, "a.md"), str(path), "a.md", "", "md", "context_file", str(tmp_path))
    first = source.load()
    opened, stats = [], []
    real_open = os.open
    monkeypatch.setattr(nia_core.files.os, "open", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    real_stat = os.stat
    monkeypatch.setattr(nia_core.files.os, "stat", lambda *a, **k: stats.append(a) or real_stat(*a, **k))
    assert source.load() is first
    assert opened == [] and len(stats) == 1
    path.write_text("hello, world")
    assert source.load().text == "hello, world"


def test_lenient_merge_leaves_a_missing_file_out(tmp_path):
    root = project(tmp_path, files={"a.md": "a"})
    merged = merge(root, [entry("file", "gone.md", origin="x"), entry("file", "a.md")], strict=False)
    assert paths(merged) == ["a.md"]
    assert merged.warnings == ("Context file not found: gone.md\n  Source: x",)


def test_missing_directory_has_its_own_message(tmp_path):
    root = project(tmp_path)
    from nia_core.project.paths import ContextNotFound

    with pytest.raises(ContextNotFound, match="Context directory not found: docs/missing/"):
        merge(root, [entry("directory", "docs/missing/")])


def test_file_keys_are_valid_lowercase_and_stable(tmp_path):
    from nia_core.context import validate_key

    key = file_key(CONTEXT_FILES, "Docs/ÜPPER Case.md")
    assert validate_key(key) == key and key == key.lower()
    assert key == file_key(CONTEXT_FILES, "Docs/ÜPPER Case.md") != file_key(CONTEXT_FILES, "docs/üpper case.md")
