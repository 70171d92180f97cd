"""The change watcher on its own: real folders, real writes, real ``watchfiles``."""

from __future__ import annotations

import time

import pytest

from nia_core.plugin_host.watch import ChangeWatcher, WatchSettings

WAIT = 15.0


@pytest.fixture
def watched(tmp_path):
    folder = tmp_path / "watched"
    folder.mkdir()
    watcher = ChangeWatcher(lambda: [folder], lambda path: path.suffix == ".py", WatchSettings())
    with watcher:
        assert watcher.ready.wait(WAIT)
        yield folder, watcher


def next_paths(watcher):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        batch = watcher.next_batch(timeout=0.2)
        if batch:
            return {path.name for path in batch}
    raise AssertionError("no batch")


def test_a_save_made_while_the_consumer_is_busy_is_delivered_right_after(watched):
    folder, watcher = watched
    (folder / "a.py").write_text("a")
    assert next_paths(watcher) == {"a.py"}
    (folder / "b.py").write_text("b")  # nobody is asking for batches now (a reload is running)
    time.sleep(0.1)
    assert next_paths(watcher) == {"b.py"}


def test_a_burst_with_pauses_shorter_than_the_settle_time_is_one_batch(watched):
    folder, watcher = watched
    for chunk in range(3):
        for i in range(10):
            (folder / f"f{chunk}{i}.py").write_text("x")
        time.sleep(0.06)  # longer than a step, shorter than the settle
    assert len(next_paths(watcher)) == 30
    assert watcher.next_batch(timeout=0.3) == frozenset()


def test_irrelevant_files_are_filtered_out(watched):
    folder, watcher = watched
    (folder / "notes.txt").write_text("x")
    (folder / "c.py").write_text("c")
    assert next_paths(watcher) == {"c.py"}


def test_a_folder_that_appears_later_is_watched_and_a_full_check_is_asked_for(tmp_path):
    later = tmp_path / "later"
    watcher = ChangeWatcher(lambda: [later], lambda path: True, WatchSettings())
    with watcher:
        assert watcher.ready.wait(WAIT)
        later.mkdir()
        deadline = time.monotonic() + WAIT
        batch = frozenset()
        while batch == frozenset() and time.monotonic() < deadline:
            batch = watcher.next_batch(timeout=0.2)
        assert batch is None  # a full check: the folder's contents were never seen
        assert watcher.watching == (later,)
        (later / "d.py").write_text("d")
        assert next_paths(watcher) == {"d.py"}
