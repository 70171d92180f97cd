"""``nia --help`` and ``nia context show`` start-up with 0, 20 and 200 extra installed distributions.

Run: ``python bench/bench_startup.py [--runs 9]``. Builds a temporary venv with nia
(from a copy of this checkout) and its dependencies, then adds tiny fake
distributions to it (one in ten is a nia plugin, the rest declare a console
script, as ordinary packages do). Prints one table, in milliseconds:

- ``python -c 'import click'``: the floor for any click command line;
- ``nia context show``: the whole process in a project holding an ``AGENTS.md`` (scan cache warm);
- ``x click``: the cached ``--help`` and ``context show`` medians over the ``import click`` median
  (goals, issue #15: 1.6x and 2x); ``x click, CPU time``: the same ratios of the processes' median
  CPU time (user + system), which a busy machine disturbs far less than wall time;
- ``nia --help, no cache`` / ``cached``: the whole ``nia --help`` process, with
  ``NIA_NO_CACHE=1`` and with the entry-point scan and ``--help`` rows cached (median / best of the runs);
- ``import importlib_metadata`` and ``entry_points()``: what an uncached scan costs a fresh
  process, in two parts; ``cached scan``: reading and checking the cache file instead.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
COUNTS = (0, 20, 200)
HELP_GOAL = 1.6
SHOW_GOAL = 2.0
"""Issue #15 item 5: the medians over ``python -c 'import click'``'s, with 200 extra distributions."""
PLUGIN_EVERY = 10
PAST = time.time() - 3600

PLUGIN = """\
from nia_core import ContextSource, hookimpl

NIA_NAMESPACE = "{namespace}"

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="{namespace}/x", load=lambda: 1, baseline=lambda v: "x is " + str(v))]
"""

# Each scan figure comes from a fresh process: what a cold ``nia`` pays for it.
SCAN_UNCACHED = """\
import time
started = time.perf_counter()
import importlib_metadata
imported = time.perf_counter()
found = list(importlib_metadata.entry_points(group="nia"))
print((imported - started) * 1000, (time.perf_counter() - imported) * 1000, len(found))
"""

SCAN_CACHED = """\
import importlib.util, os, sys, time
sys.path[0] = os.environ["NIA_BENCH_SCRIPTS"]  # the console script's sys.path: its cache file (one per sys.path)
package = os.path.dirname(importlib.util.find_spec("nia_core").origin)  # found, not imported
spec = importlib.util.spec_from_file_location("epcache", os.path.join(package, "plugin_host", "epcache.py"))
epcache = sys.modules["epcache"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(epcache)  # the cache module alone: stdlib only
started = time.perf_counter()
found = epcache.scan("nia")
print(0, (time.perf_counter() - started) * 1000, len(found))
"""

ENTRY = "import sys\nfrom nia_core.cli import main\nsys.exit(main())\n"


def sh(*command: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, env=env, cwd=cwd, check=False)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, command))}\n{result.stdout}{result.stderr}")
    return result.stdout


