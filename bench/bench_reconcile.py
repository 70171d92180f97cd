"""Reconcile cost at 10, 100 and 1,000 file-backed sources, against naive re-rendering.

"nia unchanged" uses ``StatCache.loader`` (a loader nia knows to be fast: an
unchanged file is answered inline, no thread); "opaque loader" is the same
cache behind a plain lambda, which nia must run on a worker under its timeout.

Run: ``python bench/bench_reconcile.py``. Prints one table (median of repeats, ms).
The floor is what any correct implementation must pay: ``stat`` each file to see
whether it changed; "read all" is what a host that re-reads every file pays.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nia_core import ContextSource, StatCache
from nia_core.context import SystemContext, Updated, initialize, reconcile

FILE_SIZE = 2048


def make_files(folder: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = folder / f"doc{i:04d}.md"
        path.write_text(f"# Document {i}\n" + ("lorem ipsum dolor sit amet " * (FILE_SIZE // 27)) + "\n")
        paths.append(path)
    return paths


def file_source(cache: StatCache, path: Path, *, opaque: bool = False) -> ContextSource:
    """A file-backed source: ``cache.loader`` (known fast), or an opaque lambda over the same cache."""
    name = path.stem
    return ContextSource(
        key=f"bench/{name}",
        load=(lambda: cache.read_text(path)) if opaque else cache.loader(path),
        baseline=lambda text: f"## {name}\n{text}",
        update=lambda _old, text: f"## {name} (updated)\n{text}",
        removal=lambda _old: f"{name} was removed",
    )


def median_ms(fn: Callable[[], object], repeats: int, before: Callable[[], object] | None = None) -> float:
    """Median wall time of ``fn``; ``before`` runs ahead of each sample, untimed (the edit a reconcile then sees).

    Timing the edit apart and subtracting its median from the whole one's
    made a difference of two noisy medians, which came out negative.
    """
    if before is not None:
        before()
    fn()  # warm-up
    samples = []
    for _ in range(repeats):
        if before is not None:
            before()
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def touch_one_percent(paths: list[Path], round_: list[int]) -> None:
    round_[0] += 1
    for path in paths[:: max(1, 100)][: max(1, len(paths) // 100)]:
        path.write_text(f"# changed {round_[0]}\n" + "x" * FILE_SIZE)


def measure(folder: Path, count: int, repeats: int) -> dict[str, float]:
    paths = make_files(folder, count)
    cache = StatCache()
    ctx = SystemContext([file_source(cache, p) for p in paths])
    snapshot = initialize(ctx).snapshot
    opaque_ctx = SystemContext([file_source(cache, p, opaque=True) for p in paths])
    opaque_snapshot = initialize(opaque_ctx).snapshot
    state = {"snapshot": snapshot, "prompt": "\n\n".join(f"## {p.stem}\n{p.read_text()}" for p in paths)}
    counter = [0]

    def stat_all() -> None:
        for p in paths:
            os.stat(p)

    def read_all() -> None:
        for p in paths:
            p.read_bytes()

    def naive() -> None:
        prompt = "\n\n".join(f"## {p.stem}\n{p.read_text()}" for p in paths)
        if prompt != state["prompt"]:
            state["prompt"] = prompt

    def nia_unchanged() -> None:
        reconcile(ctx, snapshot)

    def nia_opaque() -> None:
        reconcile(opaque_ctx, opaque_snapshot)

    def nia_changed() -> None:
        result = reconcile(ctx, state["snapshot"])  # type: ignore[arg-type]
        assert isinstance(result, Updated)
        state["snapshot"] = result.snapshot

    def touch() -> None:
        touch_one_percent(paths, counter)

    return {
        "stat all": median_ms(stat_all, repeats),
        "read all": median_ms(read_all, repeats),
        "naive re-render": median_ms(naive, repeats),
        "nia unchanged": median_ms(nia_unchanged, repeats),
        "opaque loader": median_ms(nia_opaque, repeats),
        "nia 1% changed": median_ms(nia_changed, repeats, before=touch),
    }


def run(counts: list[int], repeats: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for count in counts:
        with tempfile.TemporaryDirectory() as tmp:
            rows.append({"sources": count, **measure(Path(tmp), count, repeats)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--counts", type=int, nargs="+", default=[10, 100, 1000])
    args = parser.parse_args(argv)
    rows = run(args.counts, args.repeats)
    columns = [
        "sources",
        "stat all",
        "read all",
        "naive re-render",
        "nia unchanged",
        "opaque loader",
        "nia 1% changed",
    ]
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"reconcile cost, median of {args.repeats} (ms); python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores, load average {load}"
    )
    print(" | ".join(f"{c:>15}" for c in columns) + " | nia/stat")
    for row in rows:
        ratio = float(row["nia unchanged"]) / float(row["stat all"])  # type: ignore[arg-type]
        cells = [f"{row[c]:>15.3f}" if isinstance(row[c], float) else f"{row[c]:>15}" for c in columns]
        print(" | ".join(cells) + f" | {ratio:7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
