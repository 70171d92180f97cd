"""The ``UserPromptSubmit`` hook an agent waits for at every prompt, and the context bytes it adds.

Run: ``python bench/bench_hook.py [--runs 15] [--prompts 2000] [--turns 50 --changes 5]``. Prints two tables.

Every process runs in a venv of its own with nia ``pip install``-ed (not editable) from a copy
of this checkout, bytecode compiled up front, as :mod:`bench_startup` builds it: an editable
install's import finder adds ~10-50 ms to every process, which a user who installed nia never
pays. The table prints the machine's load average before and after.

1. Latency, milliseconds: wall (median and best) and CPU (user + system, median) of fresh
   processes, ``--runs`` rounds in one run; each round runs every row once, so a busy spell
   on a shared machine hits every row alike and the ratios to ``import click`` hold:

   - ``python -c 'import click'``: the reference of any Python command line;
   - ``python -c 'import socket, json'``: the floor of a Python client of a resident process;
   - ``shell hook``: ``sh -c 'echo fixed context'`` (what a hand-written hook costs);
   - ``resident, ...``: ``nia hook claude-code`` answered by a resident process (started and
     warmed before the rounds): unchanged in a real git repository with one local plugin,
     the same with nia-git's ``refresh = 0.001`` (every prompt comes after the refresh
     interval, as an agent's turns, more than 2 s apart, do: the resident's watch of the
     working tree is what keeps git from running), the same with ``refresh = 0`` (git asked
     at every prompt); unchanged with 20 installed plugins, one change, and a project whose
     plugin has a source with a 1 s loader and ``refresh=60`` (each prompt uses the last load);
   - ``in-process, ...`` (``NIA_RESIDENT=0``: what every hook pays when no resident can
     answer): ``nia hook claude-code`` with Claude Code's stdin JSON, on a session whose
     context did not change (it prints nothing); the same with a file of the context edited
     before each run; unchanged with 20 entry-point plugins installed; unchanged in a real
     git repository (the others hold an empty ``.git`` folder), where the built-in nia-git
     runs git at every prompt; and unchanged on an attached session whose every one of
     ``--prompts`` earlier prompts admitted a change (so its history holds that many system
     messages), built in one process through the hook's own code before the rounds: beside
     the first in-process row, it shows whether the hook's cost grows with the conversation.

   Then each resident process's memory (resident set size) and the CPU time it used in
   ``--idle`` seconds without a hook.

2. Context bytes, per host of nia's host table, over a scripted session of ``--turns`` prompts
   with ``--changes`` context changes: what ``nia hook HOST`` printed (its start event where nia
   answers one, then each prompt) against a hook printing the full context at every prompt
   (``nia context show``). "Re-sent" sums, over every request, the hook text the request
   carries: every host keeps each hook output in the conversation, so request k repeats all
   hook text of turns 1..k. Hosts differ in what they load themselves (nia leaves the project's
   AGENTS.md to Claude Code, Codex and Qwen Code, and says it to Gemini CLI).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

if __package__:  # imported as bench.bench_hook
    from bench.bench_startup import make_venv
else:  # python bench/bench_hook.py: this folder is sys.path[0]
    from bench_startup import make_venv

SLOW_PLUGIN = """\
import time
from nia_core import ContextSource, hookimpl

def who_is_on_call():
    time.sleep(1)
    return "Ada"

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="acme/oncall", load=who_is_on_call, baseline=lambda v: v + " is on call.", refresh=60)]
"""

PLUGIN = """\
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="{ns}/x", load=lambda: 1, baseline=lambda v: "{ns} says " + str(v))]
"""

RULE_PLUGIN = """\
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    path = location.root / "rule.txt"
    return [ContextSource(key="acme/rule", load=lambda: path.read_text().strip(),
                          baseline=lambda v: "The team rule is: " + v,
                          update=lambda old, new: f"The team rule changed to: {new} (was: {old})")]
