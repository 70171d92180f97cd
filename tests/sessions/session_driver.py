"""A runner process for the multi-process tests.

    python session_driver.py crash URL DIR_A DIR_B          # run boundaries until killed, naming each one done
    python session_driver.py race URL DIR_A DIR_B OPS SEED  # OPS random operations, then exit 0

``operate(..., kill_at=N)`` (used from a forked child) SIGKILLs its own process
just before the N-th SQL statement, to stop at a precise point of a boundary.

Context at a Location (a directory): ``test/tick``, a value this process
bumps before each operation (so nearly every boundary admits an update), and
``test/where``, the directory itself. Operations, on random sessions: sends
(one full turn with unique input), compactions, model switches and moves.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from pathlib import Path

from nia_core import ContextSource
from nia_core.context import SystemContext
from nia_core.errors import UsageError
from nia_core.providers.builtin import get_provider
from nia_core.sessions import Contexts, compact, move, open_store, run_turn, switch_model


def bump(location: str) -> None:
    path = Path(location) / "tick"
    scratch = path.with_name(f"tick.{os.getpid()}")
    scratch.write_text(str(time.monotonic_ns()))
    os.replace(scratch, path)


def context_for(location: str) -> SystemContext:
    tick = Path(location) / "tick"
    return SystemContext(
        [
            ContextSource(
                key="test/tick",
                load=lambda: int(tick.read_text()) if tick.exists() else 0,
                baseline=lambda v: f"The tick is {v}.",
                update=lambda old, new: f"The tick went from {old} to {new}.",
                removal=lambda old: "No tick any more.",
            ),
            ContextSource(key="test/where", load=lambda: location, baseline=lambda v: f"You are in {v}."),
        ]
    )


def kill_before_statement(store: object, n: int) -> None:
    """SIGKILL this process just before its ``n``-th SQL statement (SQLite stores only)."""
    count = 0

    def trace(_statement: str) -> None:
        nonlocal count
        count += 1
        if count >= n:
            os.kill(os.getpid(), signal.SIGKILL)

    store._conn.set_trace_callback(trace)  # type: ignore[attr-defined]


def operate(
    url: str, dirs: list[str], ops: int | None, seed: int, kill_at: int | None = None, tell: bool = False
) -> dict[str, int]:
    """Run ``ops`` random operations (``None``: until killed); ``tell`` prints each one's name once it is done."""
    rng = random.Random(seed)
    done: dict[str, int] = {}
    with open_store(url) as store:
        if kill_at is not None:
            kill_before_statement(store, kill_at)
        ids = [s.id for s in store.sessions()]
        print("ready", flush=True)
        step = 0
        while ops is None or step < ops:
            step += 1
            session_id = rng.choice(ids)
            location = store.session(session_id).location
            bump(location)
            roll = rng.random()
            contexts = Contexts(context_for)
            if roll < 0.7:
                what = type(run_turn(store, session_id, context_for, get_provider, text=f"{os.getpid()}-{step}"))
                name = what.__name__
            elif roll < 0.8:
                try:
                    name = type(compact(store, session_id, contexts)).__name__
                except UsageError:
                    name = "nothing-to-compact"
            elif roll < 0.9:
                model = rng.choice(["echo/a", "echo/b"])
                name = type(switch_model(store, session_id, model, contexts)).__name__
            else:
                move(store, session_id, rng.choice(dirs))
                name = "Moved"
            done[name] = done.get(name, 0) + 1
            if tell:
                print(name, flush=True)
    return done


def main() -> None:
    mode, url, dir_a, dir_b, *rest = sys.argv[1:]
    if mode == "crash":
        operate(url, [dir_a, dir_b], None, os.getpid(), tell=True)
    else:
        ops, seed = int(rest[0]), int(rest[1])
        print(sorted(operate(url, [dir_a, dir_b], ops, seed).items()), flush=True)


if __name__ == "__main__":
    main()
