"""Assembling a workflow's context: 20 directory sources of 100 files each, against naive reading.

Run: ``python bench/bench_assembly.py``. Prints one table per run (median of
repeats, ms; two runs by default), each with the machine's load, every figure
beside the list+stat floor measured in the same run.

Each folder holds 80 text files (2-6 KB), 12 binary files (by extension, by
magic number, by a NUL byte) and 8 oversize files (1.1 MB, sparse on disk).
"naive read-all" reads every byte of every file and then decides what to keep,
as a loader without the rules would; "naive stat first" at least skips
oversize files by size. nia's figures are the whole pipeline: configuration,
path checks, merging, sources, and the engine's baseline or reconcile. The
same 20 folders as ``[[project.context]]`` entries of project.toml (what the
``nia-project`` plugin gives every session) are measured too. A last table
lists 1,500 nested folders (a directory entry of project.toml) beside the
floor (each folder opened from its parent) and the naive way (each folder
opened by its whole path, which the kernel resolves a component at a time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from nia_core.context import SystemContext, Unchanged, Updated, initialize, reconcile
from nia_core.project import locate
from nia_core.project import merge as merge_module
from nia_core.project.binary import binary_extension, looks_binary
from nia_core.project.sections import project_context_sources
from nia_core.project.workflow import Workflow, assemble_workflow

FOLDERS = 20
TEXT, BINARY, OVERSIZE = 80, 12, 8
LIMIT = 1024 * 1024
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def build(root: Path) -> str:
    """Write the project; return a project.toml naming the same 20 folders as ``[[project.context]]``."""
    (root / ".nia").mkdir()
    entries, project_entries = [], []
    for d in range(FOLDERS):
        folder = root / "docs" / f"area{d:02d}"
        folder.mkdir(parents=True)
        for i in range(TEXT):
            size = 2048 + (i * 37 % 4096)
            (folder / f"note{i:03d}.md").write_text(f"# Note {d}-{i}\n" + ("lorem ipsum dolor sit amet " * 200)[:size])
        for i in range(BINARY):
            kind = i % 3
            if kind == 0:
                (folder / f"image{i:02d}.png").write_bytes(PNG)
            elif kind == 1:
                (folder / f"disguised{i:02d}.md").write_bytes(PNG)
            else:
                (folder / f"data{i:02d}.dat").write_bytes(b"header\x00" + b"x" * 4000)
        for i in range(OVERSIZE):
            with open(folder / f"dump{i:02d}.sql", "wb") as handle:
                handle.write(b"-- dump\n")
                handle.truncate(LIMIT + 100 * 1024)
        entry = f'type = "directory"\npath = "docs/area{d:02d}/"\ndescription = "Area {d}"\n'
        entries.append("[[workflows.context]]\n" + entry)
        project_entries.append("[[project.context]]\n" + entry)
    (root / ".nia" / "project.toml").write_text('[project]\nname = "bench"\n')
    (root / ".nia" / "commands.toml").write_text(
        '[[workflows]]\ntarget = "bench"\n\n' + "\n".join(entries) + '\n[[workflows.operations]]\nname = "run"\n'
    )
    return '[project]\nname = "bench"\n\n' + "\n".join(project_entries)


def naive(root: Path, stat_first: bool) -> list[str]:
    """Walk every folder, read every file, keep what is text under the limit, render it all."""
    kept, parts = [], []
    for d in range(FOLDERS):
        folder = root / "docs" / f"area{d:02d}"
        for name in sorted(os.listdir(folder)):
            path = folder / name
            if stat_first and path.stat().st_size > LIMIT:
                continue
            data = path.read_bytes()
            if len(data) > LIMIT or binary_extension(name) or looks_binary(data):
                continue
            rel = str(path.relative_to(root))
            kept.append(rel)
            parts.append(f"## File: {rel}\n\n```md\n{data.decode('utf-8', 'replace')}\n```")
    "\n\n".join(parts)
    return kept


def list_and_stat(root: Path) -> int:
    """What any correct check for changes must pay: list each folder, stat each file."""
    count = 0
    for d in range(FOLDERS):
        with os.scandir(root / "docs" / f"area{d:02d}") as listing:
            for item in listing:
                item.stat()
                count += 1
    return count


def median_ms(fn: Callable[[], object], repeats: int, setup: Callable[[], object] | None = None) -> float:
    samples = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


BEST: dict[str, tuple[float, float]] = {}
"""Per paired row: the fastest of ``fn`` and of the floor (what a quiet moment of a busy machine shows)."""


def paired_ms(name: str, fn: Callable[[], object], floor: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Medians of ``fn`` and of ``floor``, run alternately: on a shared machine both see the same load."""
    mine, base = [], []
    for _ in range(repeats):
        for samples, call in ((base, floor), (mine, fn)):
            started = time.perf_counter()
            call()
            samples.append((time.perf_counter() - started) * 1000)
    BEST[name] = (min(mine), min(base))
    return statistics.median(mine), statistics.median(base)