"""


@dataclass
class Row:
    """One command measured: wall and CPU (user + system) milliseconds of each fresh process."""

    label: str
    command: list[str]
    env: dict[str, str]
    cwd: Path
    stdin: str = ""
    before: Callable[[], None] | None = None
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def run(self) -> None:
        if self.before is not None:
            self.before()
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            self.command, input=self.stdin, capture_output=True, text=True, env=self.env, cwd=self.cwd
        )
        self.wall.append((time.perf_counter() - started) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu.append((after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime) * 1000)
        if done.returncode != 0:
            sys.exit(f"failed: {' '.join(self.command)}\n{done.stderr}")


def payload(project: Path, event: str, session: str, source: str = "") -> str:
    """A hook's stdin JSON (every host here names its members as Claude Code does)."""
    data = {"session_id": session, "cwd": str(project), "hook_event_name": event, "transcript_path": None}
    if source:
        data["source"] = source
    else:
        data["prompt"] = "go on"
    return json.dumps(data)


def make_project(work: Path, name: str) -> Path:
    root = work / name
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Use tabs.\n")
    (root / "rule.txt").write_text("rule 0\n")
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / ".nia" / "plugins" / "acme.py").write_text(RULE_PLUGIN)
    return root


def make_repository(work: Path, name: str) -> Path | None:
    """A project that is a real git repository with one commit (``None`` without git): nia-git runs git."""
    git = shutil.which("git")
    if git is None:
        return None
    root = make_project(work, name)
    (root / ".git").rmdir()
    who = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    for command in (["init", "-q", "."], ["add", "."], [*who, "commit", "-qm", "start"]):
        subprocess.run([git, *command], capture_output=True, check=True, cwd=root)
    return root


def installed_plugins(site: Path, count: int) -> None:
    for i in range(count):
        ns = f"bench{i:02d}"
        (site / f"{ns}_plugin.py").write_text(PLUGIN.format(ns=ns))
        dist = site / f"{ns}_plugin-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {ns}-plugin\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text(f"[nia]\n{ns} = {ns}_plugin\n")


def clean_env(work: Path) -> dict[str, str]:
    """No NIA_* or PYTHON* settings of the caller (PYTHONPATH would bring the checkout back); bytecode is used.

    Hooks answer in-process (``NIA_RESIDENT=0``) unless a row switches resident processes on; their
    sockets live in a folder of this run.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIA_", "PYTHON"))}
    env.update(XDG_DATA_HOME=str(work / "data"), XDG_STATE_HOME=str(work / "state"), XDG_CACHE_HOME=str(work / "cache"))
    run = work / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    env.update(XDG_RUNTIME_DIR=str(run), NIA_RESIDENT="0")
    return env


def residents(nia: str, env: dict[str, str]) -> list[dict]:
    done = subprocess.run([nia, "hook", "residents", "--json"], capture_output=True, text=True, env=env, check=True)
    return list(json.loads(done.stdout)["residents"])


def start_resident(nia: str, env: dict[str, str], cwd: Path) -> None:
    """A hook nia ignores starts the resident process of this environment and folder; wait until it answers."""
    before = len([r for r in residents(nia, env) if r["ready"]])
    ignored = json.dumps({"session_id": "warm-up", "cwd": str(cwd), "hook_event_name": "PreToolUse"})
    subprocess.run([nia, "hook", "claude-code"], input=ignored, capture_output=True, text=True, env=env, cwd=cwd)
    deadline = time.monotonic() + 120
    while len([r for r in residents(nia, env) if r["ready"]]) <= before:
        if time.monotonic() > deadline:
            sys.exit(f"no resident process started in {cwd}")
        time.sleep(0.1)


GROW = """
import sys
from pathlib import Path
from nia_core.agents import adapter
from nia_core.agents.answer import run
from nia_core.runtime import Runtime
root, prompts, stdin = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
runtime, host = Runtime(), adapter("claude-code")
for prompt in range(prompts):
    (root / "rule.txt").write_text(f"rule {prompt + 1}\\n")  # the project starts at rule 0
    if run(host, stdin, runtime).entry.outcome != "updated":
        sys.exit(f"prompt {prompt} admitted nothing")
