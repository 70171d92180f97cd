"""How each cost grows with its own work: sources, context files, plugins installed, sessions in one database.

    python bench/bench_growth.py [--only sources,files,plugins,sessions] [--max-files 100000]
                                 [--max-sessions 100000] [--messages 2]

Each row measures one cost at work sizes a decade apart and prints, between
each pair of sizes, its growth exponent: the slope of log(cost) over
log(work). 1.0 is linear (ten times the work, ten times the cost), 0 is flat;
above about 1.15 a cost grows faster than its work, and
``docs/performance.md`` says what was done about it. Each cost is printed twice,
medians of repeats: wall time, and CPU time (this process's threads and the
processes it waited for), which the machine's load blurs far less: a process
that hands work to a thread waits for a time slice on a busy machine. The
machine's load is printed before and after.

- **sources** (10 → 10,000): a System Context of N sources (a ``Constant``
  value each, as a plugin's fixed text is): rendering the first baseline
  (``initialize``) and an unchanged boundary (``reconcile``), in one process.
- **files** (100 → 100,000): a project whose ``project.toml`` names N/100
  ``directory`` entries of 100 files (the most one entry takes), ~200 bytes
  each, through the real plugin host (``Runtime``): the first boundary of a
  session (read, render, store) and an unchanged one.
- **plugins** (0, 20, 200): N installed distributions, each a nia plugin
  contributing one source through its ``nia`` entry point, in a folder of their
  own on the path: a whole ``nia context show`` process (``PYTHONPATH``; the
  entry-point scan cached, as after the first run), and an unchanged turn of a
  session in one process (``Runtime``, the folder on ``sys.path``).
- **sessions** (1,000 → 100,000): an SQLite database of N sessions (each an
  epoch and two messages: rows copied with SQL from one real session, with
  creation times spread over the last N minutes), through the CLI in-process:
  ``nia session list``, ``nia session prune`` of the oldest 1% (``--yes``), and
  one ``nia session send`` to a session named by an id prefix. ``--messages``
  gives each session that many (a prompt and its reply, repeated).

Messages in a session are ``bench/bench_turns.py``; concurrent runners,
``bench/bench_boundaries.py``; plugins among other installed distributions,
``bench/bench_startup.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import math
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import NamedTuple, TypeVar

from click.testing import CliRunner

from nia_core import ContextSource
from nia_core.context import SystemContext, initialize, reconcile
from nia_core.context.source import Constant
from nia_core.runtime import Runtime
from nia_core.sessions import open_store

T = TypeVar("T")


class Cost(NamedTuple):
    """Milliseconds of one run, or the medians of several: wall time, and the CPU time of this process and the
    processes it waited for (threads included), which a busy machine blurs far less."""

    wall: float
    cpu: float


Row = tuple[str, list[int], list[Cost]]
"""``(what, work sizes, the median cost at each)``."""


def cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def measure(action: Callable[[], T]) -> tuple[Cost, T]:
    """One run of ``action``: its cost and what it returned."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = action()
    return Cost((time.perf_counter() - wall) * 1000, (cpu_seconds() - cpu) * 1000), result


def median(costs: list[Cost]) -> Cost:
    return Cost(statistics.median(c.wall for c in costs), statistics.median(c.cpu for c in costs))


def timed(action: Callable[[], object], repeats: int) -> Cost:
    """The median cost of ``action`` over ``repeats`` runs."""
    return median([measure(action)[0] for _ in range(repeats)])


def decades(low: int, high: int) -> list[int]:
    sizes, size = [], low
    while size <= high:
        sizes.append(size)
        size *= 10
    return sizes


# -- sources --------------------------------------------------------------------------


