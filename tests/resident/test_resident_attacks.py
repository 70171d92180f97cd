"""Attacks on the resident process: what a plugin or a repository does to it never reaches another hook.

A hook answered by a resident process must see what a new hook process sees, whatever the
hooks before it (their plugins, their projects) did to the process they shared.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.resident.world import HOOK, World, kill


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path / "shop")


MEDDLER = """
import os, sys
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from nia_core import ContextSource, hookimpl

LOG = Path(__file__).resolve().parents[2] / "seen.log"

def seen():
    state = {"path": sys.path, "umask": os.umask(0o022), "cwd": os.getcwd(), "argv": sys.argv}
    with open(LOG, "a") as handle:
        handle.write(repr(state) + "\\n")
    print("MEDDLER-WAS-HERE", file=sys.stderr)
    sys.path.insert(0, "/meddled")
    os.umask(0)
    os.chdir("/")
    sys.argv[:] = ["meddled"]
    sys.stderr = open(os.devnull, "w")
    return 1

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="meddler/x", load=seen, baseline=lambda v: "MEDDLED")]
"""


def test_what_a_plugin_changes_in_the_process_does_not_reach_the_next_hook(world):
    """``sys.path``, the umask, the working directory, ``sys.argv`` and ``sys.stderr``, changed by a loader."""
    (world.plugins / "meddler.py").write_text(MEDDLER)
    world.started()
    here = world.run("in", "SessionStart", "startup", env={"NIA_RESIDENT": "0"})
    runs = [world.run(session, "SessionStart", "startup") for session in ("a", "b")]
    assert [e["answered_by"] for e in world.log()][-3:] == ["in-process", "resident", "resident"]
    states = [ast.literal_eval(line) for line in (world.root / "seen.log").read_text().splitlines()]
    assert states[1] == states[0] and states[2] == states[0]
    assert all("MEDDLER-WAS-HERE" in done.stderr for done in [here, *runs])


THREAD_STATE = """
import decimal, sys, threading
from pathlib import Path
from nia_core import ContextSource, hookimpl

LOG = Path(__file__).resolve().parents[2] / "threads.log"

def tracer(frame, event, arg):
    with open(LOG.with_name("traced.log"), "a") as handle:
        handle.write(frame.f_code.co_name + "\\n")
    return tracer

