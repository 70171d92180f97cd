"""Peak memory of ``nia context show`` and one ``nia session send``, with 1,000 context files, beside click.

Run: ``python bench/bench_memory.py`` (from the repository root). Each row is a
fresh child process; its peak resident set size is the kernel's own figure
for that child (``ru_maxrss`` from ``wait4``), taken by a lean launcher
process the children are forked from, so nothing of this process counts.
The floor is ``python -c "import click"`` (the CLI framework alone); ``nia
--help`` shows what importing nia adds before any context is read.

The project: 10 ``[[project.context]]`` folders of 100 text files each
(1,000 files, 4 KiB on average) and an AGENTS.md; ``session send`` talks to
a fake OpenAI Chat Completions server on 127.0.0.1 (the test suite's, which
needs no real key) and stores the session in a throwaway SQLite file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.providers.fakeserver import API_KEY, FakeProviderServer  # noqa: E402

FOLDERS, PER_FOLDER = 10, 100
NIA = "from nia_core.cli import main; main()"


def build(root: Path) -> int:
    """Write the project; return the bytes of context text it holds."""
    (root / ".nia").mkdir(parents=True)
    entries, total = [], 0
    for d in range(FOLDERS):
        folder = root / "docs" / f"area{d:02d}"
        folder.mkdir(parents=True)
        for i in range(PER_FOLDER):
            text = f"# Note {d}-{i}\n\n" + ("Plain words about the project, line after line.\n" * (20 + i % 130))
            (folder / f"note{i:03d}.md").write_text(text)
            total += len(text)
        entries.append(f'[[project.context]]\ntype = "directory"\npath = "docs/area{d:02d}/"\n')
    (root / ".nia" / "project.toml").write_text('[project]\nname = "memory"\n\n' + "\n".join(entries))
    (root / "AGENTS.md").write_text("Be brief.\n")
    return total


LAUNCHER = """
import json, os, subprocess, sys
for line in sys.stdin:
    job = json.loads(line)
    with open(job["out"], "wb") as out:
        child = subprocess.Popen(job["argv"], cwd=job["cwd"], env=job["env"], stdout=out, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL)
        err = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    tail = err.decode(errors="replace")[-2000:]
    print(json.dumps({"kib": usage.ru_maxrss, "rc": code, "err": tail}), flush=True)
"""


class Launcher:
    """A small process that starts every measured child and reports its ``wait4`` peak RSS.

    A child's ``ru_maxrss`` includes the image of the process it was forked
    from (Linux records the pre-``exec`` high-water mark), so the children
    are forked from this lean launcher, never from the benchmark itself,
    which grows (it holds the fake server's requests).
    """

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
        """Run ``argv`` to completion; its peak RSS in KiB and its stdout."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with tempfile.NamedTemporaryFile() as out:
            job = {"argv": argv, "cwd": str(cwd), "env": env, "out": out.name}
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
            answer = json.loads(self.proc.stdout.readline())
            if answer["rc"] != 0:
                raise SystemExit(f"{argv} failed ({answer['rc']}): {answer['err']}")
            return answer["kib"], Path(out.name).read_text(errors="replace")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def measure(
    root: Path, data: Path, server: FakeProviderServer, launcher: Launcher, repeats: int
) -> list[tuple[str, int, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIA_", "OPENAI_", "ANTHROPIC_"))}
    env.update(
        NIA_DB=str(data / "nia.db"),
        XDG_CONFIG_HOME=str(data / "config"),
        OPENAI_BASE_URL=f"{server.url}/v1",
        OPENAI_API_KEY=API_KEY,
    )
    python = sys.executable

    def send(session: str, text: str) -> int:
        before = len(server.received)
        kib, _ = launcher.run([python, "-c", NIA, "session", "send", session, text], root, env)
        assert len(server.received) == before + 1, "session send made no provider call"
        return kib

    # Every row once per round, the lowest of the rounds per row: a busy spell hits all rows alike.
    peaks: dict[str, list[int]] = {"click": [], "help": [], "show": [], "first": [], "later": []}
    for n in range(repeats):  # a fresh session each: its first turn renders and stores the baseline
        peaks["click"].append(launcher.run([python, "-c", "import click"], root, env)[0])
        peaks["help"].append(launcher.run([python, "-c", NIA, "--help"], root, env)[0])
        kib, text = launcher.run([python, "-c", NIA, "context", "show"], root, env)
        files = text.count("File: docs/area")
        assert files == FOLDERS * PER_FOLDER, f"context show rendered {files} files, not {FOLDERS * PER_FOLDER}"
        peaks["show"].append(kib)
        session = subprocess.run(
            [python, "-c", NIA, "session", "new", "--model", "openai-chat/gpt-4.1"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        peaks["first"].append(send(session, f"hello {n}"))
        peaks["later"].append(send(session, f"again {n}"))
    click, helped, shown, first_send, later = (min(peaks[row]) for row in peaks)
    return [
        ('python -c "import click" (floor)', click, "the CLI framework alone"),
        ("nia --help", helped, "nia imported, no context read"),
        ("nia context show", shown, "1,000 files read, checked, rendered"),
        ("nia session send (first turn)", first_send, "baseline rendered, stored, sent"),
        ("nia session send (later turn)", later, "unchanged boundary, history sent"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5, help="rounds of every row (the lowest peak is shown)")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args(argv)
    launcher = Launcher()
    server = FakeProviderServer().start()
    try:
        for run in range(1, args.runs + 1):
            with tempfile.TemporaryDirectory() as tmp:
                root, data = Path(tmp) / "project", Path(tmp) / "data"
                data.mkdir()
                total = build(root)
                load = " ".join(f"{x:.2f}" for x in os.getloadavg())
                print(
                    f"run {run}: peak RSS, {FOLDERS * PER_FOLDER:,} context files ({total / 1024 / 1024:.1f} MiB of "
                    f"text), lowest of {args.repeats}; python {sys.version.split()[0]}, load {load}"
                )
                rows = measure(root, data, server, launcher, args.repeats)
                server.received.clear()  # the requests (megabytes each) are not kept between runs
            floor = rows[0][1]
            print(f"{'command':<34} | {'peak MiB':>8} | {'x floor':>7} | {'over floor':>10} | note")
            for name, kib, note in rows:
                extra = (kib - floor) / 1024
                print(f"{name:<34} | {kib / 1024:8.1f} | {kib / floor:6.2f}x | {extra:+9.1f}M | {note}")
            shown = rows[2][1]
            print(
                f"session send / context show: first turn {rows[3][1] / shown:.2f}x,"
                f" later turn {rows[4][1] / shown:.2f}x (goal: at most 1.25x)"
            )
            print(f"context text on disk: {total / 1024 / 1024:.1f} MiB")
            print()
    finally:
        server.stop()
        launcher.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
