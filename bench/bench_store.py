"""Store size and boundary throughput, content-addressed store vs naive per-session copies.

    python bench/bench_store.py [--sessions 1000] [--docs-mb 1] [--turns 200]

Size: N sessions at N Locations share the same docs (one source, ``--docs-mb``
of text) plus one small per-session source; each runs one full turn. The
content-addressed store keeps the docs value and its baseline text once; the
naive baseline keeps each session's baseline text and snapshot JSON in its
own row (what a store without content addressing holds).

Throughput: one session, ``--turns`` turns through the real boundary (the
provider is a constant reply, so only nia's own work is timed), with the
context unchanged and with one small change admitted per turn; the naive
baseline runs the same engine steps against one row holding the full
baseline and snapshot JSON, rewritten on every admission.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nia_core import ContextSource
from nia_core.context import Snapshot, SystemContext, Updated, initialize, reconcile
from nia_core.sessions import Message, ModelRequest, Reply, SQLiteStore, run_turn


class ConstantProvider:
    """Answers at once, so the timings are nia's own."""

    name = "constant"

    def lower(self, request: ModelRequest) -> dict[str, Any]:
        return {}

    def send(self, request: ModelRequest, *, stream: Any = None) -> Reply:
        return Reply("ok")


PROVIDER = ConstantProvider()


def make_docs(megabytes: float) -> str:
    rng = random.Random(1)
    words = ["context", "epoch", "baseline", "snapshot", "source", "plugin", "session", "boundary", "nia", "docs"]
    parts, size = [], 0
    while size < megabytes * 1_000_000:
        line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
        parts.append(line)
        size += len(line)
    return "".join(parts)


def context(docs: str, where: str, tick: Callable[[], int] | None = None) -> SystemContext:
    sources = [
        ContextSource(key="bench/docs", load=lambda: docs, baseline=lambda v: f"Project docs:\n{v}"),
        ContextSource(key="bench/where", load=lambda: where, baseline=lambda v: f"You are in {v}."),
    ]
    if tick is not None:
        sources.append(
            ContextSource(
                key="bench/tick",
                load=tick,
                baseline=lambda v: f"Tick {v}.",
                update=lambda old, new: f"Tick went from {old} to {new}.",
            )
        )
    return SystemContext(sources)


def file_size(path: Path) -> int:
    """Bytes on disk after folding the write-ahead log into the main file."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


NAIVE_SCHEMA = """
CREATE TABLE epochs (session_id TEXT PRIMARY KEY, baseline TEXT NOT NULL, snapshot TEXT NOT NULL);
CREATE TABLE messages (session_id TEXT, seq INTEGER, kind TEXT, body TEXT, snapshot TEXT,
                       PRIMARY KEY (session_id, seq));
