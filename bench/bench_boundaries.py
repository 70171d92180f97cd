"""Boundaries per second on SQLite and PostgreSQL with 1, 4 and 16 concurrent runner processes.

    python bench/bench_boundaries.py [--seconds 4] [--slots 8] [--runners 1,4,16] [--turns 40]

Each runner is a process driving its own session through full turns: the safe
provider-turn boundary (observe, promote, reconcile), a provider that answers
at once, and the stored reply; every fourth turn the session's context changes,
so a mid-conversation system message is admitted. The figure is turns completed
per second by all runners together, over a fixed time per store after every
runner has opened its store and run one warm-up turn. The stores take turns in
short slots (every store's runners are started first; only one store's runners
turn at a time), so a busy spell of the shared machine hits every store alike.

Stores: SQLite (WAL, one file, the default: every commit synced to disk),
SQLite at ``synchronous=normal`` (no sync per commit: what the throwaway
PostgreSQL server, started with ``fsync=off``, is compared with fairly when
other work shares the disk), PostgreSQL through the pooled ``PostgresStore``,
and the naive baseline: the same store opening a new connection for every
transaction (what a runner pays without a pool).

First, one runner drives ``--turns`` turns through a relay that counts round
trips to PostgreSQL on the wire (bench/round_trips.py), and the table of round
trips per turn, per store step, is printed.

PostgreSQL is ``NIA_TEST_POSTGRES_URL`` or a ``postgresql://`` ``NIA_DB``;
without either, a throwaway local cluster is started when PostgreSQL's server
binaries are installed (see tests/postgres/pg_server.py), else only SQLite runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nia_core import UNAVAILABLE, ContextSource
from nia_core.context import SystemContext
from nia_core.sessions import ModelRequest, Reply, Store, open_store, run_turn

if __package__:  # imported as bench.bench_boundaries
    from bench.round_trips import CountingRelay, StepCounter
else:  # python bench/bench_boundaries.py: this folder is sys.path[0]
    from round_trips import CountingRelay, StepCounter

HERE = Path(__file__).resolve().parent


class ConstantProvider:
    """Answers at once, so the timings are nia's and the database's own."""

    name = "constant"

    def lower(self, request: ModelRequest) -> dict[str, Any]:
        return {}

    def send(self, request: ModelRequest, *, stream: Any = None) -> Reply:
        return Reply("ok")


PROVIDER = ConstantProvider()


def context_for(location: str) -> SystemContext:
    value_file = Path(location) / "value.json"

    def load() -> Any:
        try:
            return json.loads(value_file.read_text())
        except (OSError, ValueError):
            return UNAVAILABLE

    return SystemContext(
        [
            ContextSource("bench/where", load=lambda: location, baseline=lambda v: f"You work in {v}."),
            ContextSource(
                "bench/value",
                load=load,
                baseline=lambda v: f"The value is {v}.",
                update=lambda old, new: f"The value changed from {old} to {new}.",
            ),
        ]
    )


def set_value(location: Path, value: Any) -> None:
    tmp = location / f".value.{os.getpid()}"
    tmp.write_text(json.dumps(value))
    os.replace(tmp, location / "value.json")


class ConnectPerTransaction:
    """Stands in for the pool: a fresh connection per transaction, closed after it (the naive baseline)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def getconn(self, timeout: float | None = None) -> Any:
        import psycopg

        conn = psycopg.connect(self.store._conninfo, **self.store._kwargs)
        self.store._configure(conn)
        return conn

    def putconn(self, conn: Any) -> None:
        conn.close()

    def check(self) -> None:
        pass

    def close(self) -> None:
        pass


def open_for(kind: str, url: str) -> Store:
    store = open_store(url)
    if kind == "postgres-naive":
        pool = store._pool  # type: ignore[attr-defined]
        store._pool = ConnectPerTransaction(store)  # type: ignore[attr-defined]
        pool.close()
    return store


