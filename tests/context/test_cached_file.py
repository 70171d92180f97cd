"""Loaders nia knows to be fast (``StatCache.loader``): answered inline while the file is unchanged.

The rule proven here: an unchanged, already checked file costs no worker thread;
anything else (a change, a refusal, a subclass, an opaque loader) still runs on a
worker under its timeout, and a file that fails the path checks never reaches a prompt.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nia_core import StatCache, workers
from nia_core.context import (
    UNAVAILABLE,
    ContextSource,
    InitializationBlocked,
    SystemContext,
    Unchanged,
    Updated,
    initialize,
    reconcile,
)
from nia_core.files import MISS, CachedFile


def _source(key: str, load: Any) -> ContextSource:
    return ContextSource(key=key, load=load, baseline=lambda v: f"{key}: {v}", removal=lambda _v: f"{key} gone")


@pytest.fixture
def threads_started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the worker threads handed a job (a new thread or one kept from an earlier round)."""
    started: list[str] = []
    original = workers.start

    def start(job: Callable[[], None], name: str) -> None:
        started.append(name)
        original(job, name)

    monkeypatch.setattr(workers, "start", start)
    return started


def _files(tmp_path: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = tmp_path / f"f{i}.md"
        path.write_text(f"content {i}")
        paths.append(path)
    return paths


def test_unchanged_cached_files_are_observed_without_any_thread(tmp_path: Path, threads_started: list[str]) -> None:
    cache = StatCache()
    ctx = SystemContext([_source(f"t/{p.stem}", cache.loader(p, root=tmp_path)) for p in _files(tmp_path, 5)])
    generation = initialize(ctx)
    assert "t/f3: content 3" in generation.baseline
    threads_started.clear()

    result = reconcile(ctx, generation.snapshot)

    assert isinstance(result, Unchanged)
    assert [o.status for o in result.observations] == ["ok"] * 5
    assert threads_started == []


def test_a_changed_file_is_read_again_and_reported(tmp_path: Path, threads_started: list[str]) -> None:
    cache = StatCache()
    paths = _files(tmp_path, 3)
    ctx = SystemContext([_source(f"t/{p.stem}", cache.loader(p, root=tmp_path)) for p in paths])
    snapshot = initialize(ctx).snapshot
    paths[1].write_text("a longer new content")  # size changes: the stat signature differs
    threads_started.clear()

    result = reconcile(ctx, snapshot)

    assert isinstance(result, Updated)
    assert [c.key for c in result.changes] == ["t/f1"]
    assert "a longer new content" in result.text
    assert threads_started  # the changed file was read on a worker, under its timeout


def test_a_file_swapped_for_a_symlink_outside_is_never_handed_out(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text("SECRET TOKEN")
    path = project / "notes.md"
    path.write_text("notes")
    cache = StatCache()
    ctx = SystemContext([_source("t/notes", cache.loader(path, root=project))])
    snapshot = initialize(ctx).snapshot
    path.unlink()
    path.symlink_to(secret)

    result = reconcile(ctx, snapshot)

    assert not isinstance(result, Updated)
    assert [o.status for o in result.observations] == ["error"]
    assert all("SECRET" not in repr(o.value) for o in result.observations)


def test_a_hard_link_made_after_the_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("notes")
    cache = StatCache()
    loader = cache.loader(path, root=tmp_path)
    assert loader() == "notes"
    os.link(path, tmp_path / "other-name.md")  # changes ctime: the inline check misses, the checked read refuses

    assert loader.peek() is MISS
    with pytest.raises(OSError, match="hard link"):
        loader()


def test_on_error_and_derive_shape_the_value(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("abc")
    cache = StatCache()
    calls: list[bytes] = []

    def derive(content: Any) -> str:
        calls.append(content.data)
        return content.data.decode().upper()

    loader = cache.loader(path, derive=derive, on_error=lambda _exc: UNAVAILABLE)
    ctx = SystemContext([_source("t/data", loader)])
    snapshot = initialize(ctx).snapshot
    assert reconcile(ctx, snapshot) == Unchanged()
    assert calls == [b"abc"]  # an unchanged file derives nothing again
    path.unlink()

    result = reconcile(ctx, snapshot)

    assert [o.status for o in result.observations] == ["unavailable"]


def test_only_nias_own_loader_runs_inline(tmp_path: Path, threads_started: list[str]) -> None:
    """A subclass could override ``peek`` with anything: it is treated as any other loader."""
    peeked: list[str] = []

    class Mine(CachedFile):
        def peek(self) -> Any:
            peeked.append("called")
            return super().peek()

    path = tmp_path / "a.md"
    path.write_text("a")
    cache = StatCache()
    ctx = SystemContext([_source("t/a", Mine(cache, str(path), None, None, None, None))])
    snapshot = initialize(ctx).snapshot
    threads_started.clear()

    assert isinstance(reconcile(ctx, snapshot), Unchanged)
    assert peeked == []
    assert threads_started


def test_a_hanging_loader_beside_cached_files_still_times_out(tmp_path: Path) -> None:
    cache = StatCache()
    release = threading.Event()
    hang: list[bool] = [False]

    def maybe_hang() -> str:
        if hang[0]:
            release.wait(30)
        return "fine"

    sources = [_source(f"t/{p.stem}", cache.loader(p)) for p in _files(tmp_path, 3)]
    sources.append(ContextSource(key="t/hangs", load=maybe_hang, baseline=lambda v: v, timeout=0.2))
    ctx = SystemContext(sources)
    snapshot = initialize(ctx).snapshot
    hang[0] = True
    try:
        result = reconcile(ctx, snapshot)
    finally:
        release.set()

    assert [o.status for o in result.observations] == ["ok", "ok", "ok", "timeout"]
    assert isinstance(result, Unchanged)


def test_a_slow_first_read_of_a_cached_file_times_out(tmp_path: Path) -> None:
    """The first read of a file (a miss) runs under the loader's timeout like any loader."""
    path = tmp_path / "slow.md"
    path.write_text("x")
    cache = StatCache()
    gate = threading.Event()

    def slow(content: Any) -> str:
        gate.wait(30)
        return content.data.decode()

    ctx = SystemContext(
        [ContextSource(key="t/slow", load=cache.loader(path, derive=slow), baseline=lambda v: v, timeout=0.2)]
    )
    try:
        with pytest.raises(InitializationBlocked, match="t/slow"):  # had it run inline, it would have waited
            initialize(ctx)
    finally:
        gate.set()


def test_a_vouched_stat_stands_in_for_one_peek_only_and_not_for_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nia_core.files as files

    cache = StatCache()
    path = _files(tmp_path, 1)[0]
    loader = cache.loader(path, root=tmp_path)
    value = loader()
    stats: list[str] = []
    real_stat = os.stat
    monkeypatch.setattr(files.os, "stat", lambda p, *a, **k: stats.append(str(p)) or real_stat(p, *a, **k))

    cache.vouch(str(path), files.signature(real_stat(path)))
    assert loader.peek() is value and stats == []  # the walk's stat served
    assert loader.peek() is value and stats == [str(path)]  # used once: the next peek stats again

    clock = [1000.0]
    monkeypatch.setattr(files.time, "monotonic", lambda: clock[0])
    cache.vouch(str(path), files.signature(real_stat(path)))
    clock[0] += files.VOUCH_SECONDS + 0.1
    assert loader.peek() is value and len(stats) == 2  # too old: stat'ed afresh

    cache.vouch(str(path), (0, 0, 0, 0, 0))  # a vouch for another signature never answers for this content
    path.write_text("changed!")
    assert loader.peek() is MISS


def test_a_constant_loader_is_answered_inline(threads_started: list[str]) -> None:
    from nia_core.context.source import Constant

    ctx = SystemContext([_source("t/role", Constant("be brief")), _source("t/task", Constant({"x": 1}))])
    generation = initialize(ctx)
    threads_started.clear()
    result = reconcile(ctx, generation.snapshot)
    assert isinstance(result, Unchanged)
    assert [o.status for o in result.observations] == ["ok", "ok"]
    assert threads_started == []


def test_bytes_are_let_go_once_every_loader_holds_its_value_and_nothing_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nia_core.files as files

    reads: list[str] = []
    real = files.read_checked
    monkeypatch.setattr(files, "read_checked", lambda p, r, lim: reads.append(str(p)) or real(p, r, lim))
    cache = StatCache()
    path = _files(tmp_path, 1)[0]
    text = cache.loader(path, root=tmp_path)
    size = cache.loader(path, root=tmp_path, derive=lambda content: len(content.data))

    assert text() == "content 0" and cache.stat_unchanged(path, root=tmp_path) == b"content 0"  # one still needs them
    assert size() == 9
    assert cache.stat_unchanged(path, root=tmp_path) is None  # both hold their values: the bytes are gone
    first = text()
    assert first == "content 0" and text.peek() is first and size.peek() == 9
    assert reads == [str(path)]  # one read served both loaders, before and after the bytes went

    path.write_text("content 1!")
    assert text() == "content 1!" and size() == 10 and len(reads) == 2
    assert cache.read_bytes(path, root=tmp_path) == b"content 1!"  # a reader that needs the bytes gets them