def forget_caches() -> None:
    forget = getattr(merge_module, "forget", None)
    if forget is not None:
        forget()
    else:  # an older nia (to compare before and after): its two caches
        merge_module.FILES.forget()
        merge_module._kinds.clear()


def measure(root: Path, project_toml: str, repeats: int) -> list[tuple[str, float, float, str]]:
    location = locate(root)
    state: dict[str, object] = {}

    def nia_assemble() -> Workflow:
        workflow = assemble_workflow(location, "bench", "run")
        state["generation"] = initialize(workflow.system_context())
        return workflow

    workflow = nia_assemble()
    expected = naive(root, stat_first=False)
    assert [f.path for f in workflow.category2.files] == expected, "nia and naive disagree on what to include"
    included, skipped = len(workflow.category2.files), len(workflow.category2.skipped)
    snapshot = state["generation"].snapshot  # type: ignore[attr-defined]
    counter = [0]
    target = root / "docs" / "area07" / "note042.md"

    def edit_one() -> None:
        counter[0] += 1
        target.write_text(f"# Edited {counter[0]}\n" + "x" * (100 + counter[0]))

    def boundary_after_edit() -> None:
        result = reconcile(workflow.system_context(), state["snapshot"])  # type: ignore[arg-type]
        assert isinstance(result, Updated) and len(result.changes) == 1
        state["snapshot"] = result.snapshot

    def unchanged() -> None:
        assert isinstance(reconcile(workflow.system_context(), snapshot), Unchanged)

    state["snapshot"] = snapshot
    stat_all = partial(list_and_stat, root)
    floor = median_ms(stat_all, repeats)
    rows: list[tuple[str, float, float, str]] = [
        ("list + stat every file (floor)", floor, floor, "no reads at all"),
        ("naive read-all", median_ms(lambda: naive(root, False), repeats), floor, "reads 2,000 files, 178 MB"),
        ("naive stat first", median_ms(lambda: naive(root, True), repeats), floor, "reads 1,840 files"),
        ("nia cold assembly", median_ms(nia_assemble, repeats, forget_caches), floor, "empty caches: first run"),
        ("nia warm assembly", median_ms(nia_assemble, repeats), floor, "caches warm: same process"),
    ]
    unchanged()  # the first lenient refresh after the strict assembly
    name = "nia boundary, unchanged"
    rows.append((name, *paired_ms(name, unchanged, stat_all, repeats), "list, stat, compare *"))
    rows.append(
        ("nia boundary, 1 file edited", median_ms(boundary_after_edit, repeats, edit_one), floor, "one update message")
    )

    # The same folders as [[project.context]] entries: the nia-project plugin's sources at every boundary.
    target.write_text("# Note 7-42\n")
    (root / ".nia" / "project.toml").write_text(project_toml)
    project_snapshot = initialize(SystemContext(project_context_sources(location))).snapshot

    def project_unchanged() -> None:
        result = reconcile(SystemContext(project_context_sources(location)), project_snapshot)
        assert isinstance(result, Unchanged)

    project_unchanged()
    name = "project.toml boundary, unchanged"
    rows.append((name, *paired_ms(name, project_unchanged, stat_all, repeats), "nia-project's *"))
    print(f"{included} files included, {skipped} skipped, {FOLDERS} directory sources")
    return rows