def runner(kind: str, url: str, folder: str, go: Any, idle: Any, done: Any, barrier: Any) -> None:
    """One runner process: turns while ``go`` is set (``idle`` is set between its turns' runs), until ``done``.

    Writes ``[turns, seconds turning, last kind]`` or ``["error", message, ""]`` to FOLDER/result.json.
    """
    code = 0
    result: list[Any]
    try:
        location = Path(folder)
        location.mkdir(parents=True, exist_ok=True)
        set_value(location, 0)
        with open_for(kind, url) as store:
            session_id = store.create_session(str(location), "echo/echo").id
            run_turn(store, session_id, context_for, lambda _m: PROVIDER, text="warm-up")
            barrier.wait(timeout=300)
            turns, seconds = 0, 0.0
            while True:
                idle.set()
                go.wait()
                if done.is_set():
                    break
                idle.clear()
                started = time.perf_counter()
                while go.is_set() and not done.is_set():
                    if turns % 4 == 3:
                        set_value(location, turns)
                    run_turn(store, session_id, context_for, lambda _m: PROVIDER, text=f"turn {turns}")
                    turns += 1
                seconds += time.perf_counter() - started
            result = [turns, seconds, store.history(session_id)[-1].message.kind]
    except BaseException as exc:
        result = ["error", f"{type(exc).__name__}: {exc}", ""]
        code = 1
    (Path(folder) / "result.json").write_text(json.dumps(result))
    os._exit(code)


def measure(urls: dict[str, str], runners: int, seconds: float, slots: int, folder: Path) -> dict[str, float]:
    """Turns per second of ``runners`` processes together, per store kind (``urls``).

    Every kind's runners are started and warmed up first; then the kinds take turns in ``slots`` slots
    of ``seconds / slots`` each (only one kind's runners turn at a time), so a busy spell of the shared
    machine hits every kind alike.
    """
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(runners * len(urls) + 1)
    done = context.Event()
    gates = {kind: context.Event() for kind in urls}
    places: dict[str, list[Path]] = {kind: [folder / f"{kind}-r{i}" for i in range(runners)] for kind in urls}
    idles = {kind: [context.Event() for _ in range(runners)] for kind in urls}
    processes = [
        context.Process(target=runner, args=(kind, urls[kind], str(place), gates[kind], idle, done, barrier))
        for kind in urls
        for place, idle in zip(places[kind], idles[kind], strict=True)
    ]
    for process in processes:
        process.start()
    try:
        barrier.wait(timeout=300)
    except Exception:
        pass  # a runner failed during setup; its error is in its result
    for _ in range(slots):
        for kind, gate in gates.items():
            gate.set()
            time.sleep(seconds / slots)
            gate.clear()
            for idle in idles[kind]:  # the slot's last turns finish before the next kind starts
                idle.wait(timeout=300)
    done.set()
    for gate in gates.values():
        gate.set()
    for process in processes:
        process.join(timeout=300)
    rates: dict[str, float] = {}
    for kind, kind_places in places.items():
        outcomes = [json.loads((place / "result.json").read_text()) for place in kind_places]
        errors = [o[1] for o in outcomes if o[0] == "error"]
        if errors:
            raise SystemExit(f"{kind} with {runners} runners failed: {errors[0]}")
        assert all(o[2] == "assistant" for o in outcomes)
        rates[kind] = sum(o[0] for o in outcomes) / max(o[1] for o in outcomes)
    return rates


def postgres_url() -> tuple[str | None, Any]:
    """A server URL and whatever must be stopped afterwards (a throwaway cluster), or ``(None, reason)``."""
    for name in ("NIA_TEST_POSTGRES_URL", "NIA_DB"):
        url = os.environ.get(name, "")
        if url.startswith(("postgresql://", "postgres://")):
            return url, None
    sys.path.insert(0, str(HERE.parent / "tests" / "postgres"))
    import pg_server

    bin_dir = pg_server.server_bin_dir()
    if bin_dir is None:
        return None, "no PostgreSQL: set NIA_TEST_POSTGRES_URL or install the server"
    cluster = pg_server.Cluster(bin_dir, max_connections=300).start()
    return cluster.url, cluster


WARM_UP = 2
"""Turns before counting: the first initializes the epoch."""


@dataclass(frozen=True)
class RoundTrips:
    steps: dict[str, tuple[float, float]]
    """Per store step: ``(calls, round trips)`` per turn."""
    per_turn: float
    most_plain: int
    """The most round trips of a turn that admitted no system message."""
    most_updated: int
    """The most round trips of a turn that admitted one."""
    syncs: float
    """The client's ``Sync``/``Query`` messages per turn (each ends in a wait; exact whatever the load)."""