"""
"""Prompts of one attached session, each with a change, through the hook's own code in one process."""


def latency(python: Path, work: Path, runs: int, prompts: int) -> list[Row]:
    """Every row once per round, ``runs`` rounds: a busy spell on the machine hits every row alike."""
    env = clean_env(work)
    script = str(python.parent / "nia")
    nia = [script, "hook", "claude-code"]
    plain = make_project(work, "plain")
    changing = make_project(work, "changing")  # the change rows' own: the unchanged rows' project never changes
    counter = iter(range(1, 10**6))

    def change() -> None:
        (changing / "rule.txt").write_text(f"rule {next(counter)}\n")

    site = work / "site"
    site.mkdir()
    installed_plugins(site, 20)
    # The same cache folder as the other rows: the entry-point cache keeps one file per sys.path, so this row's
    # PYTHONPATH no longer evicts theirs (nor theirs its own) at every round.
    env20 = {**env, "PYTHONPATH": str(site)}
    many = make_project(work, "many")
    slow = make_project(work, "slow")
    (slow / ".nia" / "plugins" / "oncall.py").write_text(SLOW_PLUGIN)
    resident = {**env, "NIA_RESIDENT": "1"}
    resident20 = {**env20, "NIA_RESIDENT": "1"}
    ups, ups20 = payload(plain, "UserPromptSubmit", "s1"), payload(many, "UserPromptSubmit", "s2")
    repository = make_repository(work, "repository")
    rows = [
        Row("python -c 'import click'", [str(python), "-c", "import click"], env, work),
        Row("python -c 'import socket, json'", [str(python), "-c", "import socket, json"], env, work),
        Row("shell hook (echo a fixed string)", ["sh", "-c", "echo fixed context"], env, work),
    ]
    starts = [(plain, env, "s1"), (changing, env, "s11"), (many, env20, "s2"), (slow, env, "s5")]
    if repository is not None:
        starts.append((repository, env, "s3"))
        rows.append(
            Row(
                "resident, unchanged, git repo + local plugin",
                nia,
                resident,
                repository,
                payload(repository, "UserPromptSubmit", "s4"),
            )
        )
        # A resident watches the working tree: prompts further apart than nia-git's `refresh` (2 s), as an
        # agent's turns are, run no git while nothing changed; `refresh = 0.001` shows it without waiting.
        # `refresh = 0` asks git at every prompt, watched or not.
        for name, refresh, label, session in (
            ("repository-apart", "0.001", "prompts past the refresh", "s13"),
            ("repository-asking", "0", "refresh = 0 (git every prompt)", "s10"),
        ):
            folder = make_repository(work, name)
            if folder is not None:
                (folder / ".nia" / "project.toml").write_text(f"[plugins.nia-git]\nrefresh = {refresh}\n")
                prompt = payload(folder, "UserPromptSubmit", session)
                rows.append(Row(f"resident, unchanged, git repo, {label}", nia, resident, folder, prompt))
    rows += [
        Row(
            "resident, unchanged, 20 installed plugins", nia, resident20, many, payload(many, "UserPromptSubmit", "s6")
        ),
        Row(
            "resident, one change",
            nia,
            resident,
            changing,
            payload(changing, "UserPromptSubmit", "s7"),
            before=change,
        ),
        Row(
            "resident, unchanged, 1 s loader, refresh=60",
            nia,
            resident,
            slow,
            payload(slow, "UserPromptSubmit", "s8"),
        ),
        Row("in-process, unchanged, built-ins + local plugin", nia, env, plain, ups),
        Row(
            "in-process, one change",
            nia,
            env,
            changing,
            payload(changing, "UserPromptSubmit", "s11"),
            before=change,
        ),
        Row("in-process, 20 installed plugins, unchanged", nia, env20, many, ups20),
    ]
    if repository is not None:
        rows.append(
            Row("in-process, unchanged, git repo", nia, env, repository, payload(repository, "UserPromptSubmit", "s3"))
        )
    if prompts:
        long = make_project(work, "long")
        ups9 = payload(long, "UserPromptSubmit", "s9")
        Row("start", nia, env, long, payload(long, "SessionStart", "s9", "startup")).run()
        Row("grow", [str(python), "-c", GROW, str(long), str(prompts), ups9], env, long).run()
        rows.append(Row(f"in-process, unchanged, session of {prompts:,} prompts", nia, env, long, ups9))
    for project, environment, session in starts:
        Row("start", nia, environment, project, payload(project, "SessionStart", session, "startup")).run()
    time.sleep(2.1)  # the entry-point cache trusts no folder modified within 2 s: let the fresh venv settle
    for project, environment in {
        (r.cwd, id(r.env)): (r.cwd, r.env) for r in rows if r.label.startswith("resident")
    }.values():
        start_resident(script, environment, project)
    for row in rows:
        if row.label.startswith("resident"):
            session = json.loads(row.stdin)["session_id"]
            Row("start", nia, row.env, row.cwd, payload(row.cwd, "SessionStart", session, "startup")).run()
    for row in rows:  # warm: caches written, the files in the page cache
        row.run()
        row.wall.clear()
        row.cpu.clear()
    for _ in range(runs):
        for row in rows:
            row.run()
    return rows


