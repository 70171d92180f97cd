"""``nia dev``: time from a file write to the printed reconcile result.

Run: ``python bench/bench_reload.py [--edits 20]``. Starts a real ``nia dev --json``
on a temporary project, saves a local plugin 20 times (an editor's atomic
save: temporary file, then rename) and times each save until the reload event
for it is printed. Compared, in the same run, with ``watchfiles``' default
settings (step 50 ms, debounce 1.6 s), with ``--poll``, and with the naive way:
running ``nia context show`` again after each save. A second table times a
200-file burst (a ``git checkout``): how many reloads it caused and when the
last result was printed.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

NIA = [sys.executable, "-c", "from nia_core.cli import main; main()"]
TIMEOUT = 30.0

PLUGIN = """\
from nia_core import ContextSource, hookimpl

VALUE = {value!r}


@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="bench/value", load=lambda: VALUE, baseline=lambda v: f"value: {{v}}",
                          update=lambda old, new: f"value is now {{new}}", removal=lambda v: "value gone")]
"""

BULK = """\
import importlib
from nia_core import ContextSource, hookimpl

TOTAL = sum(importlib.import_module(f"{__name__}.parts.p{i:03d}").VALUE for i in range(200))


@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="bench/bulk", load=lambda: TOTAL, baseline=lambda v: f"bulk: {v}")]
"""

SETTINGS = {
    "nia dev (tuned: step 15 ms, settle 250 ms for bursts)": [],
    "nia dev with watchfiles' defaults (step 50 ms, debounce 1.6 s)": [
        "--step-ms",
        "50",
        "--debounce-ms",
        "1600",
        "--settle-ms",
        "0",
    ],
    "nia dev --poll": ["--poll"],
}


def save(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIA_", "WATCHFILES_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), PYTHONUNBUFFERED="1")
    return env


class Dev:
    def __init__(self, project: Path, home: Path, args: list[str]) -> None:
        command = [*NIA, "-p", "no:nia-date", "dev", "--json", *args]
        self.proc = subprocess.Popen(
            command, cwd=project, env=environment(home), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self.events: queue.Queue[tuple[float, dict[str, object]]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        while self.next()["event"] != "watching":
            pass

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.put((time.perf_counter(), json.loads(line)))

    def next(self, timeout: float = TIMEOUT) -> dict[str, object]:
        return self.next_timed(timeout)[1]

    def next_timed(self, timeout: float = TIMEOUT) -> tuple[float, dict[str, object]]:
        return self.events.get(timeout=timeout)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(10)


def edits(dev: Dev, path: Path, count: int, tag: str) -> tuple[list[float], list[float]]:
    """Write latencies and in-process reload times (ms) for ``count`` saves."""
    latencies, reloads = [], []
    for i in range(count):
        value = f"{tag}-{i}"
        started = time.perf_counter()
        save(path, PLUGIN.format(value=value))
        while True:
            arrived, event = dev.next_timed()
            result = event.get("result") or {}
            if isinstance(result, dict) and f"value is now {value}" in str(result.get("text", "")):
                break
        latencies.append((arrived - started) * 1000)
        reloads.append(float(event["ms"]))  # type: ignore[arg-type]
        time.sleep(0.02)  # let the editor's save settle before the next one, as a person would
    return latencies, reloads


def naive(project: Path, home: Path, path: Path, count: int) -> list[float]:
    """Save, then run ``nia context show`` afresh: what a host without live reload would do."""
    latencies = []
    for i in range(count):
        value = f"naive-{i}"
        started = time.perf_counter()
        save(path, PLUGIN.format(value=value))
        out = subprocess.run(
            [*NIA, "-p", "no:nia-date", "context", "show"],
            cwd=project,
            env=environment(home),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert f"value: {value}" in out
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def burst(dev: Dev, package: Path, round_: int) -> tuple[int, float]:
    """Replace 200 files as fast as possible; count the reloads and time the last result."""
    started = time.perf_counter()
    for i in range(200):
        save(package / "parts" / f"p{i:03d}.py", f"VALUE = {round_}\n")
    reloads, last = 0, started
    deadline = time.perf_counter() + 4.0  # anything after this is not part of the burst
    while True:
        try:
            arrived, event = dev.next_timed(max(0.0, deadline - time.perf_counter()))
        except queue.Empty:
            break
        if event.get("event") == "reload":
            reloads += 1
            last = arrived
    return reloads, (last - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project, home = root / "project", root / "home"
        plugins = project / ".nia" / "plugins"
        plugins.mkdir(parents=True)
        home.mkdir()
        path = plugins / "bench_value.py"
        save(path, PLUGIN.format(value="start"))
        package = plugins / "bench_bulk"
        (package / "parts").mkdir(parents=True)
        (package / "__init__.py").write_text(BULK)
        (package / "parts" / "__init__.py").write_text("")
        for i in range(200):
            (package / "parts" / f"p{i:03d}.py").write_text("VALUE = 0\n")

        rows, bursts = [], []
        for round_, (label, extra) in enumerate(SETTINGS.items(), start=1):
            dev = Dev(project, home, extra)
            try:
                latencies, reloads = edits(dev, path, args.edits, f"r{round_}")
                bursts.append((label, *burst(dev, package, round_)))
            finally:
                dev.stop()
            rows.append((label, latencies, statistics.median(reloads)))
        rows.append(("naive: rerun `nia context show` after each save", naive(project, home, path, args.edits), None))

    print(f"\nnia dev: time from a file write to the printed reconcile result ({args.edits} saves each, ms)\n")
    width = max(len(label) for label, *_ in rows)
    print(f"{'strategy':<{width}}  {'median':>7}  {'worst':>7}  {'reload+reconcile':>16}")
    for label, latencies, reload_ms in rows:
        inner = f"{reload_ms:.1f}" if reload_ms is not None else "-"
        print(f"{label:<{width}}  {statistics.median(latencies):>7.1f}  {max(latencies):>7.1f}  {inner:>16}")
    print("\nA burst: 200 files replaced as fast as possible (one git checkout)\n")
    print(f"{'strategy':<{width}}  {'reloads':>7}  {'last result at (ms)':>19}")
    for label, count, last in bursts:
        print(f"{label:<{width}}  {count:>7}  {last:>19.1f}")


if __name__ == "__main__":
    main()