def count_round_trips(url: str, turns: int, folder: Path) -> RoundTrips:
    """Round trips of one runner's turns, per store step and per turn, counted on the wire.

    Like a runner: every fourth turn the context changes, so a system message is admitted.
    """
    relay = CountingRelay(url)
    plain: list[int] = []
    updated: list[int] = []
    try:
        set_value(folder, 0)
        with open_store(relay.url) as store:
            session_id = store.create_session(str(folder), "echo/echo").id
            for turn in range(WARM_UP):
                run_turn(store, session_id, context_for, lambda _m: PROVIDER, text=f"warm-up {turn}")
            counter = StepCounter(store, relay)
            syncs = relay.syncs
            for turn in range(turns):
                if turn % 4 == 3:
                    set_value(folder, turn)
                before = relay.trips
                run_turn(store, session_id, context_for, lambda _m: PROVIDER, text=f"turn {turn}")
                (updated if turn % 4 == 3 else plain).append(relay.trips - before)
    finally:
        relay.close()
    steps = {step: (counter.calls[step] / turns, counter.trips[step] / turns) for step in counter.calls}
    per_turn = (sum(plain) + sum(updated)) / turns
    return RoundTrips(steps, per_turn, max(plain, default=0), max(updated, default=0), (relay.syncs - syncs) / turns)


def cpu_per_turn(url: str, turns: int, folder: Path, server: str | None) -> tuple[float, float]:
    """CPU milliseconds per turn of one runner: its own thread's, and (PostgreSQL) its server backend's.

    Unlike turns per second, this does not depend on what else the machine runs: on an idle machine
    a runner's turn takes about its CPU, plus a store's waits (SQLite's syncs, round trips).
    """
    folder.mkdir()
    set_value(folder, 0)
    with open_store(url) as store:
        session_id = store.create_session(str(folder), "echo/echo").id
        for turn in range(20):
            run_turn(store, session_id, context_for, lambda _m: PROVIDER, text=f"warm-up {turn}")
        backends: list[int] = []
        if server is not None:
            import psycopg

            with psycopg.connect(server, autocommit=True) as conn:
                backends = [
                    row[0] for row in conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'nia'")
                ]
        client, backend = time.thread_time(), sum(map(_process_cpu, backends))
        for turn in range(turns):
            if turn % 4 == 3:
                set_value(folder, turn + 100)
            run_turn(store, session_id, context_for, lambda _m: PROVIDER, text=f"turn {turn}")
        return (time.thread_time() - client) / turns * 1000, (sum(map(_process_cpu, backends)) - backend) / turns * 1000