def load():
    thread = threading.current_thread()
    state = (decimal.getcontext().prec, getattr(sys.gettrace(), "__name__", None), thread.name)
    with open(LOG, "a") as handle:
        handle.write(repr(state) + "\\n")
    decimal.getcontext().prec = 3  # a context variable
    sys.settrace(tracer)  # this thread's alone
    thread.name = "kept-by-a-plugin"
    return 1

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="threadstate/x", load=load, baseline=lambda v: "THREAD-STATE")]
"""


def test_what_a_plugin_leaves_on_its_worker_thread_does_not_reach_the_next_hook(world):
    """Worker threads are kept between hooks: a loader's context variables (``decimal``'s context), its thread's
    trace function (which would see the next hook's calls and their values) and its name must not stay on it."""
    (world.plugins / "threadstate.py").write_text(THREAD_STATE)
    world.started()
    here = world.run("in", "SessionStart", "startup", env={"NIA_RESIDENT": "0"})
    runs = [world.run(session, "SessionStart", "startup") for session in ("a", "b", "c")]
    assert all("THREAD-STATE" in (world.text(done) or "") for done in [here, *runs])
    assert [e["answered_by"] for e in world.log()][-4:] == ["in-process", "resident", "resident", "resident"]
    states = (world.root / "threads.log").read_text().splitlines()
    assert states[-4:] == [states[-4]] * 4, states


TRAVELLER = """
import os, time
from pathlib import Path
from nia_core import ContextSource, hookimpl

LOG = Path(__file__).resolve().parents[2] / "zones.log"

def zone():
    with open(LOG, "a") as handle:
        handle.write(time.strftime("%Z %z") + "\\n")
    os.environ["TZ"] = "Pacific/Kiritimati"  # +14: no test machine is there
    time.tzset()
    return 1

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="traveller/x", load=zone, baseline=lambda v: "TRAVELLED")]
"""


def test_a_time_zone_a_plugin_set_does_not_reach_the_next_hook(world):
    """The C library keeps the zone of the last ``tzset``: each hook's starts from its own environment's, as a new
    process's would (the same call also sees a changed ``/etc/localtime``)."""
    (world.plugins / "traveller.py").write_text(TRAVELLER)
    world.started()
    here = world.run("in", "SessionStart", "startup", env={"NIA_RESIDENT": "0"})
    runs = [world.run(session, "SessionStart", "startup") for session in ("a", "b")]
    assert "TRAVELLED" in (world.text(here) or "") and all("TRAVELLED" in (world.text(r) or "") for r in runs)
    assert [e["answered_by"] for e in world.log()][-3:] == ["in-process", "resident", "resident"]
    zones = (world.root / "zones.log").read_text().splitlines()
    assert zones[-3:] == [zones[-3]] * 3 and "+1400" not in zones[-3]


CHATTY = """
import os, sys
from nia_core import ContextSource, hookimpl

def load():
    chunk = "chatter " * 8192 + "\\n"
    for _ in range(48):  # 3 MiB, to the streams and straight to the descriptors
        sys.stderr.write(chunk)
        os.write(1, chunk.encode())
    return 1

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="chatty/x", load=load, baseline=lambda v: "CHATTY-DONE")]
"""


@pytest.mark.parametrize("resident", ["1", "0"])
def test_a_plugin_printing_megabytes_passes_on_its_start_and_end_and_the_answer_is_whole(world, resident):
    (world.plugins / "chatty.py").write_text(CHATTY)
    if resident == "1":
        world.started()
    done = world.run("s", "SessionStart", "startup", env={"NIA_RESIDENT": resident})
    assert "CHATTY-DONE" in (world.text(done) or "")
    assert world.log()[-1]["answered_by"] == ("resident" if resident == "1" else "in-process")
    assert len(done.stderr.encode()) < 1.1 * 2**20 and "bytes of output left out here]" in done.stderr


def test_a_hook_gets_a_resident_of_its_own_umask_whatever_a_plugin_set_before_it_started_one(world):
    """The umask decides the mode of every file a hook creates: it is part of the scope, and the resident a hook
    starts after answering in-process has the hook's umask, not the one a plugin left."""
    (world.plugins / "meddler.py").write_text(MEDDLER)
    world.run("a", "SessionStart", "startup", umask=0o022)  # in-process: the plugin leaves umask 0, then it starts one
    world.ready()
    world.run("b", "SessionStart", "startup", umask=0o022)
    world.run("c", "SessionStart", "startup", umask=0o077)
    world.ready(more_than=1)
    world.run("d", "SessionStart", "startup", umask=0o077)
    answered = [(e["host_session"], e["answered_by"]) for e in world.log()]
    assert answered == [("a", "in-process"), ("b", "resident"), ("c", "in-process"), ("d", "resident")]
    states = [ast.literal_eval(line) for line in (world.root / "seen.log").read_text().splitlines()]
    assert [state["umask"] for state in states] == [0o022, 0o022, 0o077, 0o077]


ACME = """
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    def load():
        from . import which  # a plugin package's own module, imported when it is first needed
        return which.NAME
    return [ContextSource(key="acme/which", load=load, baseline=lambda v: "WHICH: " + v)]
"""


def test_projects_sharing_a_resident_never_run_each_others_local_plugins(tmp_path):
    """Two projects whose local plugins have one name, hooked from the folder above both (one scope, one resident).

    Each hook must run its own project's plugin, as a hook in its own process does, also a submodule the plugin
    imports only when its loader runs.
    """
    for name in ("alpha", "beta"):
        world = World(tmp_path / name)
        (world.plugins / "acme.py").unlink()
        (world.plugins / "acme").mkdir()
        (world.plugins / "acme" / "__init__.py").write_text(ACME)
        (world.plugins / "acme" / "which.py").write_text(f"NAME = {name!r}\n")
    world.root = tmp_path  # the hooks' working directory; their payloads name each project

    def which(project: str, session: str) -> str | None:
        payload = {"session_id": session, "cwd": str(tmp_path / project), "hook_event_name": "SessionStart"}
        done = subprocess.run(
            [*HOOK, "claude-code"], input=json.dumps({**payload, "source": "startup"}),
            capture_output=True, text=True, env=world.env, cwd=tmp_path, timeout=120,
        )  # fmt: skip
        text = world.text(done) or ""
        return next((line for line in text.splitlines() if line.startswith("WHICH")), None)

    assert which("alpha", "a1") == "WHICH: alpha"
    world.ready()
    assert [which("alpha", "a2"), which("beta", "b1"), which("alpha", "a3"), which("beta", "b2")] == [
        "WHICH: alpha",
        "WHICH: beta",
        "WHICH: alpha",
        "WHICH: beta",
    ]
    assert [e["answered_by"] for e in world.log()] == ["in-process"] + ["resident"] * 4


def test_a_resident_answering_for_many_projects_lists_the_latest_hundred(tmp_path):
    """Its listing stays small enough for ``nia hook status`` and ``nia hook stop`` to read, however many."""
    world = World(tmp_path / "p0")
    world.root = tmp_path  # the hooks' working directory, above every project
    projects = [tmp_path / f"p{i}" for i in range(101)]
    for project in projects[1:]:
        (project / ".git").mkdir(parents=True)

    def hook(project: Path) -> None:
        payload = {"session_id": "s", "cwd": str(project), "hook_event_name": "PreToolUse"}
        done = subprocess.run(
            [*HOOK, "claude-code"], input=json.dumps(payload),
            capture_output=True, text=True, env=world.env, cwd=tmp_path, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    hook(projects[0])
    world.ready()
    for project in projects:
        hook(project)
    assert world.residents()[0]["projects"] == [str(p) for p in projects[1:]]


PLANTED = """
import fcntl, json, os, socket, sys, time
path, replies = sys.argv[1], json.loads(sys.argv[2])
lock = os.open(path[: -len(".sock")] + ".lock", os.O_RDWR | os.O_CREAT)
fcntl.flock(lock, fcntl.LOCK_EX)  # no resident of this scope starts meanwhile
if os.path.exists(path):
    os.unlink(path)
server = socket.socket(socket.AF_UNIX)
server.bind(path)
server.listen(8)
print("ready", flush=True)
for reply in replies:
    conn, _ = server.accept()
    conn.recv(1 << 20)
    if reply == "trickle":  # a byte at a time, each well within the client's wait, never the end
        while True:
            conn.sendall(b" ")
            time.sleep(0.2)
    conn.sendall(reply.encode())
    conn.close()
"""


def test_a_resident_answering_garbage_or_never_finishing_is_answered_around_within_the_deadline(world):
    """Whatever the process at the socket sends (it runs as this user), the hook answers in-process in time."""
    world.env["NIA_HOOK_DEADLINE"] = "4"  # the resident gets 2 s
    world.env["PYTHONIOENCODING"] = "utf-8"  # strict: a lone surrogate cannot be printed
    resident = world.started()
    path = next(Path(world.env["XDG_RUNTIME_DIR"], "nia").glob("*.sock"))
    kill(resident["pid"])
    world.gone(resident["pid"])
    replies = [
        "[" * 100_000,  # nested past the parser's recursion limit
        json.dumps({"stdout": "\udcff", "stderr": ""}),  # text no stream can write
        "trickle",
    ]
    planted = subprocess.Popen(
        [sys.executable, "-c", PLANTED, str(path), json.dumps(replies)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert planted.stdout.readline() == "ready\n"
        for number in range(len(replies)):
            started = time.monotonic()
            done = world.run(f"s{number}", "SessionStart", "startup", timeout=30)
            assert time.monotonic() - started < 4 + 10  # the deadline, plus a loaded machine's start-up
            assert "ACME-RULE: one" in world.text(done), done.stderr
            assert world.log()[-1]["answered_by"] == "in-process"
    finally:
        planted.kill()
        planted.wait()


HELPED = """
import sys
from nia_core import ContextSource, hookimpl

def load():
    sys.path.insert(0, {tools!r})
    import helper  # a module of the project's own, not a plugin
    return helper.RULE

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="helped/x", load=load, baseline="HELPED {{}}".format, update=lambda o, n: "HELPED " + n)]
"""


def test_a_module_a_plugin_imports_from_the_project_is_imported_afresh_once_edited(world):
    tools = world.root / "tools"
    tools.mkdir()
    (tools / "helper.py").write_text("RULE = 'one'\n")
    (world.plugins / "helped.py").write_text(HELPED.format(tools=str(tools)))
    world.started()
    assert "HELPED one" in world.text(world.run("s", "SessionStart", "startup"))
    assert world.text(world.run("s", "UserPromptSubmit")) is None
    assert world.log()[-1]["answered_by"] == "resident"
    (tools / "helper.py").write_text("RULE = 'two'\n")
    assert world.text(world.run("s", "UserPromptSubmit")) == "HELPED two"
    assert "code a plugin imported changed" in world.log()[-1]["fallback"]


def test_a_socket_folder_past_the_length_a_unix_socket_address_takes_still_gets_a_resident(world, tmp_path):
    """``AF_UNIX`` addresses hold 107 bytes; a long ``XDG_RUNTIME_DIR`` (or ``TMPDIR``) must not make every hook
    answer in-process and start a resident that can never listen."""
    runtime = tmp_path / ("r" * 60) / ("u" * 40)
    runtime.mkdir(parents=True, mode=0o700)
    world.env["XDG_RUNTIME_DIR"] = str(runtime)
    world.run("s", "SessionStart", "startup")
    resident = world.ready()
    world.run("s", "UserPromptSubmit")
    assert [e["answered_by"] for e in world.log()] == ["in-process", "resident"]
    done = world.nia("hook", "stop")
    assert done.stdout == f"pid {resident['pid']}: ended\n"


FORKER = """
import os, sys, time
from pathlib import Path
from nia_core import ContextSource, hookimpl

def load():
    if "nia_core.resident.server" in sys.modules:  # a helper process that outlives the hook (in the resident only:
        pid = os.fork()                            # a hook's own process would keep the agent's pipes open)
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        with open(Path(__file__).resolve().parents[2] / "children", "a") as handle:
            handle.write(f"{pid}\\n")
    return 1

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="forker/x", load=load, baseline=lambda v: "FORKED")]
"""


def test_a_process_a_plugin_forks_holds_neither_the_conversation_nor_the_resident(world):
    """The child gets a copy of every descriptor: the conversation's lock (the next hook would wait for it until
    its deadline) and the resident's lock and socket (no resident of the scope could start after this one)."""
    world.env["NIA_HOOK_DEADLINE"] = "10"
    (world.plugins / "forker.py").write_text(FORKER)
    resident = world.started()
    try:
        assert "FORKED" in world.text(world.run("s", "SessionStart", "startup"))
        world.run("s", "UserPromptSubmit")
        assert [e["answered_by"] for e in world.log()] == ["in-process", "resident", "resident"]
        kill(resident["pid"])
        world.gone(resident["pid"])
        world.run("s", "UserPromptSubmit")
        assert world.ready()["pid"] != resident["pid"]
    finally:
        for pid in (world.root / "children").read_text().split():
            kill(int(pid))


def test_hook_status_names_a_hostile_project_folder_on_one_line_with_nothing_a_terminal_obeys(tmp_path):
    """A folder name is a repository's choice: a newline would forge a line of the listing, an escape sequence
    or an undecodable byte (a C1 control on an 8-bit terminal) would reach the terminal."""
    name = os.fsdecode(b"shop\n  pid 1  up 0m01s  1.0 MiB  /forged\x1b]0;TITLE\x07\x9b2J")
    world = World(tmp_path / name)
    world.started()
    for args in (("hook", "status"), ("hook", "residents")):
        done = subprocess.run(
            [*HOOK[:-1], *args], capture_output=True, env=world.env, cwd=world.root, timeout=120, check=True
        )
        text = done.stdout.decode("utf-8")  # strict: no undecodable byte was written
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", text), text
        listed = text.split("resident processes:\n", 1)[1].splitlines()
        assert len(listed) == 1 and "/forged" in listed[0], text


def test_a_pythonpath_naming_the_project_keeps_one_resident_while_files_come_and_go(world):
    """``PYTHONPATH=$PWD`` is a common set-up: each file an agent creates moves the folder's modification time, which
    must not make a new scope (a new resident, never used, at each such prompt). A module imported from there is
    still imported afresh once edited."""
    world.env["PYTHONPATH"] = str(world.root)
    (world.root / "ruleset.py").write_text("RULE = 'one'\n")
    (world.plugins / "helped.py").write_text(HELPED.format(tools=str(world.root)).replace("helper", "ruleset"))
    world.started()
    world.run("s", "SessionStart", "startup")
    for number in range(2):
        (world.root / f"new-{number}.txt").write_text("made by the agent\n")
        world.run("s", "UserPromptSubmit")
    assert [e["answered_by"] for e in world.log()] == ["in-process", "resident", "resident", "resident"]
    assert len(world.residents()) == 1
    (world.root / "ruleset.py").write_text("RULE = 'two'\n")
    assert world.text(world.run("s", "UserPromptSubmit")) == "HELPED two"


@pytest.mark.parametrize("resident", ["1", "0"])
def test_an_input_that_never_ends_does_not_hold_the_hook_past_its_deadline(world, resident):
    """An agent that writes the hook's input and keeps the pipe open: the hook gives up at its deadline, as a hook
    whose plugin hangs does, instead of waiting for the end of its input for good."""
    hook = subprocess.Popen(
        [*HOOK, "claude-code"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**world.env, "NIA_HOOK_DEADLINE": "2", "NIA_RESIDENT": resident}, cwd=world.root,
    )  # fmt: skip
    try:
        hook.stdin.write(world.payload("s", "UserPromptSubmit").encode())
        hook.stdin.flush()
        assert hook.wait(timeout=30) == 0
        assert hook.stdout.read() == b""
        assert b"hook gave up after 2s; nothing was added this time" in hook.stderr.read()
    finally:
        hook.kill()
        hook.wait()
        for stream in (hook.stdin, hook.stdout, hook.stderr):
            stream.close()
    assert [e["outcome"] for e in world.log()] == ["timed-out"]


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_a_hook_deadline_that_is_no_length_of_time_is_the_default(world, value):
    done = world.run("s", "SessionStart", "startup", env={"NIA_HOOK_DEADLINE": value})
    assert "ACME-RULE: one" in world.text(done), done.stderr


SLOW_START = """
import sys, time
if len(sys.argv) > 2 and sys.argv[1].startswith("["):  # the resident's interpreter (its argument: sys.path)
    time.sleep(8)  # a loaded machine
"""


def test_a_resident_slow_to_start_does_not_hold_the_hook_that_started_it_past_its_deadline(world, tmp_path):
    """The hook that starts a resident waits for it to be listed, but not past the hook's deadline."""
    site = tmp_path / "slow"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_START)
    world.env.update(PYTHONPATH=str(site), NIA_HOOK_DEADLINE="3")
    started = time.monotonic()
    assert "ACME-RULE: one" in world.text(world.run("s", "SessionStart", "startup"))
    assert time.monotonic() - started < 7  # the deadline, plus the hook's own exit on a loaded machine
    world.ready()  # started all the same (and stopped when the test ends)


def test_hook_log_names_a_hostile_project_folder_on_one_line(tmp_path):
    """The working directory and the reason no resident answered (here: the project switched them off) name the
    project's folder, a repository's choice: a newline in it must not forge a line of ``nia hook log``."""
    world = World(tmp_path / "shop\n2026-12-02T00:00:00.000  UserPromptSubmit  forged")
    (world.root / ".nia" / "project.toml").write_text("[hooks]\nresident = false\n")
    world.started()
    world.run("s", "SessionStart", "startup")
    done = world.nia("hook", "log")
    assert "resident processes are off for" in done.stdout and "shop\\x0a2026" in done.stdout, done.stdout
    assert not any(line.startswith("2026-12-02T00:00:00.000") for line in done.stdout.splitlines()), done.stdout


def test_a_process_a_plugin_forks_in_a_hooks_own_process_does_not_keep_the_agent_waiting(world):
    """Answered in-process (no resident): the child gets a copy of the agent's pipes, and the agent reads them to
    their end, so a helper that outlives the hook kept the agent waiting as long as it lived."""
    (world.plugins / "forker.py").write_text(FORKER.replace('"nia_core.resident.server" in sys.modules', "True"))
    started = time.monotonic()
    try:
        done = world.run("s", "SessionStart", "startup", env={"NIA_RESIDENT": "0"})
        assert "FORKED" in world.text(done)
        assert time.monotonic() - started < 30  # the child lives 60 s
    finally:
        for pid in (world.root / "children").read_text().split():
            kill(int(pid))


STUCK = """
import threading
from nia_core import ContextSource, hookimpl

def load():
    threading.Event().wait()  # never returns: its worker can never be handed another call

async def load_async():
    threading.Event().wait()  # blocks its event loop's thread: never returns either

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="stuck/x", load=LOAD, baseline="STUCK {}".format, timeout=0.1)]
"""


@pytest.mark.parametrize("load", ["load", "load_async"])
def test_a_loader_that_never_returns_does_not_pile_up_threads_in_a_resident(world, load):
    """Each hook gives up on the loader at its timeout and leaves its worker in the call: a resident ends once more
    than GIVEN_UP of them are held, rather than gaining a thread at every hook for as long as it lives."""
    from nia_core.resident.server import GIVEN_UP

    (world.plugins / "stuck.py").write_text(STUCK.replace("LOAD", load))
    first = world.started()
    for number in range(GIVEN_UP + 1):
        done = world.run(f"s{number}", "SessionStart", "startup")
        assert "'stuck/x': loader timed out" in done.stderr
    assert "resident" in [e["answered_by"] for e in world.log()]
    world.gone(first["pid"])
    tasks = [int(r["pid"]) for r in world.residents()]
    assert all(len(os.listdir(f"/proc/{pid}/task")) <= GIVEN_UP + 16 for pid in tasks if os.path.isdir(f"/proc/{pid}"))


SHOUTER = """
import os, sys
from nia_core import ContextSource, hookimpl

def load():
    print("PRINTED \\x1b]0;PWNED\\x07", file=sys.stderr)
    os.write(2, b"RAW \\x1b]52;c;Y2xpcGJvYXJk\\x07 \\x9b2J \\xc2\\x9b2J\\n")  # clipboard, 8-bit and C1 CSI
    return 1

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="shouter/x", load=load, baseline=lambda v: "SHOUTED")]
"""


@pytest.mark.parametrize("resident", ["1", "0"])
def test_what_plugins_write_to_a_hooks_stderr_is_shown_not_obeyed_on_a_terminal(world, resident):
    """A person running ``nia hook`` by hand: what the plugins wrote to fds 1 and 2 during the boundary is passed
    on at its end, and the terminal must not obey it (a pipe, as an agent reads it, keeps every byte)."""
    import pty

    (world.plugins / "shouter.py").write_text(SHOUTER)
    if resident == "1":
        world.started()
    master, slave = pty.openpty()
    try:
        done = subprocess.run(
            [*HOOK, "claude-code"],
            input=world.payload("s", "SessionStart", "startup").encode(),
            stdout=subprocess.PIPE, stderr=slave, env={**world.env, "NIA_RESIDENT": resident},
            cwd=world.root, timeout=120,
        )  # fmt: skip
        os.close(slave)
        said = b""
        while chunk := _read_or_end(master):
            said += chunk
    finally:
        os.close(master)
    assert b"SHOUTED" in done.stdout
    assert world.log()[-1]["answered_by"] == ("resident" if resident == "1" else "in-process")
    assert b"PRINTED \\x1b]0;PWNED\\x07" in said and b"RAW \\x1b]52;c;Y2xpcGJvYXJk\\x07" in said, said
    assert b"\x1b" not in said and b"\x9b" not in said and b"\x07" not in said, said


def _read_or_end(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # every writer closed the terminal
        return b""


LEFT_WRITING = """
import subprocess, sys
from pathlib import Path
from nia_core import ContextSource, hookimpl

CHILD = '''
import os, sys, time
from pathlib import Path
root = Path(sys.argv[1])
while not (root / "go").exists():  # the hook has ended
    time.sleep(0.02)
written, outcome = 0, "all written"
try:
    for _ in range(64):
        written += os.write(1, b"x" * (1 << 20))
except OSError as exc:
    outcome = type(exc).__name__
(root / "child.txt").write_text(f"{written} {outcome}")
'''

def load():
    root = Path(__file__).resolve().parents[2]
    if (root / "spawn").exists():  # once, in the hook under test
        (root / "spawn").unlink()
        subprocess.Popen([sys.executable, "-c", CHILD, str(root)])  # inherits the hook's stdout and stderr
    return 1

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="left/x", load=load, baseline=lambda v: "LEFT")]
"""


@pytest.mark.parametrize("resident", ["1", "0"])
def test_a_process_a_plugin_leaves_writing_after_the_hook_fills_no_memory(world, resident):
    """A process a plugin starts inherits the file the boundary's output is captured in; once the hook ended,
    what it writes there would be kept in memory nobody reads, without bound (2 GB in 4 s): its writes fail."""
    (world.plugins / "left.py").write_text(LEFT_WRITING)
    if resident == "1":
        world.started()
    (world.root / "spawn").touch()
    done = world.run("s", "SessionStart", "startup", env={"NIA_RESIDENT": resident})
    assert "LEFT" in (world.text(done) or ""), done.stderr
    assert world.log()[-1]["answered_by"] == ("resident" if resident == "1" else "in-process")
    (world.root / "go").touch()
    deadline = time.monotonic() + 60
    while not (world.root / "child.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (world.root / "child.txt").read_text() == "0 PermissionError"


def test_what_a_resident_admitted_is_in_the_database_file_alone_and_survives_its_companions_removed(world, tmp_path):
    """The resident keeps its connection open between hooks: what a hook admitted must not live only in the
    ``-wal`` (a copy of the database file, a backup, would miss it), and a ``-wal``/``-shm`` removed meanwhile
    must lose neither what it admitted nor what another process admits next."""
    db = tmp_path / "nia.db"
    world.env["NIA_DB"] = str(db)
    world.started()
    world.run("a", "SessionStart", "startup")
    assert world.log()[-1]["answered_by"] == "resident"
    backup = tmp_path / "backup.db"
    backup.write_bytes(db.read_bytes())  # the file alone, as a backup copies it
    listed = world.nia("session", "list", "--json", env={"NIA_DB": str(backup)})
    assert len(json.loads(listed.stdout)) == 1, listed.stdout + listed.stderr
    for companion in ("-wal", "-shm"):
        Path(f"{db}{companion}").unlink(missing_ok=True)
    world.run("b", "SessionStart", "startup", env={"NIA_RESIDENT": "0"})
    first = world.ready()
    world.run("a", "UserPromptSubmit")  # its connection cannot be used, nor closed: that resident ends
    assert "-wal or -shm was replaced" in world.log()[-1]["fallback"]
    world.gone(first["pid"])
    world.ready()
    world.run("a", "UserPromptSubmit")
    assert world.log()[-1]["answered_by"] == "resident"
    assert world.nia("hook", "stop").returncode == 0
    listed = world.nia("session", "list", "--json")
    assert len(json.loads(listed.stdout)) == 2, listed.stdout + listed.stderr


LEAKY = """
import os
from nia_core import ContextSource, hookimpl

def load():
    for _ in range(60):
        os.open(os.devnull, os.O_RDONLY)  # never closed: a sloppy plugin, not a hostile one
    return 1

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="leaky/x", load=load, baseline=lambda v: "LEAKY")]
"""


def test_a_plugin_leaving_files_open_at_every_hook_does_not_use_up_a_residents_descriptors(world):
    """With 256 files allowed, the resident (started by a hook, with its limits) ran out after a few hooks and every
    later hook's loaders failed with EMFILE, where a hook in its own process starts with no file open."""
    import resource

    (world.plugins / "leaky.py").write_text(LEAKY)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    def hook(session: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*HOOK, "claude-code"], input=world.payload(session, "SessionStart", "startup"),
            capture_output=True, text=True, env=world.env, cwd=world.root, timeout=120, preexec_fn=limited,
        )  # fmt: skip

    hook("warm-up")
    world.ready()
    runs = [hook(f"s{number}") for number in range(6)]
    assert all("LEAKY" in (world.text(done) or "") for done in runs), [done.stderr for done in runs]
    assert "resident" in [e["answered_by"] for e in world.log()]


SPINNER = """
import threading
from nia_core import ContextSource, hookimpl

def load():
    for _ in range(100):
        threading.Thread(target=threading.Event().wait, daemon=True).start()  # never ends
    return 1

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="spinner/x", load=load, baseline=lambda v: "SPUN")]
"""


def test_a_plugin_starting_threads_at_every_hook_does_not_pile_them_up_in_a_resident(world):
    """Each ends with a hook's own process; in a resident they added up for as long as it lived."""
    from nia_core.resident.server import THREADS

    (world.plugins / "spinner.py").write_text(SPINNER)
    first = world.started()
    for number in range(THREADS // 100 + 1):
        assert "SPUN" in (world.text(world.run(f"s{number}", "SessionStart", "startup")) or "")
    assert "resident" in [e["answered_by"] for e in world.log()]
    world.gone(first["pid"])


HOARDER = """
import sys
from nia_core import ContextSource, hookimpl

def load():
    kept = sys.__dict__.setdefault("hoarded", [])  # lives as long as the process: a cache without a bound
    kept.append(b"x" * (32 << 20))
    return len(kept)

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="hoarder/x", load=load, baseline=lambda v: "HOARDED")]
"""


def test_a_plugin_keeping_memory_at_every_hook_does_not_grow_a_resident_without_end(world):
    """A hook's own process frees what a plugin kept at its end; a resident kept it for as long as it lived."""
    from nia_core.resident.server import MEMORY_GROWTH

    (world.plugins / "hoarder.py").write_text(HOARDER)
    first = world.started()
    for number in range(MEMORY_GROWTH // (32 << 20) + 2):
        assert "HOARDED" in (world.text(world.run(f"s{number}", "SessionStart", "startup")) or "")
    assert "resident" in [e["answered_by"] for e in world.log()]
    world.gone(first["pid"])


MODEL = """
from nia_core import ContextSource, hookimpl

MODEL = []

def load():
    if not MODEL:  # loaded once, at this project's first boundary, and kept for the process's life: a cache
        MODEL.append(b"x" * (288 << 20))
    return "ready"

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="model/x", load=load, baseline=lambda v: f"MODEL-{v}")]
"""


def test_a_project_whose_first_hook_needs_much_memory_does_not_restart_a_shared_resident_at_every_visit(world):
    """What a project's first hook needs is in the figure, also when another project's hook started the resident.

    An agent's hooks share one resident across the projects the agent works in (the scope holds the hook
    process's folder, not the project): one project's hooks, then a neighbour whose plugin loads a large model
    once. Measured from the first project's first hook alone, the neighbour's first hook ended the resident,
    and the next visit after two of the first project's hooks ended the next one: a cold hook and a resident's
    start at every visit, worse than answering in-process.
    """
    sub = world.root / "model"
    (sub / ".nia" / "plugins").mkdir(parents=True)
    (sub / ".nia" / "plugins" / "model.py").write_text(MODEL)

    def hook(session: str, cwd: Path) -> str | None:
        data = {"session_id": session, "cwd": str(cwd), "hook_event_name": "UserPromptSubmit", "prompt": "go on"}
        done = subprocess.run(
            [*HOOK, "claude-code"],
            input=json.dumps(data),
            capture_output=True,
            text=True,
            env=world.env,
            cwd=world.root,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return world.text(done)

    first = world.started()
    for visit in range(3):
        assert "ACME-RULE: one" in (hook(f"shop{visit}", world.root) or "")
        world.ready()  # an agent's hooks are seconds apart: a resident the hook started answers the next
        assert "ACME-RULE: one" in (hook(f"shop{visit}b", world.root) or "")
        assert "MODEL-ready" in (hook(f"model{visit}", sub) or "")
    assert [e["answered_by"] for e in world.log()] == ["in-process"] + ["resident"] * 9
    assert first["pid"] in [r["pid"] for r in world.residents()]


WANDERER = """
import os
from pathlib import Path
from nia_core import ContextSource, hookimpl

def wander():
    os.chdir(Path(__file__).resolve().parents[3] / "other")  # left there: the next hook's folder must not be
    return 1

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="wanderer/x", load=wander, baseline=lambda v: "WANDERED")]
"""


def test_a_relative_hook_folder_is_the_hooks_own_whatever_folder_a_plugin_left_the_resident_in(world):
    """The hook's folder is found from the hook process's working directory, as a hook's own process finds it.

    A resident restores its working directory before each hook's boundary; it found the hook's project before
    that, in the folder the previous hook's plugin left it in, and answered for that folder's project.
    """
    other = world.root.parent / "other"
    (other / ".nia" / "plugins").mkdir(parents=True)
    (other / ".nia" / "plugins" / "other.py").write_text(
        "from nia_core import ContextSource, hookimpl\n\n"
        "@hookimpl\n"
        "def nia_context_sources(location):\n"
        "    return [ContextSource(key='other/x', load=lambda: 1, baseline=lambda v: 'OTHER-PROJECT')]\n"
    )
    (world.plugins / "wanderer.py").write_text(WANDERER)

    def relative(session: str, env: dict[str, str] | None = None) -> str:
        data = {"session_id": session, "cwd": ".", "hook_event_name": "SessionStart", "source": "startup"}
        done = subprocess.run(
            [*HOOK, "claude-code"],
            input=json.dumps(data),
            capture_output=True,
            text=True,
            env={**world.env, **(env or {})},
            cwd=world.root,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return world.text(done) or ""

    world.started()
    here = relative("in", {"NIA_RESIDENT": "0"})
    assert "WANDERED" in (world.text(world.run("a", "SessionStart", "startup")) or "")  # the resident is left there
    there = relative("b")
    assert [e["answered_by"] for e in world.log()][-3:] == ["in-process", "resident", "resident"]
    assert "ACME-RULE: one" in here and "OTHER-PROJECT" not in here
    assert there == here


def test_a_plugin_edited_in_a_resident_does_not_hold_what_its_old_version_kept_beside_the_new(world):
    """A plugin whose files changed is imported afresh: what its old module kept (a model) is freed first.

    A module is a reference cycle (its functions hold its globals), so dropping it frees nothing until the cyclic
    garbage collector happens to run: the new version loaded its model beside the old one, the peak grew by a
    whole model, and the resident ended after every edit of a plugin keeping one.
    """
    (world.plugins / "model.py").write_text(MODEL)
    first = world.started()
    assert "MODEL-ready" in (world.text(world.run("s0", "SessionStart", "startup")) or "")
    for edit in range(2):
        (world.plugins / "model.py").write_text(f"{MODEL}\n# edit {edit}\n")
        assert "MODEL-ready" in (world.text(world.run(f"e{edit}", "SessionStart", "startup")) or "")
        assert "MODEL-ready" in (world.text(world.run(f"f{edit}", "SessionStart", "startup")) or "")
    assert [e["answered_by"] for e in world.log()] == ["in-process"] + ["resident"] * 5
    assert first["pid"] in [r["pid"] for r in world.residents()]


SLOW_INDEX = """
import time
from nia_core import ContextSource, hookimpl

INDEX = []

def load():
    if not INDEX:  # built once, slower than a prompt should wait (hence refresh), and kept: a search index
        time.sleep(1.5)
        INDEX.append(b"x" * (288 << 20))
    return "ready"

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="index/x", load=load, baseline=lambda v: f"INDEX-{v}", timeout=0.5, refresh=600)]
"""


def test_a_slow_first_load_of_much_memory_does_not_restart_a_resident_at_every_other_hook(world):
    """What a project's first hook began and what it went on to need after the hook ended is in the figure too.

    A ``refresh`` source slower than its timeout goes on loading after the first hook is answered. Measured
    right after that hook, the resident ended at the next one for what the load had kept meanwhile, and every
    new resident did the same: its first hook began the load, the next ended it, and the source was unavailable
    at every other prompt.
    """
    (world.plugins / "index.py").write_text(SLOW_INDEX)
    first = world.started()
    world.run("s0", "SessionStart", "startup")  # the load begins, and goes on past its timeout
    time.sleep(3)  # the user types the next prompt
    for number in range(1, 4):
        assert "INDEX-ready" in (world.text(world.run(f"s{number}", "SessionStart", "startup")) or "")
    assert [e["answered_by"] for e in world.log()] == ["in-process"] + ["resident"] * 4
    assert first["pid"] in [r["pid"] for r in world.residents()]