DEPTH = 1500


def deep_rows(tmp: Path, repeats: int) -> list[tuple[str, float, float, str]]:
    """``nia-project``'s sources for a directory entry of :data:`DEPTH` nested folders, cold and warm."""
    root = tmp / "deep-project"
    (root / ".nia").mkdir(parents=True)
    entry = '[[project.context]]\ntype = "directory"\npath = "deep"\n'
    (root / ".nia" / "project.toml").write_text('[project]\nname = "deep"\n' + entry)
    folders = [str(root / "deep")]
    os.mkdir(folders[0])
    for _ in range(DEPTH):  # one mkdir at a time: no recursion anywhere
        folders.append(os.path.join(folders[-1], "d"))
        os.mkdir(folders[-1])
    Path(folders[-1], "bottom.md").write_text("bottom\n")
    location = locate(root)

    def from_parents() -> None:
        fd = os.open(folders[0], os.O_RDONLY | os.O_DIRECTORY)
        for _ in folders:
            with os.scandir(fd) as listing:
                list(listing)
            try:
                child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                break
            finally:
                os.close(fd)
            fd = child

    def by_whole_paths() -> None:
        for folder in folders:
            with os.scandir(folder) as listing:
                list(listing)

    def nia_sources() -> None:
        assert len(project_context_sources(location)) == 2  # the project, and the one file at the bottom

    try:
        floor = median_ms(from_parents, repeats)
        return [
            ("list each folder from its parent", floor, floor, "the floor"),
            ("naive: by whole paths", median_ms(by_whole_paths, repeats), floor, "what nia did before"),
            ("nia-project, cold", median_ms(nia_sources, repeats, forget_caches), floor, "empty caches"),
            ("nia-project, warm", median_ms(nia_sources, repeats), floor, "a boundary"),
        ]
    finally:
        for folder in reversed(folders):  # bottom-up: shutil.rmtree recurses
            for name in os.listdir(folder):
                if name != "d":
                    os.unlink(os.path.join(folder, name))
            os.rmdir(folder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        project_toml = build(root)
        commands = (root / ".nia" / "commands.toml").read_text()
        for run in range(1, args.runs + 1):
            (root / ".nia" / "project.toml").write_text('[project]\nname = "bench"\n')
            (root / ".nia" / "commands.toml").write_text(commands)
            forget_caches()
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())
            print(
                f"run {run}: workflow assembly, {FOLDERS} x {TEXT + BINARY + OVERSIZE} files, median of "
                f"{args.repeats} (ms); python {sys.version.split()[0]}, {os.cpu_count()} cores, load {load}"
            )
            rows = measure(root, project_toml, args.repeats)
            naive_ms = next(ms for name, ms, _, _ in rows if name == "naive read-all")
            print(f"{'scenario':<33} | {'ms':>9} | {'floor ms':>8} | {'x floor':>7} | {'vs naive':>8} | note")
            for name, ms, floor, note in rows:
                print(f"{name:<33} | {ms:9.2f} | {floor:8.2f} | {ms / floor:6.1f}x | {naive_ms / ms:7.1f}x | {note}")
            print("* measured alternately with the floor, so both see the same load; fastest of each:")
            for name, (mine, base) in BEST.items():
                print(f"  {name}: {mine:.2f} ms vs {base:.2f} ms floor = {mine / base:.1f}x")
            print(f"load after run {run}: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
            print()
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"{DEPTH} nested folders as one [[project.context]] entry, median of {args.repeats} (ms); load {load}")
        print(f"{'scenario':<33} | {'ms':>9} | {'floor ms':>8} | {'x floor':>7} | note")
        for name, ms, floor, note in deep_rows(Path(tmp), args.repeats):
            print(f"{name:<33} | {ms:9.2f} | {floor:8.2f} | {ms / floor:6.1f}x | {note}")
        print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
