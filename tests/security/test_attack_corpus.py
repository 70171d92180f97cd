"""The attacker's corpus: hostile repositories, hook input, MCP frames, plugins and servers against the installed CLI.

Every case runs the real ``nia`` in a subprocess, in its own HOME/XDG folders
and database, under a timeout. What counts as a failure is the trust rule of
docs/security.md: a byte from outside the project in any output, a hang, a
Python traceback without ``--debug``, output that is not the promised JSON, a
credential leaving for another origin or printed, and a read-only command
creating a file.
"""

from __future__ import annotations

import json
import os
import select
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.resident_helpers import check_answered, env_for_mode, is_hook, warm
from tests.unix_sockets import bind_unix_socket

_SCRIPT = Path(sys.executable).with_name("nia")
NIA = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from nia_core.cli import main; main()"]
LIMIT = 40.0
"""Each subprocess's bound: a hang fails the case instead of freezing the suite."""
SECRET = "OUTSIDE-SECRET-7f3a9c"
"""Written only outside the project; it must never appear in any output."""
KEY = "sk-attack-KEY-5e1d"
"""A provider key: it must never be printed nor reach another origin."""


class Attack:
    """One hostile world: a project, an outside folder holding the secret, an isolated home."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.outside = base / "outside"
        self.outside.mkdir()
        self.secret = self.outside / "secret.md"
        self.secret.write_text(f"{SECRET}\n")
        self.root = base / "proj"
        (self.root / ".nia").mkdir(parents=True)
        (self.root / ".git").mkdir()
        (self.root / "AGENTS.md").write_text("INSIDE-RULE: be brief.\n")
        self.home = base / "home"
        self.home.mkdir()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "NIA_DB": str(self.home / "nia.db"),
            "GIT_CEILING_DIRECTORIES": str(base),
            "NIA_HOOK_DEADLINE": "30",
            "LANG": "C.UTF-8",
        }

    def nia(
        self,
        *args: str,
        stdin: bytes | None = b"",
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        limit: float = LIMIT,
        exact: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """Run the CLI; a timeout is a failure of the case (a hang), never a pass.

        ``exact``: the arguments as given (``nia hook codex`` as the installed hooks run it), else the
        date plugin is switched off so no output changes at midnight.
        """
        argv = [*NIA, *([] if exact else ["-p", "no:nia-date"]), *args]
        environment = env_for_mode({**self.env, **(env or {})})
        if is_hook(args):  # in the resident mode, a resident process answers it: started and waited for first
            warm(argv, environment, cwd or self.root)
        try:
            done = subprocess.run(
                argv,
                input=stdin,
                capture_output=True,
                cwd=cwd or self.root,
                env=environment,
                timeout=limit,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"nia {' '.join(args)} hung (no exit within {limit:g}s)")
        if is_hook(args):
            check_answered(environment, stdin)
        return subprocess.CompletedProcess(
            done.args,
            done.returncode,
            done.stdout.decode("utf-8", "backslashreplace"),
            done.stderr.decode("utf-8", "backslashreplace"),
        )

    def plugin(self, name: str, code: str) -> None:
        folder = self.root / ".nia" / "plugins"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.py").write_text(code)

    def toml(self, text: str) -> None:
        (self.root / ".nia" / "project.toml").write_text(text)


@pytest.fixture
def world(tmp_path: Path) -> Attack:
    return Attack(tmp_path)


def each(cases: dict[str, Any], attack: Callable[[str, Any], None]) -> None:
    """Run independent cases side by side (they wait on subprocesses); fail naming every case that failed."""
    failures: dict[str, str] = {}

    def one(name: str) -> None:
        try:
            attack(name, cases[name])
        except BaseException as exc:
            failures[name] = f"{type(exc).__name__}: {exc}"[:3000]

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(one, cases))
    assert not failures, "\n\n".join(f"[{name}] {why}" for name, why in sorted(failures.items()))


def clean(result: subprocess.CompletedProcess[str]) -> None:
    """The promises every run keeps, whatever it was fed."""
    both = result.stdout + result.stderr
    assert SECRET not in both, f"outside bytes reached the output:\n{both[-2000:]}"
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert KEY not in both, "a credential was printed"


# -- outside bytes: every way a project can point outside, through every door -------------------


def _agents_link(w: Attack, target: str) -> None:
    (w.root / "AGENTS.md").unlink()
    (w.root / "AGENTS.md").symlink_to(target)


def _relative_agents(w: Attack) -> None:
    _agents_link(w, "../outside/secret.md")


def _proc_root(w: Attack) -> None:
    _agents_link(w, f"/proc/self/root{w.secret}")


def _proc_cwd(w: Attack) -> None:
    _agents_link(w, "/proc/self/cwd/../outside/secret.md")


def _chain(w: Attack) -> None:
    (w.root / "docs").mkdir()
    (w.root / "docs" / "hop").symlink_to(w.secret)
    _agents_link(w, "docs/hop")


def _folder_on_the_way(w: Attack) -> None:
    (w.root / "docs").symlink_to(w.outside, target_is_directory=True)
    w.toml('[[project.context]]\ntype = "file"\npath = "docs/secret.md"\n')


def _hard_link(w: Attack) -> None:
    (w.root / "AGENTS.md").unlink()
    os.link(w.secret, w.root / "AGENTS.md")


def _dot_nia_outside(w: Attack) -> None:
    (w.outside / ".nia").mkdir()
    (w.outside / ".nia" / "project.toml").write_text(
        '[[project.context]]\ntype = "file"\npath = "secret.md"\n[project]\nrole_prompt = "x"\n'
    )
    (w.outside / ".nia" / "secret.md").write_text(SECRET)
    os.rmdir(w.root / ".nia")
    (w.root / ".nia").symlink_to(w.outside / ".nia", target_is_directory=True)


def _context_entry(path: str, kind: str = "file") -> Callable[[Attack], None]:
    def setup(w: Attack) -> None:
        w.toml(f'[[project.context]]\ntype = "{kind}"\npath = "{path}"\n')

    return setup


def _context_entry_to_outside(kind: str) -> Callable[[Attack], None]:
    def setup(w: Attack) -> None:
        target = w.secret if kind == "file" else w.outside
        w.toml(f'[[project.context]]\ntype = "{kind}"\npath = "{target}"\n')

    return setup


def _context_dir_with_links(w: Attack) -> None:
    docs = w.root / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("fine\n")
    (docs / "file-link.md").symlink_to(w.secret)
    (docs / "dir-link").symlink_to(w.outside, target_is_directory=True)
    os.link(w.secret, docs / "hard.md")
    w.toml('[[project.context]]\ntype = "directory"\npath = "docs"\n')


def _project_toml_link(w: Attack) -> None:
    (w.outside / "evil.toml").write_text(f'[project]\nrole_prompt = "{SECRET}"\n')
    (w.root / ".nia" / "project.toml").symlink_to(w.outside / "evil.toml")


def _project_toml_hard_link(w: Attack) -> None:
    (w.outside / "evil.toml").write_text(f'[project]\nrole_prompt = "{SECRET}"\n')
    os.link(w.outside / "evil.toml", w.root / ".nia" / "project.toml")


def _git_ref_out(where: str) -> Callable[[Attack], None]:
    """A ref file of the repository that is a link to an outside file git reads as a symbolic ref."""

    def setup(w: Attack) -> None:
        _git_init(w)
        (w.outside / "ref").write_text(f"ref: refs/heads/{SECRET}\n")
        (w.outside / "heads").mkdir()
        (w.outside / "heads" / "master").write_text(f"ref: refs/heads/{SECRET}\n")
        git = w.root / ".git"
        branch = (git / "HEAD").read_text().split("/")[-1].strip()
        if where == "loose":
            _relink(git / "refs" / "heads" / branch, str(w.outside / "ref"))
        elif where == "packed":
            _relink(git / "packed-refs", str(w.outside / "ref"))
        else:
            os.rename(w.outside / "heads" / "master", w.outside / "heads" / branch)
            (git / "refs" / "heads" / branch).unlink()
            os.rmdir(git / "refs" / "heads")
            (git / "refs" / "heads").symlink_to(w.outside / "heads", target_is_directory=True)

    return setup


LEAKS: dict[str, Callable[[Attack], None]] = {
    "git-loose-ref-link-out": _git_ref_out("loose"),
    "git-packed-refs-link-out": _git_ref_out("packed"),
    "git-refs-folder-link-out": _git_ref_out("folder"),
    "agents-absolute-link": lambda w: _agents_link(w, str(w.secret)),
    "agents-relative-link": _relative_agents,
    "agents-proc-self-root": _proc_root,
    "agents-proc-self-cwd": _proc_cwd,
    "agents-link-chain": _chain,
    "context-folder-on-the-way": _folder_on_the_way,
    "agents-hard-link": _hard_link,
    "dot-nia-is-a-link-out": _dot_nia_outside,
    "project-toml-link-out": _project_toml_link,
    "project-toml-hard-link": _project_toml_hard_link,
    "context-dotdot": _context_entry("../outside/secret.md"),
    "context-dotdot-dir": _context_entry("sub/../../outside", "directory"),
    "context-absolute": _context_entry_to_outside("file"),
    "context-absolute-dir": _context_entry_to_outside("directory"),
    "context-proc-environ": _context_entry("/proc/self/environ"),
    "context-proc-fd-0": _context_entry("/proc/self/fd/0"),
    "context-dev-stdin": _context_entry("/dev/stdin"),
    "context-dir-with-links": _context_dir_with_links,
}


def test_no_outside_byte_reaches_any_door(tmp_path: Path, hook_mode: str) -> None:
    def attack(name: str, setup: Callable[[Attack], None]) -> None:
        (tmp_path / name).mkdir()
        w = Attack(tmp_path / name)
        setup(w)
        stdin = w.secret.read_bytes()  # a reader of stdin or /proc/self/fd/0 would leak it
        shown = w.nia("context", "show", "--json", stdin=stdin)
        clean(shown)
        assert "Environment:" in json.loads(shown.stdout)["baseline"], "the rest of the context still renders"
        hook = {"hook_event_name": "SessionStart", "source": "startup", "session_id": "h1", "cwd": str(w.root)}
        answered = w.nia("hook", "codex", stdin=json.dumps(hook).encode())
        clean(answered)
        assert "Environment:" in answered.stdout

    each(LEAKS, attack)


def test_a_workflow_prompt_and_a_session_never_carry_outside_bytes(world: Attack) -> None:
    (world.root / ".nia" / "commands.toml").write_text(
        '[[workflows]]\ntarget = "audit"\ndescription = "d"\n'
        '[[workflows.operations]]\nname = "run"\ndescription = "d"\nuser_input = true\n'
        f'[[workflows.operations.context]]\ntype = "file"\npath = "{world.secret}"\n'
    )
    (world.root / "docs").mkdir()
    os.link(world.secret, world.root / "docs" / "hard.md")
    (world.root / "docs" / "soft.md").symlink_to(world.secret)
    printed = world.nia("audit", "run", "go", "--print-prompt", "--context-dir", "docs")
    clean(printed)
    assert printed.returncode == 2, "an explicit outside entry fails the run, naming it"
    for extra in (["--context-file", "docs/hard.md"], ["--context-file", "docs/soft.md"]):
        clean(world.nia("context", "show", *extra))
    session = world.nia("session", "new").stdout.strip()
    clean(world.nia("session", "send", session, "hi"))


# -- hangs: FIFOs, devices, sockets, endless files ------------------------------------------------


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _socket(path: Path) -> socket.socket:
    path.unlink(missing_ok=True)
    return bind_unix_socket(path)


HANGS: dict[str, Callable[[Attack], Any]] = {
    "agents-fifo": lambda w: _fifo(w.root / "AGENTS.md"),
    "agents-dev-zero": lambda w: _agents_link(w, "/dev/zero"),
    "agents-socket": lambda w: _socket(w.root / "AGENTS.md"),
    "project-toml-fifo": lambda w: _fifo(w.root / ".nia" / "project.toml"),
    "commands-toml-fifo": lambda w: _fifo(w.root / ".nia" / "commands.toml"),
    "context-file-fifo": lambda w: (_fifo(w.root / "pipe.md"), w.toml(_TOML_FILE % "pipe.md")),
    "context-dev-zero": lambda w: w.toml(_TOML_FILE % "/dev/zero"),
    "context-dir-with-fifo": lambda w: (
        (w.root / "docs").mkdir(),
        _fifo(w.root / "docs" / "a.md"),
        w.toml('[[project.context]]\ntype = "directory"\npath = "docs"\n'),
    ),
    "git-head-fifo": lambda w: _fifo(w.root / ".git" / "HEAD"),
    "git-index-fifo": lambda w: (_git_init(w), _fifo(w.root / ".git" / "index")),
    "git-logs-dev-zero": lambda w: (_git_init(w), _relink(w.root / ".git" / "logs" / "HEAD", "/dev/zero")),
    "git-packed-refs-fifo": lambda w: (_git_init(w), _fifo(w.root / ".git" / "packed-refs")),
    "git-merge-head-fifo": lambda w: (_git_init(w), _fifo(w.root / ".git" / "MERGE_HEAD")),
    "git-config-fifo": lambda w: (_git_init(w), _fifo(w.root / ".git" / "config")),
    "git-huge-log": lambda w: (_git_init(w), _huge(w.root / ".git" / "logs" / "HEAD", 64)),
    "git-huge-head": lambda w: (_git_init(w), _huge(w.root / ".git" / "HEAD", 32)),
}
_TOML_FILE = '[[project.context]]\ntype = "file"\npath = "%s"\n'


def _relink(path: Path, target: str) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to(target)


def _huge(path: Path, megabytes: int) -> None:
    with open(path, "wb") as handle:
        handle.truncate(megabytes * 1024 * 1024)  # sparse: free to make, endless to read line by line


def _git_init(w: Attack) -> None:
    os.rmdir(w.root / ".git")
    env = {**w.env, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@b"
    subprocess.run(["git", "init", "-q", str(w.root)], check=True, env=env, timeout=LIMIT)
    subprocess.run(["git", "-C", str(w.root), "add", "AGENTS.md"], check=True, env=env, timeout=LIMIT)
    subprocess.run(["git", "-C", str(w.root), "commit", "-qm", "init"], check=True, env=env, timeout=LIMIT)


def test_no_hang_on_special_or_endless_files(tmp_path: Path, hook_mode: str) -> None:
    def attack(name: str, setup: Callable[[Attack], Any]) -> None:
        (tmp_path / name).mkdir()
        w = Attack(tmp_path / name)
        w.keep = setup(w)  # type: ignore[attr-defined]
        if name.startswith("git"):
            w.toml("[plugins.nia-git]\ntimeout = 1\n")  # its documented budget; a hang would still fail the case
        shown = w.nia("context", "show")
        clean(shown)
        assert shown.returncode == 0 and "Environment:" in shown.stdout, shown.stderr  # the rest still renders
        assert "would be blocked" not in shown.stderr, shown.stderr  # a file never readable is left out, not awaited
        if name.startswith(("agents", "git-index")):
            hook = {"hook_event_name": "UserPromptSubmit", "session_id": "h", "cwd": str(w.root), "prompt": "x"}
            clean(w.nia("hook", "claude-code", stdin=json.dumps(hook).encode()))

    each(HANGS, attack)


# -- hook input from a hostile host or repository ------------------------------------------------


def _hook_transcript(kind: str, w: Attack) -> str:
    if kind == "fifo":
        _fifo(w.base / "t.jsonl")
        return str(w.base / "t.jsonl")
    if kind == "socket":
        w.keep = _socket(w.base / "t.sock")  # type: ignore[attr-defined]
        return str(w.base / "t.sock")
    if kind == "huge":
        _huge(w.base / "t.jsonl", 256)
        return str(w.base / "t.jsonl")
    return {"dev-zero": "/dev/zero", "proc-mem": "/proc/self/mem", "folder": str(w.base), "secret": str(w.secret)}[kind]


TRANSCRIPTS = ["fifo", "dev-zero", "socket", "huge", "proc-mem", "folder", "secret"]


def test_a_hook_transcript_path_never_hangs_nor_leaks(tmp_path: Path, hook_mode: str) -> None:
    def attack(kind: str, host: str) -> None:
        (tmp_path / kind).mkdir()
        w = Attack(tmp_path / kind)
        hook = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "t1",
            "cwd": str(w.root),
            "transcript_path": _hook_transcript(kind, w),
            "prompt": "x",
        }
        result = w.nia("hook", host, stdin=json.dumps(hook).encode())
        clean(result)
        assert result.returncode == 0
        assert "gave up" not in result.stderr, f"the {kind} transcript held the hook until its deadline"
        assert "Environment:" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]

    each({kind: ("claude-code", "codex")[n % 2] for n, kind in enumerate(TRANSCRIPTS)}, attack)


HOOK_INPUTS: dict[str, bytes] = {
    "empty": b"",
    "not-json": b"{nope",
    "array": b"[1, 2]",
    "invalid-utf8": b'{"hook_event_name":"UserPromptSubmit","session_id":"\xff\xfe","cwd":"/"}',
    "deep": b"[" * 200_000 + b"]" * 200_000,
    "huge": b'{"hook_event_name":"UserPromptSubmit","session_id":"s","cwd":"/","prompt":"'
    + b"a" * (40 * 1024 * 1024)
    + b'"}',
    "lone-surrogate-session": b'{"hook_event_name":"UserPromptSubmit","session_id":"\\ud800","cwd":"CWD"}',
    "nul-in-cwd": b'{"hook_event_name":"UserPromptSubmit","session_id":"s","cwd":"CWD\\u0000x"}',
    "newline-session": b'{"hook_event_name":"UserPromptSubmit","session_id":"a\\nb/../../x","cwd":"CWD"}',
    "lone-surrogate-cwd": b'{"hook_event_name":"SessionStart","source":"startup","session_id":"s","cwd":"CWD\\udc80"}',
    "relative-cwd": b'{"hook_event_name":"UserPromptSubmit","session_id":"s","cwd":"../outside"}',
    "cwd-outside": b'{"hook_event_name":"SessionStart","source":"startup","session_id":"s","cwd":"OUTSIDE"}',
    "cwd-is-a-file": b'{"hook_event_name":"UserPromptSubmit","session_id":"s","cwd":"SECRETFILE"}',
    "wrong-types": b'{"hook_event_name":1,"session_id":{"a":1},"cwd":["x"],"transcript_path":7}',
    "huge-session-id": b'{"hook_event_name":"UserPromptSubmit","session_id":"' + b"s" * 100_000 + b'","cwd":"CWD"}',
}


def test_hostile_hook_input_is_one_line_and_exit_0(world: Attack, hook_mode: str) -> None:
    (world.outside / "AGENTS.md").symlink_to(world.secret)  # in case the hook wanders outside

    def attack(case: str, host: str) -> None:
        data = (
            HOOK_INPUTS[case]
            .replace(b"CWD", str(world.root).encode())
            .replace(b"OUTSIDE", str(world.outside).encode())
            .replace(b"SECRETFILE", str(world.secret).encode())
        )
        result = world.nia("hook", host, stdin=data)
        clean(result)
        assert result.returncode == 0, "a hook never fails the host's turn"
        if result.stdout.strip():
            json.loads(result.stdout)
        assert len(result.stderr) < 4096, result.stderr[:4096]

    each({case: ("claude-code", "codex")[n % 2] for n, case in enumerate(HOOK_INPUTS)}, attack)
    logs = world.nia("hook", "log", "--last", "50")
    clean(logs)
    assert logs.returncode == 0


# -- nia mcp over stdio: malformed frames, huge lines, odd resource names ---------------------------


class Mcp:
    def __init__(self, w: Attack) -> None:
        self.process = subprocess.Popen(
            [*NIA, "-p", "no:nia-date", "mcp", "--location", str(w.root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=w.env,
            cwd=w.root,
        )
        self.buffer = b""

    def send(self, frame: dict[str, Any] | bytes) -> None:
        data = frame if isinstance(frame, bytes) else json.dumps(frame).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def reply(self, wanted: int) -> dict[str, Any]:
        """The response with id ``wanted`` (notifications are skipped); a missing reply fails the case."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while True:
            while b"\n" not in self.buffer:
                ready, _, _ = select.select([fd], [], [], LIMIT)
                assert ready, f"nia mcp did not answer request {wanted} within {LIMIT:g}s"
                chunk = os.read(fd, 1 << 20)
                assert chunk, f"nia mcp closed its stdout before answering {wanted}: {self.stderr()}"
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            message = json.loads(line)
            if message.get("id") == wanted:
                return message

    def stderr(self) -> str:
        self.process.kill()
        assert self.process.stderr is not None
        return self.process.stderr.read().decode("utf-8", "replace")

    def close(self) -> tuple[int, str]:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            code = self.process.wait(LIMIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            pytest.fail("nia mcp did not exit after its stdin closed")
        assert self.process.stderr is not None and self.process.stdout is not None
        self.process.stdout.close()
        err = self.process.stderr.read().decode("utf-8", "replace")
        self.process.stderr.close()
        return code, err


def test_mcp_survives_malformed_frames_and_odd_resource_keys(world: Attack) -> None:
    _agents_link(world, str(world.secret))
    (world.root / "docs").mkdir()
    (world.root / "docs" / "AGENTS.md").symlink_to(world.secret)
    server = Mcp(world)
    try:
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert "result" in server.reply(1)
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for junk in (
            b'{"jsonrpc":"2.0","id":"\\udc80","method":"ping","params":{"u":"\\ud800"}}',
            b"{nope",
            b"\xff\xfe\x00garbage",
            b"[]",
            b"42",
            b"[" * 100_000 + b"]" * 100_000,
            b"\x00" * 1000,
        ):
            server.send(junk)
        server.send(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"' + b"x" * (8 * 1024 * 1024) + b'"}}')
        assert "result" in server.reply(2), "a huge but valid line is answered, the server lives on"
        uris = [
            "nia://source/..%2F..%2Foutside%2Fsecret.md",
            "nia://source/../../outside/secret.md",
            f"nia://source/{world.secret}",
            "nia://source/nia/instructions%00",
            "nia://source/nia%2Finstructions",
            "nia://source/" + "k" * 50_000,
            "nia://source/\u202enia/git",
            f"file://{world.secret}",
            "nia://context/../../etc/passwd",
        ]
        for number, uri in enumerate(uris, start=10):
            server.send({"jsonrpc": "2.0", "id": number, "method": "resources/read", "params": {"uri": uri}})
            answer = json.dumps(server.reply(number))
            assert SECRET not in answer
        server.send({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "nia://context"}})
        context = json.dumps(server.reply(3))
        assert SECRET not in context and "Environment:" in context
        for number, cursor in enumerate(["../../x", "\x00", "9" * 5000, "a.b.c", "\u202e.1.2"], start=40):
            server.send(
                {
                    "jsonrpc": "2.0",
                    "id": number,
                    "method": "tools/call",
                    "params": {"name": "context_changes", "arguments": {"cursor": cursor}},
                }
            )
            assert SECRET not in json.dumps(server.reply(number))
        server.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        assert "result" in server.reply(4)
    finally:
        _code, err = server.close()
    assert SECRET not in err and "Traceback" not in err, err[-3000:]


