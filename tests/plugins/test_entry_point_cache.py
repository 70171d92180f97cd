"""The entry-point scan is cached per interpreter and redone when an installed distribution changes."""

from __future__ import annotations

import os
import sys
import time

import pytest

from nia_core.plugin_host import epcache
from nia_core.plugin_host.discovery import entry_point_records
from nia_core.plugin_host.epcache import EntryPointRecord

PAST = time.time() - 3600


@pytest.fixture
def scans(monkeypatch):
    """Counts real scans; keeps every sys.path folder's mtime in the past so the cache may be written."""
    calls = []
    real = epcache.scan_uncached

    def counting(group):
        calls.append(group)
        return real(group)

    monkeypatch.setattr(epcache, "scan_uncached", counting)
    monkeypatch.setattr(epcache, "RACY_NS", 0)
    return calls


def settle(folder):
    os.utime(folder, (PAST, PAST))


def names():
    return [r.name for r in entry_point_records()]


def test_a_second_scan_comes_from_the_cache(site, scans):
    site.plugin("cached-one", "")
    settle(site.root)

    assert "cached-one" in names()
    assert "cached-one" in names()
    assert len(scans) == 1
    assert epcache.cache_file("nia").is_file()


def test_installing_or_removing_a_distribution_invalidates_it(site, scans):
    settle(site.root)
    assert "late" not in names()

    info = site.plugin("late", "")
    assert "late" in names()
    assert len(scans) == 2

    for path in info.iterdir():
        path.unlink()
    info.rmdir()
    assert "late" not in names()
    assert len(scans) == 3


def test_an_entry_points_file_edited_in_place_invalidates_it(site, scans):
    info = site.install("edited", plugins={"before": "mod"})
    settle(site.root)
    assert "before" in names()

    (info / "entry_points.txt").write_text("[nia]\nafter = mod\n")
    os.utime(info / "entry_points.txt", (PAST + 60, PAST + 60))

    assert "after" in names() and "before" not in names()


def test_a_folder_changed_this_instant_is_not_trusted(site, monkeypatch):
    site.plugin("fresh", "")  # the folder's mtime is now: another change could land in the same tick

    entry_point_records()

    assert not epcache.cache_file("nia").exists()


def test_a_corrupt_cache_file_is_ignored(site, scans):
    site.plugin("solid", "")
    settle(site.root)
    epcache.cache_file("nia").parent.mkdir(parents=True, exist_ok=True)
    epcache.cache_file("nia").write_text("{not json")

    assert "solid" in names()
    assert "solid" in names()
    assert len(scans) == 1


def test_nia_no_cache_turns_it_off(site, scans, monkeypatch):
    monkeypatch.setenv("NIA_NO_CACHE", "1")
    settle(site.root)

    names()
    names()

    assert len(scans) == 2 and not epcache.cache_file("nia").exists()


def test_each_interpreter_has_its_own_cache_file(monkeypatch):
    mine = epcache.cache_file("nia")
    monkeypatch.setattr("sys.prefix", "/elsewhere/venv")
    assert epcache.cache_file("nia") != mine


def test_a_record_loads_like_an_entry_point(site):
    site.install("loader", modules={"loader_mod/__init__.py": "class Box:\n    class Inner:\n        value = 42\n"})

    assert EntryPointRecord("x", "loader_mod:Box.Inner", "nia").load().value == 42
    assert EntryPointRecord("x", "loader_mod", "nia").load().__name__ == "loader_mod"
    assert EntryPointRecord("x", "loader_mod [extra]", "nia").module == "loader_mod"
    with pytest.raises(ValueError, match="not 'module' or 'module:attribute'"):
        EntryPointRecord("x", "not a value!", "nia").load()


def test_a_cache_that_cannot_be_written_is_no_error(site, scans, monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("NIA_CACHE_DIR", str(blocker / "nia"))
    site.plugin("anyway", "")
    settle(site.root)

    assert "anyway" in names() and "anyway" in names()
    assert len(scans) == 2


def test_an_editable_install_is_told_by_the_scan_and_an_edit_of_direct_url_json_rescans(site, scans):
    """Whether a plugin is under development comes with the cached scan; no start reads direct_url.json."""
    info = site.plugin("dev-one", "")
    (info / "direct_url.json").write_text('{"url": "file:///src/dev-one", "dir_info": {"editable": true}}')
    site.plugin("plain-one", "")
    settle(site.root)
    found = {r.name: r.editable for r in entry_point_records() if r.name in ("dev-one", "plain-one")}
    assert found == {"dev-one": True, "plain-one": False}
    assert {r.name: r.editable for r in entry_point_records() if r.name == "dev-one"} == {"dev-one": True}
    assert len(scans) == 1
    (info / "direct_url.json").write_text('{"url": "file:///src/dev-one", "dir_info": {}}')
    assert {r.name: r.editable for r in entry_point_records() if r.name == "dev-one"} == {"dev-one": False}
    assert len(scans) == 2


def test_each_sys_path_keeps_its_own_cache_file(site, scans, monkeypatch, tmp_path):
    """Two sys.path variants of one interpreter (a hook's PYTHONPATH, a shell) alternate without rescanning."""
    extra = tmp_path / "extra"
    extra.mkdir()
    settle(extra)
    settle(site.root)
    plain = list(sys.path)
    variants = [plain, [str(extra), *plain]]
    files = set()
    for _round in range(3):
        for variant in variants:
            monkeypatch.setattr("sys.path", variant)
            names()
            files.add(epcache.cache_file("nia"))
    assert len(scans) == 2  # each variant scanned once, on its first run
    assert len(files) == 2 and all(f.is_file() for f in files)


def test_the_cache_keeps_at_most_eight_files_per_interpreter(site, scans, monkeypatch, tmp_path):
    settle(site.root)
    plain = list(sys.path)
    for i in range(epcache.KEEP + 4):
        folder = tmp_path / f"p{i}"
        folder.mkdir()
        settle(folder)
        monkeypatch.setattr("sys.path", [str(folder), *plain])
        names()
        newest = epcache.cache_file("nia")
        past = PAST + i  # written in this order: the oldest go first
        os.utime(newest, (past, past))
    kept = sorted(epcache.cache_dir().glob("entry-points-*.json"))
    assert len(kept) == epcache.KEEP and newest in kept
    assert len(scans) == epcache.KEEP + 4

    epcache.forget("nia")
    assert not list(epcache.cache_dir().glob("entry-points-*.json"))