def sources_rows(repeats: int) -> list[Row]:
    sizes = decades(10, 10_000)
    first, unchanged = [], []
    for count in sizes:
        ctx = SystemContext(
            [
                ContextSource(
                    f"bench/s{index:05d}",
                    load=Constant(f"value {index} " + "x" * 40),
                    baseline=lambda value: f"The value is {value}.",
                )
                for index in range(count)
            ]
        )
        generation = initialize(ctx)
        first.append(timed(lambda ctx=ctx: initialize(ctx), max(3, repeats // 2)))
        unchanged.append(timed(lambda ctx=ctx, snap=generation.snapshot: reconcile(ctx, snap), repeats))
    return [
        ("sources: first baseline (initialize)", sizes, first),
        ("sources: unchanged boundary (reconcile)", sizes, unchanged),
    ]


# -- context files ----------------------------------------------------------------------


def make_files_project(root: Path, count: int) -> None:
    (root / ".nia").mkdir(parents=True)
    entries = []
    for folder in range(max(1, count // 100)):
        place = root / "docs" / f"d{folder:04d}"
        place.mkdir(parents=True)
        for index in range(min(100, count)):
            (place / f"f{index:03d}.md").write_text(f"# {folder}-{index}\n" + "Words about the project. " * 7 + "\n")
        entries.append(f'[[project.context]]\ntype = "directory"\npath = "docs/d{folder:04d}/"\n')
    (root / ".nia" / "project.toml").write_text('[project]\nname = "growth"\n\n' + "\n".join(entries))


class Echo:
    """The provider lookup ``Runtime.turn`` takes: the echo provider for any model."""

    def __init__(self) -> None:
        from nia_core.providers.echo import EchoProvider

        self.echo = EchoProvider()

    def check(self, model: str) -> str:
        return model

    def __call__(self, model: str) -> object:
        return self.echo


def files_rows(work: Path, high: int, repeats: int) -> tuple[list[Row], list[str]]:
    """The rows, and what went wrong at a size (a plugin past its deadline leaves the context blocked)."""
    sizes = decades(100, high)
    first: list[Cost] = []
    unchanged: list[Cost] = []
    notes: list[str] = []
    for count in sizes:
        root = work / f"files-{count}"
        make_files_project(root, count)
        url = f"sqlite:///{work / f'files-{count}.db'}"
        runs = max(2, repeats // 4) if count >= 10_000 else repeats
        firsts: list[Cost] = []
        steady: list[Cost] = []
        for _ in range(runs):
            runtime = Runtime()  # a fresh process's: nothing read or rendered yet
            with open_store(url) as store:
                session_id = runtime.create_session(store, root, "echo/echo").id
                turn = partial(runtime.turn, store, session_id, providers=Echo())
                for text, samples, times in (("first", firsts, 1), ("again", steady, 3)):
                    for _ in range(times):
                        cost, report = measure(partial(turn, text))
                        samples.append(cost)
                        if report.reply is None:
                            notes.append(f"{count:,} files: {report.result} ({'; '.join(report.warnings)})")
        first.append(median(firsts))
        unchanged.append(median(steady))
    rows = [
        ("context files: a session's first turn (read, render, store)", sizes, first),
        ("context files: an unchanged turn", sizes, unchanged),
    ]
    return rows, sorted(set(notes))


# -- plugins installed ------------------------------------------------------------------

PLUGIN = """\
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="{name}/x", load=lambda: 1, baseline=lambda v: "{name} says " + str(v))]
"""


def install_plugins(site: Path, tag: str, count: int) -> None:
    """``count`` distributions as pip leaves them (a package, a ``*.dist-info``), each a nia plugin."""
    site.mkdir(parents=True)
    for index in range(count):
        name = f"growth_{tag}_{index:03d}"
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(PLUGIN.format(name=name.replace("_", "-")))
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[nia]\n{name.replace('_', '-')} = {name}\n")
        (info / "RECORD").write_text(f"{name}/__init__.py,,\n{info.name}/METADATA,,\n")


def plugins_rows(work: Path, repeats: int) -> list[Row]:
    sizes = [0, 20, 200]
    shown, unchanged = [], []
    project = work / "plugins-project"
    (project / ".nia").mkdir(parents=True)
    (project / ".nia" / "project.toml").write_text('[project]\nname = "plugins"\n')
    show = [str(Path(sys.executable).with_name("nia")), "context", "show"]
    for count in sizes:
        site = work / f"plugins-{count}"
        install_plugins(site, f"p{count}", count)
        env = {**os.environ, "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": ""}
        first = subprocess.run(show, cwd=project, env=env, capture_output=True, text=True, check=False)
        assert first.returncode == 0 and (count == 0 or f"p{count}-{count - 1:03d} says 1" in first.stdout), first
        quiet = {"cwd": project, "env": env, "stdout": subprocess.DEVNULL, "check": True}
        shown.append(timed(lambda quiet=quiet: subprocess.run(show, **quiet), repeats))
        sys.path.insert(0, str(site))
        try:
            runtime = Runtime()
            with open_store(f"sqlite:///{work / f'plugins-{count}.db'}") as store:
                session_id = runtime.create_session(store, project, "echo/echo").id
                turn = partial(runtime.turn, store, session_id, providers=Echo())
                turn("first")
                unchanged.append(timed(lambda turn=turn: turn("again"), repeats))
        finally:
            sys.path.remove(str(site))
    return [
        ("plugins installed: nia context show (a whole process)", sizes, shown),
        ("plugins installed: an unchanged turn", sizes, unchanged),
    ]


# -- sessions in one database -------------------------------------------------------------


def fill_sessions(path: Path, template: str, count: int) -> list[str]:
    """Copy ``template``'s rows to ``count - 1`` new sessions, created one minute apart going back in time."""
    ids = [hashlib.sha256(str(index).encode()).hexdigest()[:12] for index in range(1, count)]  # as random as real ids
    start = datetime.now(UTC)
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(
            "INSERT INTO sessions (id, location, model, created, revision, epoch, history_from, summary_seq,"
            " compaction, history_mark) SELECT ?, location, model, ?, revision, epoch, history_from, summary_seq,"
            " compaction, lower(hex(randomblob(16))) FROM sessions WHERE id = ?",
            [
                (new, (start - timedelta(minutes=i + 1)).isoformat(timespec="milliseconds"), template)
                for i, new in enumerate(ids)
            ],
        )
        for table, columns in (
            (
                "epochs",
                "number, baseline_id, segments, initial_snapshot_id, snapshot_id, start_seq, model, location,"
                " reason, created",
            ),
            ("messages", "seq, epoch, kind, body, snapshot_id, created, reply"),
        ):
            conn.executemany(
                f"INSERT INTO {table} (session_id, {columns}) SELECT ?, {columns} FROM {table} WHERE session_id = ?",
                [(new, template) for new in ids],
            )
        # Each copy's rows keep the template's times; its last activity is its creation time, as if idle since.
        conn.execute("UPDATE messages SET created = (SELECT created FROM sessions s WHERE s.id = session_id)")
        conn.execute("UPDATE epochs SET created = (SELECT created FROM sessions s WHERE s.id = session_id)")
    conn.close()
    return ids


def lengthen(path: Path, session_id: str, messages: int) -> None:
    """Give ``session_id`` ``messages`` messages: its first two (a prompt and its reply) again and again."""
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(
            "INSERT INTO messages (session_id, seq, epoch, kind, body, snapshot_id, created, reply)"
            " SELECT session_id, seq + ?, epoch, kind, body, snapshot_id, created, reply FROM messages"
            " WHERE session_id = ? AND seq <= 2",
            [(step, session_id) for step in range(2, messages - 1, 2)],
        )
    conn.close()


def sessions_rows(work: Path, high: int, repeats: int, messages: int = 2) -> list[Row]:
    sizes = decades(1000, high)
    listed, pruned, sent = [], [], []
    project = work / "sessions-project"
    (project / ".nia").mkdir(parents=True)
    (project / ".nia" / "project.toml").write_text('[project]\nname = "sessions"\n')
    runner = CliRunner()
    for count in sizes:
        path = work / f"sessions-{count}.db"
        env = {"NIA_DB": str(path), "XDG_STATE_HOME": str(work / "state"), "XDG_CACHE_HOME": str(work / "cache")}
        with open_store(f"sqlite:///{path}") as store:
            runtime = Runtime()
            template = runtime.create_session(store, project, "echo/echo", session_id="ffffffffffff").id
            runtime.turn(store, template, "hello", providers=Echo())
        if messages > 2:
            lengthen(path, template, messages)
        ids = fill_sessions(path, template, count)
        from nia_core.cli import cli

        def nia(*args: str, env: dict[str, str] = env) -> None:
            result = runner.invoke(cli, list(args), env=env, catch_exceptions=False)
            assert result.exit_code == 0, result.output

        os.chdir(project)
        listed.append(timed(lambda: nia("session", "list"), max(3, repeats // 4)))
        oldest = (count // 100) + 1  # sessions created more than this many minutes ago: the oldest 1%
        age = f"{count - oldest}m"
        pruned.append(timed(lambda age=age: nia("session", "prune", "--older-than", age, "--yes"), 1))
        prefix = ids[len(ids) // 2][:8]
        sent.append(timed(lambda prefix=prefix: nia("session", "send", prefix, "and now?"), max(3, repeats // 4)))
    each = f" ({messages:,} messages each)" if messages != 2 else ""
    return [
        (f"sessions in one database{each}: nia session list", sizes, listed),
        (f"sessions in one database{each}: nia session prune (the oldest 1%)", sizes, pruned),
        (f"sessions in one database{each}: nia session send PREFIX", sizes, sent),
    ]


# -- the table --------------------------------------------------------------------------------


def exponent(low: int, high: int, cost_low: float, cost_high: float) -> float:
    return math.log(cost_high / cost_low) / math.log(high / low)


def print_rows(rows: list[Row]) -> None:
    for what, sizes, costs in rows:
        print(what)
        for name, values in (("wall", [c.wall for c in costs]), ("CPU", [c.cpu for c in costs])):
            points = "  ".join(f"{size:,}: {value:,.2f} ms" for size, value in zip(sizes, values, strict=True))
            slopes = ", ".join(
                f"{exponent(sizes[i], sizes[i + 1], values[i], values[i + 1]):.2f}" if sizes[i] else "-"
                for i in range(len(sizes) - 1)
            )
            print(f"    {name:>4}  {points}   growth exponent per decade: {slopes}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="sources,files,plugins,sessions")
    parser.add_argument("--max-files", type=int, default=100_000)
    parser.add_argument("--max-sessions", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=2, help="messages in each session of the sessions rows")
    parser.add_argument("--repeats", type=int, default=12)
    args = parser.parse_args()
    chosen = args.only.split(",")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} before")
    with tempfile.TemporaryDirectory(prefix="nia-bench-growth-") as tmp, redirect_stdout(io.StringIO()) as quiet:
        work = Path(tmp)
        os.environ.update(XDG_STATE_HOME=str(work / "state"), XDG_CACHE_HOME=str(work / "cache"))
        rows: list[Row] = []
        notes: list[str] = []
        if "sources" in chosen:
            rows += sources_rows(args.repeats)
        if "files" in chosen:
            found, notes = files_rows(work, args.max_files, args.repeats)
            rows += found
        if "plugins" in chosen:
            rows += plugins_rows(work, args.repeats)
        if "sessions" in chosen:
            rows += sessions_rows(work, args.max_sessions, args.repeats, args.messages)
        os.chdir(HERE)
    del quiet
    print_rows(rows)
    for note in notes:
        print(f"not replied: {note}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    main()