# -- hostile plugins ---------------------------------------------------------------------------------


def _plugin(key: str, top: str, load: str) -> str:
    return (
        "from nia_core import ContextSource, hookimpl\n"
        "import os, sys, threading, time\n"
        f"{top}\n"
        "@hookimpl\n"
        "def nia_context_sources():\n"
        f"    return [ContextSource(key={key!r}, load={load}, baseline=lambda v: 'EVIL ' + str(v))]\n"
    )


LOADERS: dict[str, tuple[str, str]] = {
    "stdin": ("", "lambda: sys.stdin.read()"),
    "fd0": ("", "lambda: os.read(0, 100).decode() or 'v'"),
    "slow": ("", "lambda: time.sleep(120) or 'v'"),
    "surrogate": ("", "lambda: '\\ud800 bad'"),
    "controls": ("", "lambda: 'a\\x00b\\x1b[2Jc'"),
    "bytes": ("", "lambda: b'\\xff\\x00'"),
}
"""Loaders that block on stdin, never end, return what is not text, or raise what is not an Exception."""


BASE_LOADERS: dict[str, tuple[str, str]] = {
    "sysexit": ("", "lambda: (_ for _ in ()).throw(SystemExit(3))"),
    "genexit": ("", "lambda: (_ for _ in ()).throw(GeneratorExit())"),
    "baseexc": ("class Boom(BaseException): pass", "lambda: (_ for _ in ()).throw(Boom('boom'))"),
}


