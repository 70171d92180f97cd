"""Worker threads are kept between jobs: a boundary's rounds and a resident's hooks start no thread each."""

from __future__ import annotations

import threading
import time

import pytest

from nia_core import workers


def _run(name: str) -> str:
    ran: list[str] = []
    done = threading.Event()

    def job() -> None:
        ran.append(threading.current_thread().name)
        done.set()

    workers.start(job, name)
    assert done.wait(5)
    return ran[0]


def test_jobs_one_after_another_reuse_the_worker_the_last_one_left_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    original = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        started.append(thread.name)
        original(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    for _ in range(20):
        _run("nia-test-kept")
        time.sleep(0.02)  # the worker goes idle right after its job signalled
    assert len(started) <= 10  # one, unless the machine delayed a worker's going idle past the pause


def test_a_worker_still_in_its_job_is_never_handed_another() -> None:
    release = threading.Event()
    held: list[int | None] = []

    def hang() -> None:
        held.append(threading.get_ident())
        release.wait(10)

    workers.start(hang, "nia-test-busy")
    try:
        ran: list[int | None] = []
        done = threading.Event()

        def job() -> None:
            ran.append(threading.get_ident())
            done.set()

        workers.start(job, "nia-test-busy")
        assert done.wait(5)  # not queued behind the hung job
        assert ran != held
    finally:
        release.set()
