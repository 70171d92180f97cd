"""``nia mcp``: save-to-event latency at a listening client, and resource-read throughput.

Run: ``python bench/bench_mcp.py [--saves 20] [--sources 100] [--reads 200]``.
Starts a real ``nia mcp`` (stdio) on a temporary project and connects the
SDK's own client. It listens (``subscriptions/listen``) and saves a local
plugin, then AGENTS.md, ``--saves`` times each (an editor's atomic save:
temporary file, then rename), timing each save until the resource-updated
event for that source reaches the client (target: under 100 ms, like ``nia
dev``). Then, with ``--sources`` sources, it reads ``nia://source/KEY`` and
``nia://context`` repeatedly, beside the naive way of getting the same text:
running ``nia context show`` once per read, in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

NIA = [sys.executable, "-c", "from nia_core.cli import main; main()"]
TIMEOUT = 30.0
QUIET = ("-p", "no:nia-date")

PLUGIN = """\
from nia_core import ContextSource, hookimpl

VALUE = {value!r}


@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="bench/value", load=lambda: VALUE, baseline=lambda v: f"value: {{v}}",
                          update=lambda old, new: f"value is now {{new}}", removal=lambda v: "value gone")]
"""

MANY = """\
from nia_core import ContextSource, hookimpl


def source(i):
    return ContextSource(key=f"many/s{{i:03d}}", load=lambda: f"value {{i}} " * 20, baseline=lambda v: v)


@hookimpl
def nia_context_sources(location):
    return [source(i) for i in range({count})]
"""


def save(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def project(root: Path, sources: int) -> Path:
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / ".git").mkdir()
    save(root / "AGENTS.md", "# Agents\n\nversion 0\n")
    save(root / ".nia" / "plugins" / "value.py", PLUGIN.format(value="v0"))
    if sources:
        save(root / ".nia" / "plugins" / "many.py", MANY.format(count=sources))
    return root


def client(root: Path) -> Client:
    args = [*NIA[1:], *QUIET, "mcp", "--location", str(root), "--interval", "0"]
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
    return Client(params, cache=None, read_timeout_seconds=TIMEOUT)


async def latencies(root: Path, saves: int) -> dict[str, list[float]]:
    """Milliseconds from each save to its resource-updated event, per kind of file."""
    targets = {
        "plugin code": ("nia://source/bench/value", root / ".nia" / "plugins" / "value.py", PLUGIN, "value"),
        "AGENTS.md": ("nia://source/nia/instructions", root / "AGENTS.md", "# Agents\n\n{value}\n", "value"),
    }
    results: dict[str, list[float]] = {}
    async with client(root) as mcp:
        for label, (uri, path, template, _) in targets.items():
            times: list[float] = []
            async with mcp.listen(resource_subscriptions=[uri]) as subscription:
                events = subscription.__aiter__()
                for n in range(1, saves + 1):
                    await anyio.sleep(0.15)  # one save at a time, like a person
                    started = time.perf_counter()
                    save(path, template.format(value=f"version {n}"))
                    with anyio.fail_after(TIMEOUT):
                        event = await events.__anext__()
                    times.append((time.perf_counter() - started) * 1000)
                    assert getattr(event, "uri", None) == uri, event
            results[label] = times
    return results


async def reads(root: Path, count: int) -> dict[str, float]:
    """Reads per second of one source and of the whole context."""
    out: dict[str, float] = {}
    async with client(root) as mcp:
        for label, uri in (("nia://source/many/s042", "nia://source/many/s042"), ("nia://context", "nia://context")):
            await mcp.read_resource(uri)
            started = time.perf_counter()
            for _ in range(count):
                await mcp.read_resource(uri)
            out[label] = count / (time.perf_counter() - started)
    return out


def naive_reads(root: Path, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        done = subprocess.run([*NIA, *QUIET, "context", "show", "--location", str(root)], capture_output=True)
        assert done.returncode == 0, done.stderr
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--sources", type=int, default=100)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--naive-reads", type=int, default=10, help="nia context show runs (each is a process)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small = project(Path(tmp) / "small", 0)
        large = project(Path(tmp) / "large", args.sources)
        os.environ["NIA_DB"] = str(Path(tmp) / "nia.db")
        saved = anyio.run(latencies, small, args.saves)
        served = anyio.run(reads, large, args.reads)
        naive = naive_reads(large, args.naive_reads)

    rows = [
        (f"save -> update event: {label} ({len(times)} saves)", statistics.median(times), max(times), None)
        for label, times in saved.items()
    ]
    rows += [(f"read {label} ({args.sources} sources)", 1000 / rate, None, rate) for label, rate in served.items()]
    rows.append((f"naive: `nia context show` per read ({args.sources} sources)", 1000 / naive, None, naive))
    width = max(len(row[0]) for row in rows)
    print("\nnia mcp over stdio (target: an update event under 100 ms after the save)\n")
    print(f"{'measurement':<{width}}  {'median ms':>9}  {'worst ms':>8}  {'per second':>10}")
    for label, median, worst, rate in rows:
        shown_worst = f"{worst:8.1f}" if worst is not None else f"{'':>8}"
        shown_rate = f"{rate:10.1f}" if rate is not None else f"{'':>10}"
        print(f"{label:<{width}}  {median:9.1f}  {shown_worst}  {shown_rate}")
    speedup = served["nia://context"] / naive
    print(f"\nReading nia://context is {speedup:.0f}x faster than running `nia context show` per read.")


if __name__ == "__main__":
    main()