def json_doors(world: Attack) -> dict[str, tuple[list[str], bytes]]:
    """The commands whose stdout is JSON a program reads: arguments and stdin of each."""
    hook = {"hook_event_name": "SessionStart", "source": "startup", "session_id": "p", "cwd": str(world.root)}
    return {
        "context show --json": (["context", "show", "--json"], b""),
        "plugins list --json": (["plugins", "list", "--json"], b""),
        "hook claude-code": (["hook", "claude-code"], json.dumps(hook).encode()),
    }


def test_hostile_loaders_are_isolated_in_every_json_door(world: Attack, hook_mode: str) -> None:
    for name, (top, load) in LOADERS.items():
        world.plugin(f"evil_{name}", _plugin(f"evil/{name}", top, load))
    runs = json_doors(world)

    def attack(name: str, run: tuple[list[str], bytes]) -> None:
        result = world.nia(*run[0], stdin=run[1])
        clean(result)
        if result.stdout or not name.startswith("hook"):  # a first boundary may wait for a failing source
            json.loads(result.stdout)
        for key in ("surrogate", "bytes", "slow"):
            assert f"evil/{key}" in result.stderr or not name.startswith("context"), (key, result.stderr)

    each(runs, attack)


def test_a_base_exception_from_a_plugin_is_one_line_in_every_door(world: Attack, hook_mode: str) -> None:
    world.plugin("imports_badly", "class Boom(BaseException): pass\nraise Boom('at import')\n")
    for name, (top, load) in BASE_LOADERS.items():
        world.plugin(f"evil_{name}", _plugin(f"evil/{name}", top, load))
    runs = json_doors(world)

    def attack(name: str, run: tuple[list[str], bytes]) -> None:
        result = world.nia(*run[0], stdin=run[1])
        clean(result)
        if result.stdout or not name.startswith("hook"):  # a first boundary waits for the failing sources
            json.loads(result.stdout)
        assert "imports_badly" in result.stderr or "imports_badly" in result.stdout

    each(runs, attack)


