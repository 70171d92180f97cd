"""How a turn's cost grows with its session's history, on SQLite and PostgreSQL, beside encoding the request once.

    python bench/bench_turns.py [--sizes 20,1000,10000] [--turns 50] [--stores sqlite,postgres] [--runs 1]

Every request carries the whole conversation, so encoding it once is the floor of
a turn's growth. Each row is one session at a size (messages in its history):
``--turns`` turns through ``nia_core.runtime`` (``Runtime.turn``: the project's
plugins, the boundary, the echo provider, the stored reply), median per turn of

- the whole turn;
- the store's share: the time spent inside the store's methods (a method calling
  another is charged once), and this thread's CPU time in them (SQLite syncs
  every commit to disk, and a busy disk blurs the wall time);
- encoding the request once: the echo provider's lowering and its JSON
  (``canonical_json(EchoProvider().lower(request))``) of the very request the turn sent;

and at the end of each store's table the two goals: the store's share at the
largest size over its share at the smallest (goal: at most 1.2x), and the
turn's growth from the smallest size over the encoding's growth (goal: at most 1.5x).

A session reaches its size by rows written with SQL in one transaction, exactly
as turns write them (a user message and the echo reply, alternating), so the
bench does not spend minutes building history; the measured turns then run on a
freshly opened store (the first turn reads the whole history; the median is of
the turns after it), round the sessions of every size in turn, so a busy spell
of the machine hits every size alike.

PostgreSQL is ``NIA_TEST_POSTGRES_URL`` or a ``postgresql://`` ``NIA_DB``;
without either a throwaway local cluster is started (tests/postgres/pg_server.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nia_core.context import canonical_json
from nia_core.model import Message, ModelRequest, Reply, StreamCallback
from nia_core.providers.echo import EchoProvider
from nia_core.runtime import Runtime
from nia_core.sessions import Store, open_store
from nia_core.sessions.serialize import message_body, now

HERE = Path(__file__).resolve().parent

STORE_METHODS = (
    "view",
    "state",
    "history",
    "session",
    "enqueue",
    "promote",
    "append",
    "admit_update",
    "start_epoch",
    "epochs",
    "snapshot",
)


class StoreTimer:
    """Wraps ``store``'s methods in place; ``seconds`` adds up the time spent in them (outermost call only),
    ``cpu`` this thread's CPU time in them (what a disk's or a server's wait does not blur)."""

    def __init__(self, store: Store) -> None:
        self.seconds = 0.0
        self.cpu = 0.0
        self._depth = 0
        for name in STORE_METHODS:
            method = getattr(store, name, None)
            if method is not None:
                setattr(store, name, self._wrap(method))

    def _wrap(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return method(*args, **kwargs)
            self._depth += 1
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.cpu += time.thread_time() - cpu
                self._depth -= 1

        return timed


class Recording:
    """The provider lookup ``Runtime.turn`` takes: always the echo provider, keeping the last request."""

    def __init__(self) -> None:
        self.echo = EchoProvider()
        self.last: ModelRequest | None = None

    def check(self, model: str) -> str:
        return model

    def __call__(self, model: str) -> Recording:
        return self

    def send(self, request: ModelRequest, *, stream: StreamCallback | None = None) -> Reply:
        self.last = request
        return self.echo.send(request, stream=stream)


def encode_once(request: ModelRequest) -> float:
    """Seconds to encode ``request`` once as the echo provider does (its lowering, then its JSON)."""
    started = time.perf_counter()
    canonical_json(EchoProvider().lower(request))
    return time.perf_counter() - started


def fill(url: str, session_id: str, upto: int) -> None:
    """Append user/assistant pairs after the session's last message until it holds ``upto`` messages."""
    question = "Please look at the next part of the module and say what it does, briefly."
    answer = (
        "[echo/echo] baseline 2048 bytes, sha256 0123456789abcdef\nmessages: 41 (20 assistant, 21 user)\n"
        "you said: Please look at the next part of the module and say what it does, briefly."
    )
    bodies = {"user": message_body(Message("user", question)), "assistant": message_body(Message("assistant", answer))}
    created = now()
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url, autocommit=False) as conn:
            row = conn.execute("SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = %s", (session_id,))
            last = row.fetchone()[0]  # type: ignore[index]
            rows = [
                (session_id, seq, 1, kind, bodies[kind], created)
                for seq in range(last + 1, upto + 1)
                for kind in ("user" if (seq - last) % 2 else "assistant",)
            ]
            with conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO messages (session_id, seq, epoch, kind, body, created)"
                    " VALUES (%s, %s, %s, %s, %s, %s)",
                    rows,
                )
        return
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    with conn:
        last = conn.execute("SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?", (session_id,))
        start = last.fetchone()[0]
        conn.executemany(
            "INSERT INTO messages (session_id, seq, epoch, kind, body, created) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (session_id, seq, 1, "user" if (seq - start) % 2 else "assistant", body, created)
                for seq in range(start + 1, upto + 1)
                for body in (bodies["user" if (seq - start) % 2 else "assistant"],)
            ],
        )
    conn.close()


Row = tuple[int, float, float, float, float, int]
"""``(size, median turn ms, store ms, store CPU ms, encoding ms, messages sent at the end)``."""