def resident_costs(python: Path, work: Path, idle: float) -> list[tuple[str, int | None, float]]:
    """Each resident process: (its projects, its memory in bytes, CPU ms it used in ``idle`` seconds without a hook)."""
    env = clean_env(work)
    found = residents(str(python.parent / "nia"), env)
    before = {r["pid"]: _cpu_ms(r["pid"]) for r in found}
    time.sleep(idle)
    costs = []
    for r in found:
        used = _cpu_ms(r["pid"]) - before[r["pid"]]
        costs.append((", ".join(Path(p).name for p in r["projects"]) or r["cwd"], r["memory_bytes"], used))
    subprocess.run([str(python.parent / "nia"), "hook", "stop"], capture_output=True, env=env)
    return costs


def _cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


HOSTS = """
import json
from nia_core.agents import ADAPTERS, adapter
from nia_core.agents.contract import PROMPT, START
table = {}
for name in sorted(ADAPTERS):
    host = adapter(name)
    roles = {role: event for event, role in host.events.items()}
    keys = host.input_keys
    table[name] = [roles.get(START), roles[PROMPT], [keys.event, keys.session, keys.cwd, keys.source], host.output]
print(json.dumps(table))
"""
"""Every host of the installed nia's host table: its start event (or none), its prompt event, the names of its
stdin's members (event, session, cwd, source; "" for one it does not send) and its answer's shape."""