PRINTING: dict[str, tuple[str, str]] = {
    "at_import": ("print('{\"forged\": 1}')", "lambda: 'v'"),
    "in_load": ("", "lambda: print('[broken') or 'v'"),
    "fd_1": ("os.write(1, b'RAW-FD-1 ')", "lambda: os.write(1, b'RAW-LOAD ') and 'v'"),
    "child": ("import subprocess\nsubprocess.run(['echo', 'CHILD'])", "lambda: 'v'"),
}


def test_a_plugin_that_prints_never_corrupts_json_output(world: Attack, hook_mode: str) -> None:
    for name, (top, load) in PRINTING.items():
        world.plugin(f"noisy_{name}", _plugin(f"noisy/{name}", top, load))
    session = world.nia("session", "new").stdout.strip()
    hook = json.dumps(
        {"hook_event_name": "SessionStart", "source": "startup", "session_id": "n", "cwd": str(world.root)}
    )
    runs = {
        " ".join(args): args
        for args in (
            ["context", "show", "--json"],
            ["plugins", "list", "--json"],
            ["workflows", "list", "--json"],
            ["session", "send", "--json", session, "hi"],
            ["hook", "codex"],
        )
    }

    def attack(_name: str, args: list[str]) -> None:
        result = world.nia(*args, stdin=hook.encode())
        clean(result)
        json.loads(result.stdout)

    each(runs, attack)
    shown = world.nia("session", "show", "--json", session)
    clean(shown)
    json.loads(shown.stdout)