def measure(url: str, project: Path, sizes: list[int], turns: int) -> list[Row]:
    """Per size, a :data:`Row`.

    One session per size in one database; the turns go round the sessions (one turn each per round), so a
    busy spell of the machine hits every size alike.
    """
    runtime = Runtime()
    provider = Recording()
    sessions = []
    with open_store(url) as store:
        for _ in sizes:
            session_id = runtime.create_session(store, project, "echo/echo").id
            runtime.turn(store, session_id, "start", providers=provider)  # the epoch, and its first two messages
            sessions.append(session_id)
    for size, session_id in zip(sizes, sessions, strict=True):
        if size > 2:
            fill(url, session_id, size)
    samples: dict[int, tuple[list[float], ...]] = {size: ([], [], [], []) for size in sizes}
    sent: dict[int, int] = {}
    with open_store(url) as store:
        timer = StoreTimer(store)
        for index in range(turns + 1):
            for size, session_id in zip(sizes, sessions, strict=True):
                timer.seconds = timer.cpu = 0.0
                started = time.perf_counter()
                runtime.turn(store, session_id, f"turn {index}: what next?", providers=provider)
                elapsed = time.perf_counter() - started
                assert provider.last is not None
                sent[size] = len(provider.last.messages)
                if index:  # the first turn of a fresh store reads the whole history: not a steady turn
                    turn_ms, store_ms, store_cpu_ms, encode_ms = samples[size]
                    turn_ms.append(elapsed * 1000)
                    store_ms.append(timer.seconds * 1000)
                    store_cpu_ms.append(timer.cpu * 1000)
                    encode_ms.append(encode_once(provider.last) * 1000)
    return [
        (size, *(statistics.median(values) for values in samples[size]), sent[size])  # type: ignore[misc]
        for size in sizes
    ]


def make_project(root: Path) -> Path:
    """A small project: an AGENTS.md and a project.toml (the built-in plugins read both)."""
    (root / ".nia").mkdir(parents=True)
    (root / ".nia" / "project.toml").write_text('[project]\nname = "turns"\n')
    (root / "AGENTS.md").write_text("Answer briefly. Use the project's own words.\n")
    return root


@contextlib.contextmanager
def postgres() -> Iterator[str | None]:
    for name in ("NIA_TEST_POSTGRES_URL", "NIA_DB"):
        url = os.environ.get(name, "")
        if url.startswith(("postgresql://", "postgres://")):
            yield url
            return
    sys.path.insert(0, str(HERE.parent / "tests" / "postgres"))
    import pg_server

    bin_dir = pg_server.server_bin_dir()
    if bin_dir is None:
        yield None
        return
    cluster = pg_server.Cluster(bin_dir).start()
    try:
        yield cluster.url
    finally:
        cluster.destroy()


def table(name: str, rows: list[Row]) -> None:
    print(f"{name}: median of the turns at each size")
    print(
        f"{'messages (first -> last turn)':>30} {'turn ms':>9} {'store ms':>9} {'store CPU ms':>13} {'encode ms':>10}"
    )
    for size, turn, store, cpu, encode, messages in rows:
        print(f"{f'{size:,} -> {messages:,}':>30} {turn:>9.2f} {store:>9.2f} {cpu:>13.2f} {encode:>10.2f}")
    first, last = rows[0], rows[-1]
    growth = last[1] - first[1]
    encode_growth = last[4] - first[4]
    print(
        f"store share at {last[5]:,} / at {first[5]:,} messages: {last[2] / first[2]:.2f}x"
        f" (CPU {last[3] / first[3]:.2f}x; goal: at most 1.2x);"
        f" turn growth {growth:.2f} ms / encoding growth {encode_growth:.2f} ms ="
        f" {growth / encode_growth:.2f}x (goal: at most 1.5x)"
    )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,1000,10000", help="history sizes (messages), comma-separated")
    parser.add_argument("--turns", type=int, default=50, help="turns measured at each size")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--runs", type=int, default=1, help="repeat the whole table")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    stores = args.stores.split(",")
    with tempfile.TemporaryDirectory(prefix="nia-bench-turns-") as tmp, postgres() as pg_url:
        work = Path(tmp)
        os.environ["XDG_STATE_HOME"] = str(work / "state")
        os.environ["XDG_CACHE_HOME"] = str(work / "cache")
        project = make_project(work / "project")
        for run in range(1, args.runs + 1):
            load = os.getloadavg()[0]
            print(
                f"run {run}: {args.turns} turns per size through Runtime.turn, echo provider;"
                f" python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load:.2f} before"
            )
            for kind in stores:
                if kind == "sqlite":
                    rows = measure(f"sqlite:///{work / f'nia-{run}.db'}", project, sizes, args.turns)
                elif pg_url is None:
                    print("(PostgreSQL skipped: no server; set NIA_TEST_POSTGRES_URL or install it)")
                    continue
                else:
                    sys.path.insert(0, str(HERE.parent / "tests" / "postgres"))
                    import pg_server

                    with pg_server.fresh_schema(pg_url) as url:
                        open_store(url).close()
                        rows = measure(url, project, sizes, args.turns)
                table({"sqlite": "SQLite (WAL, synchronous=full)", "postgres": "PostgreSQL"}[kind], rows)
            print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