def context_bytes(python: Path, work: Path, turns: int, changes: int) -> dict[str, tuple[int, int]]:
    """(bytes added, bytes re-sent over all requests) for each host's nia hook and for a print-everything hook.

    Every host gets the same scripted session: its start event where nia answers one (``startup``),
    then ``turns`` prompts with ``changes`` edits of the context spread over them. Each host keeps
    every hook output in its conversation, so request k repeats all hook text of turns 1..k.
    """
    env = {**clean_env(work), "XDG_DATA_HOME": str(work / "data2"), "XDG_STATE_HOME": str(work / "state2")}
    hosts = json.loads(subprocess.run([str(python), "-c", HOSTS], capture_output=True, text=True, check=True).stdout)
    change_at = {round((i + 1) * turns / (changes + 1)) for i in range(changes)}

    def change(project: Path, turn: int) -> None:
        (project / "rule.txt").write_text(f"rule {turn}: " + "be careful " * 5 + "\n")

    def session(index: int, name: str, start: str | None, prompt: str, keys: list[str], output: str) -> tuple[int, int]:
        project = make_project(work, f"session-{index:02d}")  # paths of one length: the hosts' bytes compare
        nia = [str(python.parent / "nia"), "hook", name]

        def printed(stdin: str) -> int:
            out = subprocess.run(nia, input=stdin, capture_output=True, text=True, env=env, cwd=project).stdout
            if not out.strip():
                return 0
            answer = json.loads(out)
            nested = output == "hookSpecificOutput"
            text = answer["hookSpecificOutput"]["additionalContext"] if nested else answer[output]
            return len(text.encode())

        def stdin_for(event: str, source: str = "") -> str:
            """The hook's stdin in the host's own member names (Copilot CLI: ``sessionId``, no event name)."""
            event_key, session_key, cwd_key, source_key = keys
            data = {session_key: name, cwd_key: str(project), "prompt": "go on"}
            if event_key:
                data[event_key] = event
            if source:
                data[source_key] = source
            return json.dumps(data)

        total = printed(stdin_for(start, "startup")) if start else 0
        resent = 0
        for turn in range(1, turns + 1):
            if turn in change_at:
                change(project, turn)
            total += printed(stdin_for(prompt))
            resent += total
        return total, resent

    figures = {
        f"nia hook {name}": session(index, name, start, prompt, keys, output)
        for index, (name, (start, prompt, keys, output)) in enumerate(hosts.items())
    }
    project = make_project(work, "session-99")
    show = [str(python.parent / "nia"), "context", "show"]

    def full() -> int:
        return len(subprocess.run(show, capture_output=True, text=True, env=env, cwd=project).stdout.strip().encode())

    naive_total = full()  # the naive hook prints everything at the start too
    naive_resent = 0
    for turn in range(1, turns + 1):
        if turn in change_at:
            change(project, turn)
        naive_total += full()
        naive_resent += naive_total
    figures["full context every prompt"] = (naive_total, naive_resent)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--prompts", type=int, default=2000, help="earlier prompts of the long attached session")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--changes", type=int, default=5)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds to watch the idle resident processes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nia-bench-hook-") as tmp:
        work = Path(tmp)
        print("building a venv with nia (not editable) ...", file=sys.stderr)
        python, _ = make_venv(work)
        load = os.getloadavg()
        try:
            rows = latency(python, work, args.runs, args.prompts)
            load_after = os.getloadavg()
            costs = resident_costs(python, work, args.idle)
        finally:
            subprocess.run([str(python.parent / "nia"), "hook", "stop"], capture_output=True, env=clean_env(work))
        floor, cpu_floor = statistics.median(rows[0].wall), statistics.median(rows[0].cpu)
        print(
            f"{args.runs} rounds of fresh processes, rows interleaved; "
            "nia pip-installed (not editable), bytecode compiled"
        )
        print(f"load average before / after: {load[0]:.2f} / {load_after[0]:.2f} ({os.cpu_count()} CPUs)")
        print()
        header = f"{'UserPromptSubmit hook latency':<62} {'median ms':>10} {'best ms':>8} {'x click':>8}"
        print(header + f" {'CPU ms':>7} {'CPU x click':>12}")
        for row in rows:
            median, cpu = statistics.median(row.wall), statistics.median(row.cpu)
            print(
                f"{row.label:<62} {median:>10.1f} {min(row.wall):>8.1f} {median / floor:>8.2f}"
                f" {cpu:>7.1f} {cpu / cpu_floor:>12.2f}"
            )
        print()
        print(f"{'resident process (projects)':<44} {'memory MiB':>10} {f'CPU ms in {args.idle:g} s idle':>22}")
        for where, memory, used in costs:
            shown = f"{memory / (1024 * 1024):.1f}" if memory is not None else "?"
            print(f"{where:<44} {shown:>10} {used:>22.1f}")
        print()
        load = os.getloadavg()
        figures = context_bytes(python, work, args.turns, args.changes)
        naive_added, naive_resent = figures["full context every prompt"]
        title = f"{args.turns} prompts, {args.changes} changes"
        print(f"load average before / after: {load[0]:.2f} / {os.getloadavg()[0]:.2f}")
        print(f"{title:<44} {'bytes added':>12} {'x full':>7} {'re-sent over all requests':>26} {'x full':>7}")
        for label, (added, resent) in figures.items():
            print(f"{label:<44} {added:>12,} {added / naive_added:>7.3f} {resent:>26,} {resent / naive_resent:>7.3f}")


if __name__ == "__main__":
    main()