def make_venv(work: Path) -> tuple[Path, Path]:
    """A venv of its own (no system site-packages) holding nia, built from a copy of the checkout."""
    source = work / "nia-src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPOSITORY / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
    for name in ("nia_core", "nia_plugins", "plugin-template"):
        shutil.copytree(REPOSITORY / name, source / name, symlinks=True, ignore=ignore)
    venv = work / "venv"
    sh(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    sh(sys.executable, "-m", "pip", "--python", python, "install", "-q", source)
    # Bytecode up front, whatever PYTHONDONTWRITEBYTECODE says: the figures are start-up, not compiling.
    sh(
        python,
        "-m",
        "compileall",
        "-q",
        sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip(),
    )
    site = Path(sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    return python, site


def add_distributions(site: Path, start: int, stop: int) -> None:
    """Tiny distributions as pip leaves them: a package and a ``*.dist-info`` folder.

    Aged to a time of their own (an hour ago, plus ``stop`` seconds): installed a
    while ago, so the caches may be written, yet after the previous batch, as a
    real install leaves ``site-packages`` (setting it back to the same time would
    hide the install from the entry-point cache, which a real install never does).
    """
    when = PAST + stop
    for i in range(start, stop):
        name = f"fake_dist_{i:03d}"
        (site / name).mkdir()
        plugin = i % PLUGIN_EVERY == PLUGIN_EVERY - 1
        (site / name / "__init__.py").write_text(PLUGIN.format(namespace=f"fake{i:03d}") if plugin else "")
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 1.0\n")
        points = f"[console_scripts]\n{name} = {name}:main\n"
        if plugin:
            points += f"\n[nia]\nfake-{i:03d} = {name}\n"
        (info / "entry_points.txt").write_text(points)
        (info / "RECORD").write_text(f"{name}/__init__.py,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
        for path in (*(site / name).iterdir(), site / name, *info.iterdir(), info):
            os.utime(path, (when, when))
    os.utime(site, (when, when))  # as if installed a while ago: the caches may trust the mtimes


def processes_ms(
    commands: dict[str, tuple[list[str | Path], dict[str, str]]], cwd: Path, runs: int
) -> dict[str, tuple[float, float, float]]:
    """Per command: median and best wall time of whole processes, and their median CPU time (user + system).

    The commands take turns, one run each per round, so a burst of load from
    other work on the machine falls on all of them alike: their ratios hold.
    Best wall time and CPU time are the steadier figures on a busy machine
    (CPU time counts the process's own work, not its wait for a core).
    """
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(runs + 1):  # round 0 warms up (and writes the caches)
        for name, (command, env) in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run([str(c) for c in command], capture_output=True, env=env, cwd=cwd, check=True)
            wall = (time.perf_counter() - started) * 1000
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if round_:
                walls[name].append(wall)
                cpus[name].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return {name: (statistics.median(walls[name]), min(walls[name]), statistics.median(cpus[name])) for name in walls}


def printed_ms(script: str, env: dict[str, str], cwd: Path, runs: int) -> tuple[float, float, int]:
    """Medians of the two timings a script prints (import, call), and the count it prints with them."""
    imports, calls, count = [], [], 0
    for _ in range(runs):
        imported, called, found = sh(env["NIA_BENCH_PYTHON"], "-c", script, env=env, cwd=cwd).split()
        imports.append(float(imported))
        calls.append(float(called))
        count = int(found)
    return statistics.median(imports), statistics.median(calls), count


def measure(python: Path, work: Path, runs: int) -> dict[str, tuple[float, ...]]:
    scripts = work / "scripts"  # sys.path[0] of the nia process, as a console script's bin/ would be
    scripts.mkdir(exist_ok=True)
    entry = scripts / "nia_entry.py"
    entry.write_text(ENTRY)
    os.utime(scripts, (PAST, PAST))
    project = work / "project"
    (project / ".nia").mkdir(parents=True, exist_ok=True)
    (project / "AGENTS.md").write_text("# Agents\n\nRun the tests before committing.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIA_", "PYTHON"))}
    env["NIA_CACHE_DIR"] = str(work / "cache")
    env["NIA_BENCH_PYTHON"] = str(python)
    env["NIA_BENCH_SCRIPTS"] = str(scripts)
    uncached = {**env, "NIA_NO_CACHE": "1"}
    commands: dict[str, tuple[list[str | Path], dict[str, str]]] = {
        "click": ([python, "-c", "import click"], env),
        "help_uncached": ([python, entry, "--help"], uncached),
        "help_cached": ([python, entry, "--help"], env),
        "context_show": ([python, entry, "context", "show"], env),
    }
    subprocess.run([str(python), str(entry), "--help"], capture_output=True, env=env, cwd=project, check=True)
    time.sleep(2.1)  # what the caches read was written more than their racy window ago: the next run writes them
    figures: dict[str, tuple[float, ...]] = dict(processes_ms(commands, project, runs))
    for pattern in ("entry-points-*.json", "help-*.json"):
        if not any((work / "cache").glob(pattern)):
            sys.exit(f"no {pattern} was ever written: the cached figures would be wrong")
    imported, scanned, plugins = printed_ms(SCAN_UNCACHED, env, project, runs)
    _, cached, cached_plugins = printed_ms(SCAN_CACHED, env, project, runs)
    assert cached_plugins == plugins, (cached_plugins, plugins)
    figures["scan"] = (imported, scanned)
    figures["scan_cached"] = (cached, plugins)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="process runs per figure (median)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="nia-bench-startup-") as folder:
        work = Path(folder)
        print("building a venv with nia ...", file=sys.stderr)
        python, site = make_venv(work)
        base = len([p for p in site.iterdir() if p.name.endswith(".dist-info")])
        rows = []
        added = 0
        for count in COUNTS:
            add_distributions(site, added, count)
            added = count
            print(f"measuring with {count} extra distributions ...", file=sys.stderr)
            rows.append((count, measure(python, work, args.runs)))
    load_after = os.getloadavg()
    print(f"nia start-up in ms: processes median / best of {args.runs}; scans median, timed in-process")
    print(f"(the venv holds nia and {base - 1} dependencies besides the extra distributions)")
    print(
        "machine load (1/5/15 min): before "
        + " ".join(f"{v:.2f}" for v in load_before)
        + ", after "
        + " ".join(f"{v:.2f}" for v in load_after)
    )
    print()
    header = (
        "| extra dists | nia plugins | python -c 'import click' | nia --help, no cache | nia --help, cached "
        "| nia context show | --help x click | context show x click | x click, CPU time "
        "| import importlib_metadata | entry_points() | cached scan |"
    )
    print(header)
    print("|" + "|".join("-" * len(cell) for cell in header.split("|")[1:-1]) + "|")
    for count, m in rows:
        cells = [
            f"{count}",
            f"{m['scan_cached'][1]:.0f}",
            *(f"{m[k][0]:.0f} / {m[k][1]:.0f}" for k in ("click", "help_uncached", "help_cached", "context_show")),
            f"{m['help_cached'][0] / m['click'][0]:.2f}x",
            f"{m['context_show'][0] / m['click'][0]:.2f}x",
            f"{m['help_cached'][2] / m['click'][2]:.2f}x / {m['context_show'][2] / m['click'][2]:.2f}x",
            f"{m['scan'][0]:.1f}",
            f"{m['scan'][1]:.1f}",
            f"{m['scan_cached'][0]:.2f}",
        ]
        widths = [len(h) - 2 for h in header.split("|")[1:-1]]
        print("| " + " | ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)) + " |")
    print()
    _, most = rows[-1]
    for label, figure, goal in (
        ("nia --help (cached)", "help_cached", HELP_GOAL),
        ("nia context show", "context_show", SHOW_GOAL),
    ):
        ratio = most[figure][0] / most["click"][0]
        verdict = "met" if ratio <= goal else "NOT met"
        others = f"best {most[figure][1] / most['click'][1]:.2f}x, CPU time {most[figure][2] / most['click'][2]:.2f}x"
        print(f"goal: {label} with {rows[-1][0]} extra dists <= {goal}x click: {ratio:.2f}x ({others}), {verdict}")


if __name__ == "__main__":
    main()