def _process_cpu(pid: int) -> float:
    """Seconds of CPU (user + system) process ``pid`` has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def fresh_postgres(url: str) -> Iterator[str]:
    sys.path.insert(0, str(HERE.parent / "tests" / "postgres"))
    import pg_server

    with pg_server.fresh_schema(url) as schema_url:
        yield schema_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="measuring time per store and runner count")
    parser.add_argument("--slots", type=int, default=8, help="slots the stores take turns in, per runner count")
    parser.add_argument("--runners", default="1,4,16", help="comma-separated runner counts")
    parser.add_argument("--turns", type=int, default=40, help="turns of the round-trip count (0: skip it)")
    parser.add_argument("--cpu-turns", type=int, default=400, help="turns of the CPU-per-turn count (0: skip it)")
    args = parser.parse_args()
    counts = [int(n) for n in args.runners.split(",")]

    load_before = os.getloadavg()[0]
    server, cluster = postgres_url()
    kinds = ["sqlite", "sqlite-normal"] + (["postgres", "postgres-naive"] if server else [])
    rows: dict[str, list[float]] = {kind: [] for kind in kinds}
    trips: RoundTrips | None = None
    cpu: dict[str, tuple[float, float]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="nia-bench-") as tmp:
            if server and args.turns:
                folder = Path(tmp) / "round-trips"
                folder.mkdir()
                with fresh_postgres(server) as url:
                    open_store(url).close()
                    trips = count_round_trips(url, args.turns, folder)
            if args.cpu_turns:
                cpu["sqlite"] = cpu_per_turn(f"sqlite://{tmp}/cpu.db", args.cpu_turns, Path(tmp) / "cpu-a", None)
                cpu["sqlite-normal"] = cpu_per_turn(
                    f"sqlite://{tmp}/cpu-n.db?synchronous=normal", args.cpu_turns, Path(tmp) / "cpu-b", None
                )
                if server:
                    with fresh_postgres(server) as url:
                        open_store(url).close()
                        cpu["postgres"] = cpu_per_turn(url, args.cpu_turns, Path(tmp) / "cpu-c", server)
            for runners in counts:
                folder = Path(tmp) / f"{runners}-{secrets.token_hex(3)}"
                folder.mkdir()
                with contextlib.ExitStack() as stack:
                    urls = {"sqlite": f"sqlite://{folder}/nia.db", "sqlite-normal": f"sqlite://{folder}/nn.db"}
                    urls["sqlite-normal"] += "?synchronous=normal"
                    for kind in kinds[2:]:
                        urls[kind] = stack.enter_context(fresh_postgres(server or ""))
                        open_store(urls[kind]).close()  # migrate once, before the runners race
                    rates = measure(urls, runners, args.seconds, args.slots, folder)
                for kind in kinds:
                    rows[kind].append(rates[kind])
    finally:
        if cluster is not None and not isinstance(cluster, str):
            cluster.destroy()

    if trips is not None:
        print(f"PostgreSQL round trips per turn, counted on the wire; one runner, {args.turns} turns after {WARM_UP}")
        print("(every fourth turn admits a system message; a step calling another is charged to the outer one)")
        print(f"{'store step':<16}{'calls/turn':>12}{'round trips/turn':>18}")
        print("-" * 46)
        for step, (calls, count) in sorted(trips.steps.items(), key=lambda item: -item[1][1]):
            print(f"{step:<16}{calls:>12.2f}{count:>18.2f}")
        print(f"{'total':<16}{sum(c for c, _ in trips.steps.values()):>12.2f}{trips.per_turn:>18.2f}")
        print(
            f"most in one turn: {trips.most_plain} without a system message,"
            f" {trips.most_updated} with one (goal: at most 6);"
            f" requests ending in a wait (Sync, Query): {trips.syncs:.2f} per turn"
        )
        print()
    labels = {
        "sqlite": "SQLite (WAL, one file)",
        "sqlite-normal": "SQLite, synchronous=normal (no sync per commit)",
        "postgres": "PostgreSQL, pooled (PostgresStore)",
        "postgres-naive": "PostgreSQL, connect per transaction (naive)",
    }
    print(
        f"Turns per second (boundary + provider + stored reply), all runners together; {args.seconds:g}s each,"
        f" the stores taking turns in {args.slots} slots;"
    )
    print(
        f"each runner a process on its own session; {os.cpu_count()} CPUs,"
        f" load {load_before:.1f} before / {os.getloadavg()[0]:.1f} after"
    )
    header = f"{'store':<46}" + "".join(f"{f'{n} runner' + ('s' if n > 1 else ''):>13}" for n in counts)
    print(header)
    print("-" * len(header))
    for kind, values in rows.items():
        print(f"{labels[kind]:<46}" + "".join(f"{v:>13.0f}" for v in values))
    if "postgres" in rows:
        for kind in ("sqlite", "sqlite-normal"):
            ratios = [pg / lite for pg, lite in zip(rows["postgres"], rows[kind], strict=True)]
            label = f"PostgreSQL pooled / {'SQLite' if kind == 'sqlite' else 'SQLite, normal'}"
            print(f"{label:<46}" + "".join(f"{r:>12.0%} " for r in ratios))
        print("(the test server runs with fsync=off: against SQLite syncing every commit, a disk others share")
        print(" favours PostgreSQL; against SQLite at synchronous=normal, both wait for no disk)")
    if cpu:
        print()
        print(f"CPU per turn, one runner, {args.cpu_turns} turns (ms: the runner's thread + its server backend)")
        for kind, (client, backend) in cpu.items():
            print(f"{labels[kind]:<46}{client:>8.2f} + {backend:.2f} = {client + backend:.2f}")
        if "postgres" in cpu:
            total = sum(cpu["postgres"])
            for kind in ("sqlite", "sqlite-normal"):
                print(f"  {labels[kind]} / PostgreSQL: {sum(cpu[kind]) / total:.0%}")
    if not server:
        print(f"(PostgreSQL skipped: {cluster})")


if __name__ == "__main__":
    main()