"""


def naive_connection(path: Path, synchronous: str = "full") -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
    conn.executescript(NAIVE_SCHEMA)
    return conn


def size_rows(folder: Path, sessions: int, docs: str) -> list[tuple[str, str, str]]:
    store_path = folder / "content-addressed.db"
    naive_path = folder / "naive.db"
    started = time.perf_counter()
    with SQLiteStore(store_path) as store:
        for index in range(sessions):
            where = f"/work/project-{index}"
            session_id = store.create_session(where, "constant/x").id
            run_turn(store, session_id, lambda loc: context(docs, loc), lambda _m: PROVIDER, text="hello")
    ours_seconds = time.perf_counter() - started
    ours = file_size(store_path)
    started = time.perf_counter()
    conn = naive_connection(naive_path)
    conn.execute("PRAGMA synchronous = OFF")  # only its size is reported; do not wait on the disk
    for index in range(sessions):
        generation = initialize(context(docs, f"/work/project-{index}"))
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO epochs VALUES (?, ?, ?)", (str(index), generation.baseline, generation.snapshot.to_json())
        )
        conn.execute("INSERT INTO messages VALUES (?, 1, 'user', 'hello', NULL)", (str(index),))
        conn.execute("INSERT INTO messages VALUES (?, 2, 'assistant', 'ok', NULL)", (str(index),))
        conn.execute("COMMIT")
    conn.close()
    naive_seconds = time.perf_counter() - started
    naive = file_size(naive_path)
    naive_path.unlink()
    mb = len(docs.encode()) / 1e6
    return [
        (f"store size, {sessions} sessions x {mb:.1f} MB docs", "content-addressed", f"{ours / 1e6:,.1f} MB"),
        ("", "naive per-session copies", f"{naive / 1e6:,.1f} MB ({naive / ours:,.0f}x)"),
        ("  time to create them (one turn each)", "content-addressed", f"{ours_seconds:.1f} s"),
        ("", "naive (no fsync)", f"{naive_seconds:.1f} s"),
    ]


def our_turns(path: Path, docs: str, turns: int, changing: bool, synchronous: str) -> tuple[float, int]:
    counter = iter(range(10**9))
    value = {"tick": 0}

    def tick() -> int:
        return value["tick"]

    with SQLiteStore(path, synchronous=synchronous) as store:
        session_id = store.create_session("/work/p", "constant/x").id
        ctx = context(docs, "/work/p", tick)
        run_turn(store, session_id, lambda _loc: ctx, lambda _m: PROVIDER, text="warm up")
        before = file_size(path)
        started = time.perf_counter()
        for _ in range(turns):
            if changing:
                value["tick"] = next(counter) + 1
            run_turn(store, session_id, lambda _loc: ctx, lambda _m: PROVIDER, text="next")
        seconds = time.perf_counter() - started
    return seconds, file_size(path) - before


def naive_turns(path: Path, docs: str, turns: int, changing: bool, synchronous: str) -> tuple[float, int]:
    """The same engine steps against one row holding the full baseline and snapshot JSON."""
    value = {"tick": 0}
    ctx = context(docs, "/work/p", lambda: value["tick"])
    conn = naive_connection(path, synchronous)
    generation = initialize(ctx)
    conn.execute("INSERT INTO epochs VALUES ('s', ?, ?)", (generation.baseline, generation.snapshot.to_json()))
    before = file_size(path)
    seq = 0
    started = time.perf_counter()
    for turn in range(turns):
        if changing:
            value["tick"] = turn + 1
        conn.execute("BEGIN IMMEDIATE")
        seq += 1
        conn.execute("INSERT INTO messages VALUES ('s', ?, 'user', 'next', NULL)", (seq,))
        conn.execute("COMMIT")
        baseline, stored = conn.execute("SELECT baseline, snapshot FROM epochs WHERE session_id = 's'").fetchone()
        result = reconcile(ctx, Snapshot.from_json(stored))
        if isinstance(result, Updated):
            snapshot_json = result.snapshot.to_json()
            conn.execute("BEGIN IMMEDIATE")
            seq += 1
            conn.execute("INSERT INTO messages VALUES ('s', ?, 'system_update', ?, NULL)", (seq, result.text))
            conn.execute("UPDATE epochs SET snapshot = ? WHERE session_id = 's'", (snapshot_json,))
            conn.execute("COMMIT")
        history = conn.execute("SELECT kind, body FROM messages WHERE session_id = 's' ORDER BY seq").fetchall()
        ModelRequest("s", "constant/x", baseline, tuple(Message(kind, body) for kind, body in history))
        conn.execute("BEGIN IMMEDIATE")
        seq += 1
        conn.execute("INSERT INTO messages VALUES ('s', ?, 'assistant', 'ok', NULL)", (seq,))
        conn.execute("COMMIT")
    seconds = time.perf_counter() - started
    conn.close()
    return seconds, file_size(path) - before


def throughput_rows(folder: Path, docs: str, turns: int) -> list[tuple[str, str, str]]:
    rows = []
    mb = len(docs.encode()) / 1e6
    for changing in (False, True):
        label = f"turns/s, {mb:.1f} MB docs, " + ("one change per turn" if changing else "context unchanged")
        for synchronous in ("full", "normal"):
            for name, run in (("nia boundary", our_turns), ("naive full-row", naive_turns)):
                path = folder / f"{name.split()[0]}-{changing}-{synchronous}.db"
                seconds, growth = run(path, docs, turns, changing, synchronous)
                per_turn = f"{seconds / turns * 1000:.1f} ms, +{growth / turns / 1000:,.1f} KB"
                rows.append((label, f"{name}, synchronous={synchronous}", f"{turns / seconds:,.0f}/s ({per_turn})"))
                label = ""
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--docs-mb", type=float, default=1.0)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    docs = make_docs(args.docs_mb)
    folder = Path(tempfile.mkdtemp(prefix="nia-bench-store-"))
    try:
        rows = size_rows(folder, args.sessions, docs) + throughput_rows(folder, docs, args.turns)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    header = ("measure", "store", "result (per turn: time, database growth)")
    widths = [max(w, len(h)) for w, h in zip(widths, header, strict=True)]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    print(f"\n(Python {os.sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, synchronous=FULL unless noted)")


if __name__ == "__main__":
    main()
