"""What the plugin packs in packs/ cost at a boundary when nothing changed, beside the floor and the naive way.

Run: ``python bench/bench_packs.py`` (the packs need not be installed: their
``src`` folders are used from the checkout). Prints one table (median, ms) for
a Python project whose pytest cache records 1,000 failing tests and a checkout
whose pull request the fake GitHub API of the nia-github pack serves:

- floor: a boundary (``reconcile``) over an empty context;
- ``python/tests`` naive: read and parse ``lastfailed`` at every boundary (what
  a plugin without nia's stat cache would do); nia-pytest: the same boundary
  when the file did not change (one ``stat``, the same value object);
- nia-python's three sources together, nothing changed;
- ``github/pull-request`` naive: ask GitHub at every boundary (three requests to
  a server on 127.0.0.1, so the network costs nothing here: a real API adds
  its round trips), which is the plugin's own loader called each time;
  nia-github as a process that stays up has it, behind nia's ``refresh=``
  (the last answer, no request, within the interval).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
for pack in ("nia-python", "nia-github"):
    sys.path.insert(0, str(REPOSITORY / "packs" / pack / "src"))
sys.path.insert(0, str(REPOSITORY / "packs" / "nia-github" / "tests"))

import nia_github  # noqa: E402
import nia_python.project  # noqa: E402
import nia_python.pytest_results  # noqa: E402
from fakegithub import FakeGitHub, check_run, pull_request  # noqa: E402

from nia_core import ContextSource  # noqa: E402
from nia_core.context import SystemContext, initialize, reconcile  # noqa: E402
from nia_core.project import locate  # noqa: E402
from nia_core.testing import add_plugin, make_host  # noqa: E402

SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def boundary(sources: list[ContextSource]) -> Callable[[], object]:
    context = SystemContext(sources)
    snapshot = initialize(context).snapshot
    return lambda: reconcile(context, snapshot)


def project(root: Path) -> None:
    (root / ".nia").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "1.0"\n')
    (root / "tests").mkdir()
    (root / "tests" / "test_many.py").write_text("")
    cache = root / ".pytest_cache" / "v" / "cache"
    cache.mkdir(parents=True)
    failing = {f"tests/test_many.py::test_{n:04d}": True for n in range(1000)}
    (cache / "lastfailed").write_text(json.dumps(failing, indent=2, sort_keys=True))
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/feature\n")
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/acme/shop.git\n')


def naive(path: Path) -> ContextSource:
    def load() -> object:
        with open(path, "rb") as handle:
            return sorted(json.load(handle))

    return ContextSource(key="naive/tests", load=load, baseline=lambda ids: f"{len(ids)} tests failing")


def measure(root: Path, server: FakeGitHub, repeats: int) -> list[tuple[str, float]]:
    location = locate(root)
    python = nia_python.project.nia_context_sources(location, {})
    tests = nia_python.pytest_results.nia_context_sources(location, {})
    os.environ.update(GH_TOKEN=server.state["token"], NIA_GITHUB_API=server.url, NIA_GITHUB_REFRESH="3600")
    github_every_time = nia_github.nia_context_sources(location, {})  # the plugin's loader: asks at each call
    host = make_host()
    add_plugin(host, nia_github, name="nia-github")
    view = host.open(location)  # as a resident process, nia mcp or nia dev keep it: nia's refresh= in front
    github = list(host.assemble(view).context.sources)
    lastfailed = root / ".pytest_cache" / "v" / "cache" / "lastfailed"
    rows = [
        ("floor: a boundary over no source", median_ms(boundary([]), repeats * 10)),
        ("python/tests naive: read and parse lastfailed", median_ms(boundary([naive(lastfailed)]), repeats)),
        ("python/tests (nia-pytest), nothing changed", median_ms(boundary(tests), repeats * 10)),
        ("nia-python's 3 sources, nothing changed", median_ms(boundary(python + tests), repeats * 10)),
        ("github/pull-request naive: ask GitHub (127.0.0.1)", median_ms(boundary(github_every_time), repeats)),
        ("github/pull-request (nia-github) within refresh", median_ms(boundary(github), repeats * 10)),
    ]
    view.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    for name in ("GH_TOKEN", "GITHUB_TOKEN", "https_proxy", "http_proxy", "HTTPS_PROXY", "HTTP_PROXY"):
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory() as tmp, FakeGitHub() as server:
        repo = server.repo()
        repo["pulls"].append(pull_request(12, "Fix the login page", sha=SHA))
        repo["check_runs"][SHA] = [check_run(f"job {n}", run_id=n) for n in range(20)]
        root = Path(tmp).resolve() / "shop"
        project(root)
        rows = measure(root, server, args.repeats)
    floor = rows[0][1]
    width = max(len(name) for name, _ in rows)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    print(
        f"the plugin packs at a boundary, median (ms); python {sys.version.split()[0]}, {os.cpu_count()} cores, "
        f"load {load} (1, 5, 15 min)"
    )
    print(f"{'what':<{width}} | {'ms':>8} | {'vs floor':>8}")
    for name, ms in rows:
        print(f"{name:<{width}} | {ms:>8.3f} | {ms / floor:>7.1f}x")
    print(
        f"nia-pytest, nothing changed: {rows[1][1] / rows[2][1]:,.0f}x cheaper than reading lastfailed; "
        f"nia-github within refresh: {rows[4][1] / rows[5][1]:,.0f}x cheaper than asking GitHub"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
