"""Daemon threads kept between jobs: every call into plugin code, nia's rounds of them and the resident's hooks.

Starting a thread, and waiting until it runs, costs more than most of what
nia hands it on a busy machine (0.3-1 ms each on two loaded cores): a
boundary runs two rounds of calls, and a resident process runs them at every
hook. A worker whose job returned waits for the next job of its name; at
most :data:`KEPT` of each name wait, the rest end. A worker still in a job
(a call nia abandoned at its deadline) is never handed another. A kept
worker starts each job as a new thread would: see :meth:`_Worker._run`.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections.abc import Callable

KEPT = 4
"""Idle workers kept per name."""


class _Worker:
    def __init__(self, name: str) -> None:
        self.posted = threading.Semaphore(0)
        self.job: Callable[[], None] | None = None
        self.thread = threading.Thread(target=self._run, args=(name,), daemon=True, name=name)
        self.thread.start()

    def _run(self, name: str) -> None:
        # What a thread carries from one job to the next is set back to what a new thread starts with: its
        # trace and profile functions (a plugin's tracer would see the next hook's calls, another project's
        # values), its name, and its context variables (each job runs in an empty context, as a new thread).
        thread, trace, profile = threading.current_thread(), sys.gettrace(), sys.getprofile()
        while True:
            self.posted.acquire()
            job, self.job = self.job, None
            if job is None:
                return
            contextvars.Context().run(job)  # a job reports its own outcome; one that raises ends its worker
            del job  # what the job refers to is not kept alive by an idle worker
            if sys.gettrace() is not trace:
                sys.settrace(trace)
            if sys.getprofile() is not profile:
                sys.setprofile(profile)
            if thread.name != name:
                thread.name = name
            with _lock:
                idle = _idle.setdefault(name, [])
                if len(idle) >= KEPT:
                    return
                idle.append(self)


_idle: dict[str, list[_Worker]] = {}
_lock = threading.Lock()


def start(job: Callable[[], None], name: str) -> threading.Thread:
    """Run ``job()`` on a daemon thread named ``name``: an idle one of that name, else a new one; that thread."""
    with _lock:
        idle = _idle.get(name)
        worker = idle.pop() if idle else None
    if worker is None or not worker.thread.is_alive():
        worker = _Worker(name)
    worker.job = job
    worker.posted.release()
    return worker.thread


def _forget() -> None:
    """In a forked child none of the parent's threads exist, and the lock may have been held at the fork."""
    global _lock
    _lock = threading.Lock()
    _idle.clear()


os.register_at_fork(after_in_child=_forget)