def test_a_plugin_thread_that_never_ends_does_not_keep_nia_running(world: Attack) -> None:
    world.plugin(
        "sticky", _plugin("sticky/x", "threading.Thread(target=time.sleep, args=(600,)).start()", "lambda: 'v'")
    )
    runs = {"show": ["context", "show"], "list": ["plugins", "list"], "new": ["session", "new"]}
    each(runs, lambda _name, args: clean(world.nia(*args, limit=12)))


def test_a_plugin_thread_that_never_ends_does_not_hold_a_hook(world: Attack, hook_mode: str) -> None:
    """The hook door runs without click: it must end by itself, or the agent waits at every prompt."""
    world.plugin(
        "sticky", _plugin("sticky/x", "threading.Thread(target=time.sleep, args=(600,)).start()", "lambda: 'v'")
    )
    hook = {"hook_event_name": "SessionStart", "source": "startup", "session_id": "s", "cwd": str(world.root)}
    for host in ("claude-code", "codex"):
        answered = world.nia("hook", host, stdin=json.dumps(hook).encode(), limit=15, exact=True)
        clean(answered)
        assert "EVIL v" in json.loads(answered.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_plugin_import_blocked_on_stdin_does_not_freeze_nia(world: Attack) -> None:
    world.plugin("waits", "import sys\nsys.stdin.read()\n")
    held, kept = os.pipe()  # stdin held open, as a terminal or an agent's pipe would be
    process = subprocess.Popen(
        [*NIA, "-p", "no:nia-date", "context", "show"],
        stdin=held,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=world.root,
        env={**world.env, "NIA_IMPORT_TIMEOUT": "2"},
    )
    os.close(held)
    try:
        out, err = process.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("a plugin import reading stdin froze nia context show")
    finally:
        os.close(kept)
    assert b"Environment:" in out and b"waits" in err and b"Traceback" not in err, err


# -- credentials: redirects to another origin, userinfo, keys in messages -------------------------------


class Recorder(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.seen: list[dict[str, str]] = []
        self.answer = answer
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.seen.append({**{k.lower(): v for k, v in self.headers.items()}, "_body": body.decode()})
                outer.answer(self)

            do_GET = do_POST = do_PUT = _any

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _ok(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(500)
    handler.send_header("Content-Length", "2")
    handler.end_headers()
    handler.wfile.write(b"{}")


PROVIDERS = {
    "openai-chat": ("OPENAI_BASE_URL", "OPENAI_API_KEY", "/v1", "openai-chat/gpt-4.1"),
    "anthropic-messages": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "", "anthropic-messages/claude-sonnet-4-5"),
}


def _redirect_to(location: Callable[[], str], status: int) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Location", location())
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return answer


SHAPES = ["absolute-302", "scheme-relative-301", "userinfo-trick-307", "localhost-308", "absolute-303", "absolute-307"]
"""Redirects to another origin (another port of 127.0.0.1, or another host name for it), in every disguise."""


@pytest.mark.parametrize("provider", list(PROVIDERS))
@pytest.mark.parametrize("json_mode", [False, True], ids=["streamed", "json"])
def test_a_redirect_never_carries_the_key_to_another_origin(world: Attack, provider: str, json_mode: bool) -> None:
    other = Recorder(_ok)
    current: list[str] = []

    def answer(handler: BaseHTTPRequestHandler) -> None:
        shape = current[-1]
        port, mine = other.server_address[1], first.server_address[1]
        kind, status = shape.rsplit("-", 1)
        target = {
            "absolute": f"http://127.0.0.1:{port}/steal",
            "scheme-relative": f"//127.0.0.1:{port}/steal",
            "userinfo-trick": f"http://127.0.0.1:{mine}@127.0.0.1:{port}/steal",
            "localhost": f"http://localhost:{port}/steal",
        }[kind]
        _redirect_to(lambda: target, int(status))(handler)

    first = Recorder(answer)
    base_variable, key_variable, prefix, model = PROVIDERS[provider]
    try:
        env = {base_variable: first.url + prefix, key_variable: KEY, "NIA_MODEL": model}
        session = world.nia("session", "new", env=env).stdout.strip()
        for number, shape in enumerate(shape for n, shape in enumerate(SHAPES) if n % 2 == json_mode):
            current.append(shape)
            text = [] if number else ["hello there"]  # later sends retry the kept input
            result = world.nia("session", "send", *(["--json"] if json_mode else []), session, *text, env=env)
            clean(result)
            assert result.returncode != 0, shape
            assert "redirect" in result.stderr, (shape, result.stderr)
            assert not other.seen, f"{shape}: the other origin received a request: {other.seen}"
        assert len(first.seen) == len(SHAPES) // 2 and all(KEY in json.dumps(seen) for seen in first.seen)
        pending = world.nia("session", "show", session, env=env)
        assert "hello there" in pending.stdout, "the input is kept for the next send"
    finally:
        first.shutdown()
        other.shutdown()


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_credentials_in_urls_and_keys_are_never_printed(world: Attack, provider: str) -> None:
    base_variable, key_variable, prefix, model = PROVIDERS[provider]
    server = Recorder(_ok)
    port = server.server_address[1]
    cases = {
        "userinfo": {base_variable: f"http://user:{KEY}@127.0.0.1:{port}{prefix}", key_variable: "k"},
        "query": {base_variable: f"http://127.0.0.1:{port}{prefix}?key={KEY}", key_variable: "k"},
        "key-newline": {base_variable: f"http://127.0.0.1:{port}{prefix}", key_variable: f"{KEY}\nInjected: 1"},
        "key-non-latin1": {base_variable: f"http://127.0.0.1:{port}{prefix}", key_variable: f"{KEY}\u2028"},
        "broken-ipv6": {base_variable: f"http://[::1:{KEY}/x", key_variable: "k"},
        "ftp-userinfo": {base_variable: f"ftp://u:{KEY}@127.0.0.1:{port}/", key_variable: "k"},
    }

    def attack(name: str, env: dict[str, str]) -> None:
        env = {**env, "NIA_MODEL": model}
        debug = ["--debug"] if list(cases).index(name) % 2 else []
        session = world.nia("session", "new", "--model", model).stdout.strip()  # the key and URL come at send
        sent = world.nia(*debug, "session", "send", session, "hi", env=env)
        assert KEY not in sent.stdout + sent.stderr, sent.stderr
        if not debug:
            assert "Traceback" not in sent.stderr, sent.stderr

    try:
        each(cases, attack)
    finally:
        server.shutdown()


# -- read-only commands create nothing ------------------------------------------------------------------


def _tree(*folders: Path) -> set[str]:
    found: set[str] = set()
    for folder in folders:
        for path, dirs, files in os.walk(folder):
            found.update(os.path.join(path, name) for name in dirs + files)
    return found


READ_ONLY = [
    ["context", "show"],
    ["context", "show", "--json"],
    ["plugins", "list"],
    ["plugins", "list", "--json"],
    ["workflows", "list"],
    ["session", "list"],
    ["session", "show", "abc"],
    ["session", "stats"],
    ["db", "check"],
    ["hook", "status"],
    ["hook", "log"],
    ["--help"],
]


def test_read_only_commands_create_no_file_or_folder(world: Attack) -> None:
    before = _tree(world.home, world.root)
    for args in READ_ONLY:
        result = world.nia(*args)
        clean(result)
    cache = str(world.home / ".cache")  # the entry-point cache is documented as written (docs/security.md)
    after = {path for path in _tree(world.home, world.root) if not path.startswith(cache)}
    assert after == before, f"read-only commands created {sorted(after - before)}"


# -- nia dev: a project that changes under it ---------------------------------------------------------


def test_nia_dev_in_a_hostile_project_never_leaks(world: Attack) -> None:
    _agents_link(world, str(world.secret))
    _fifo(world.root / "docs.md")
    world.toml(_TOML_FILE % "docs.md")
    process = subprocess.Popen(
        [*NIA, "-p", "no:nia-date", "dev"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=world.root,
        env=world.env,
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], LIMIT)
        assert ready, "nia dev printed nothing"
        (world.root / "AGENTS.md").unlink()
        (world.root / "AGENTS.md").symlink_to("../outside/secret.md")
    finally:
        process.terminate()
        try:
            out, err = process.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail("nia dev did not stop on SIGTERM")
    text = (out + err).decode("utf-8", "replace")
    assert SECRET not in text and "Traceback" not in text, text[-3000:]


def test_the_documented_hard_link_rule_holds() -> None:
    """docs/security.md says what nia does with a hard link; the corpus above checks it."""
    text = (Path(__file__).parents[2] / "docs" / "security.md").read_text()
    assert "hard link" in text
    assert stat.S_ISREG(os.stat(__file__).st_mode)
