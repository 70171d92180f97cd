"""The resident process answers hooks as the hook's own process would, and never makes a hook worse.

Every test drives real ``nia hook`` processes, as an agent starts them, with a resident
process switched on (``NIA_RESIDENT=1``); the answers are compared with the in-process ones.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.resident.world import HOOK, PLUGIN, World, kill


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path / "shop")


def messages(world: World, session_prefix: str) -> list[str]:
    """The system messages the store admitted for the attached session (``nia session show``)."""
    session = next(e["session"] for e in world.log() if e.get("host_session", "").startswith(session_prefix))
    done = world.nia("session", "show", session, "--json")
    assert done.returncode == 0, done.stderr
    return [m["text"] for m in json.loads(done.stdout)["messages"] if m["kind"] == "system_update"]


# -- one path: the same answer, byte for byte -------------------------------------------------------


def test_the_resident_answers_byte_for_byte_what_the_hook_answers_in_process(world):
    """Each step changes the project, then one session asks in-process and another the resident process.

    stdout must be the same bytes; stderr the same warnings (a warning a fresh process says twice,
    once as it loads a plugin and once in the hook's report, the resident says once).
    """
    world.started()
    broken = world.plugins / "broken.py"
    acme = world.plugins / "acme.py"
    config = world.root / ".nia" / "project.toml"
    steps = [
        ("SessionStart", "startup", lambda: None),
        ("UserPromptSubmit", "", lambda: None),
        ("UserPromptSubmit", "", lambda: (world.root / "rule.txt").write_text("two\n")),
        ("SessionStart", "resume", lambda: (world.root / "rule.txt").write_text("three\n")),
        ("UserPromptSubmit", "", lambda: broken.write_text("raise RuntimeError('exploded on import')\n")),
        ("UserPromptSubmit", "", lambda: acme.write_text(PLUGIN.replace("ACME-RULE changed", "ACME-RULE is now"))),
        ("UserPromptSubmit", "", lambda: (world.root / "rule.txt").write_text("four\n")),
        ("UserPromptSubmit", "", lambda: config.write_text('[plugins]\ndisabled = ["nia-date"]\n')),
        ("SessionStart", "resume", lambda: config.write_text("[hooks]\ndeliver_native_files = true\n")),
        ("UserPromptSubmit", "", lambda: acme.unlink()),
        ("SessionStart", "compact", lambda: broken.unlink()),
        ("UserPromptSubmit", "", lambda: (world.root / "AGENTS.md").write_text("AGENTS-SAYS: use spaces.\n")),
    ]
    for host in ("claude-code", "codex"):
        acme.write_text(PLUGIN)
        (world.root / "rule.txt").write_text("one\n")
        config.unlink(missing_ok=True)
        for event, source, change in steps:
            change()
            here = world.run(f"{host}-in", event, source, host=host, env={"NIA_RESIDENT": "0"})
            there = world.run(f"{host}-res", event, source, host=host)
            assert there.stdout == here.stdout, f"{host} {event} {source}"
            said = [{line for line in done.stderr.splitlines() if line.startswith("nia: ")} for done in (here, there)]
            assert said[0] == said[1], f"{host} {event} {source}"
    entries = world.log()
    assert {e["answered_by"] for e in entries if e["host_session"].endswith("-res")} == {"resident"}
    assert {e["answered_by"] for e in entries if e["host_session"].endswith("-in")} == {"in-process"}
    assert {e["fallback"] for e in entries if e["host_session"].endswith("-in")} == {"NIA_RESIDENT=0"}


def test_one_resident_answers_the_hooks_of_several_agents_at_once(world):
    world.started()
    sessions = [f"agent-{i}" for i in range(4)]
    outputs: dict[str, list[str | None]] = {s: [] for s in sessions}
    failures: list[BaseException] = []

    def conversation(session: str, host: str) -> None:
        try:
            outputs[session].append(world.text(world.run(session, "SessionStart", "startup", host=host)))
            for _ in range(3):
                outputs[session].append(world.text(world.run(session, "UserPromptSubmit", host=host)))
        except BaseException as exc:
            failures.append(exc)

    threads = [
        threading.Thread(target=conversation, args=(s, "codex" if i % 2 else "claude-code"))
        for i, s in enumerate(sessions)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not failures, failures
    for session in sessions:
        first, *rest = outputs[session]
        assert first is not None and "ACME-RULE: one" in first
        assert rest == [None, None, None]
    assert len(world.residents()) == 1
    assert sum(e["answered_by"] == "resident" for e in world.log()) >= len(sessions) * 3


# -- started on demand, never worse than in-process -------------------------------------------------


def test_the_first_hook_answers_in_process_and_starts_the_resident_the_next_one_uses(world):
    first = world.run("s", "SessionStart", "startup")
    assert "ACME-RULE: one" in world.text(first)
    resident = world.ready()
    assert resident["projects"] == [] or resident["projects"] == [str(world.root)]
    (world.root / "rule.txt").write_text("two\n")
    assert world.text(world.run("s", "UserPromptSubmit")) == "ACME-RULE changed: two (was one)"
    entries = world.log()
    assert [(e["answered_by"], e["fallback"]) for e in entries] == [
        ("in-process", "no resident process yet"),
        ("resident", ""),
    ]
    assert [r["projects"] for r in world.residents()] == [[str(world.root)]]


def test_a_killed_resident_is_answered_for_in_process_and_replaced(world):
    resident = world.started()
    world.run("s", "SessionStart", "startup")
    kill(resident["pid"])
    world.gone(resident["pid"])
    (world.root / "rule.txt").write_text("two\n")
    assert world.text(world.run("s", "UserPromptSubmit")) == "ACME-RULE changed: two (was one)"
    last = world.log()[-1]
    assert last["answered_by"] == "in-process" and "ended" in last["fallback"]
    assert world.ready()["pid"] != resident["pid"]
    assert world.text(world.run("s", "UserPromptSubmit")) is None
    assert world.log()[-1]["answered_by"] == "resident"


def test_a_hung_resident_is_stopped_and_the_hook_answered_in_process_within_its_deadline(world):
    world.env["NIA_HOOK_DEADLINE"] = "6"
    resident = world.started()
    world.run("s", "SessionStart", "startup")
    os.kill(resident["pid"], signal.SIGSTOP)
    try:
        (world.root / "rule.txt").write_text("two\n")
        started = time.monotonic()
        done = world.run("s", "UserPromptSubmit")
        assert time.monotonic() - started < 6 + 10  # the hook's deadline, plus a loaded machine's start-up
    finally:
        kill(resident["pid"], signal.SIGCONT)
    assert world.text(done) == "ACME-RULE changed: two (was one)"
    last = world.log()[-1]
    assert last["answered_by"] == "in-process" and "did not answer within 3s" in last["fallback"]
    world.gone(resident["pid"])
    assert messages(world, "s") == ["ACME-RULE changed: two (was one)"]


def test_a_busy_resident_sends_the_next_hook_in_process(world):
    gate = world.root / "gate"
    (world.plugins / "slow.py").write_text(
        "import time\nfrom pathlib import Path\nfrom nia_core import ContextSource, hookimpl\n"
        "@hookimpl\ndef nia_context_sources(location):\n"
        "    def load():\n"
        f"        while not Path({str(gate)!r}).exists():\n"
        "            time.sleep(0.05)\n"
        "        return 'slow'\n"
        "    return [ContextSource(key='slow/x', load=load, baseline=lambda v: 'SLOW ' + v, timeout=60)]\n"
    )
    gate.touch()
    world.started()
    gate.unlink()
    held: list[subprocess.CompletedProcess[str]] = []
    first = threading.Thread(target=lambda: held.append(world.run("a", "SessionStart", "startup")))
    first.start()
    time.sleep(3)  # hook a is in the resident now, its loader waiting for the gate
    opener = threading.Timer(6, gate.touch)
    opener.start()
    second = world.run("b", "SessionStart", "startup")
    first.join(120)
    opener.join()
    assert "SLOW slow" in world.text(second) and "SLOW slow" in world.text(held[0])
    answered = sorted((e["answered_by"], e["fallback"]) for e in world.log() if e["host_session"] in ("a", "b"))
    assert answered[1] == ("resident", "")
    assert answered[0][0] == "in-process" and "busy" in answered[0][1]


def test_the_resident_killed_at_every_step_admits_nothing_twice_and_loses_nothing(world):
    """Kills spread over the whole of one answer (before, while loading, in the store, after admitting)."""
    world.started()
    world.run("k", "SessionStart", "startup", transcript=True)
    timings = []
    for _ in range(3):
        started = time.monotonic()
        world.run("k", "UserPromptSubmit", transcript=True)
        timings.append(time.monotonic() - started)
    answer = sorted(timings)[1]
    delays = [answer * i / 10 for i in range(20)]  # from before it connects to after it answered
    for number, delay in enumerate(delays, start=2):
        if not [r for r in world.residents() if r["ready"]]:
            world.run("warm-up", "PreToolUse")  # the last hook was answered before the kill: nothing started one
        resident = world.ready()
        (world.root / "rule.txt").write_text(f"value {number}\n")
        process = subprocess.Popen(
            [*HOOK, "claude-code"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=world.env,
            cwd=world.root,
        )
        assert process.stdin is not None
        process.stdin.write(world.payload("k", "UserPromptSubmit", transcript=True))
        process.stdin.close()
        time.sleep(delay)
        kill(resident["pid"])
        assert process.stdout is not None and process.stderr is not None
        out, err = process.stdout.read(), process.stderr.read()
        assert process.wait(120) == 0, err
        if out.strip():
            world.record("k", out)
        world.gone(resident["pid"])
    world.run("k", "UserPromptSubmit", transcript=True)  # whatever a kill lost is sent again here
    outcomes = [(e["answered_by"], e["fallback"], e["outcome"]) for e in world.log() if e["host_session"] == "k"]
    assert {by for by, _, _ in outcomes} == {"resident", "in-process"}, outcomes  # kills before and after answers
    admitted = messages(world, "k")
    assert len(admitted) == len(set(admitted)) == len(delays)
    seen = world.transcripts["k"].read_text()
    for number in range(2, len(delays) + 2):
        line = f"ACME-RULE changed: value {number} (was"
        assert seen.count(line) == 1, f"{line!r} reached the model {seen.count(line)} times"


# -- scope: what can change an answer gets another resident ------------------------------------------


def test_a_different_environment_gets_another_resident_and_agent_variables_reach_each_hook(world):
    (world.plugins / "env.py").write_text(
        "import os\nfrom nia_core import ContextSource, hookimpl\n"
        "def seen():\n"
        "    found = [os.environ.get(name, '-') for name in ('TEAM', 'CLAUDE_PID', 'LEFT_BY_A_PLUGIN')]\n"
        "    os.environ['LEFT_BY_A_PLUGIN'] = 'yes'\n"
        "    os.chdir('/')\n"
        "    return found\n"
        "@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='env/x', load=seen, baseline=lambda v: 'TEAM=%s PID=%s LEFT=%s' % tuple(v))]\n"
    )
    world.started()
    world.run("a", "SessionStart", "startup", env={"CLAUDE_PID": "100"})
    baseline = world.text(world.run("b", "SessionStart", "startup", env={"CLAUDE_PID": "200"}))
    assert "TEAM=- PID=200 LEFT=-" in baseline  # nothing an earlier hook's plugin set reaches this one
    assert [e["answered_by"] for e in world.log()[-2:]] == ["resident", "resident"]
    assert len(world.residents()) == 1  # CLAUDE_PID changes with every `claude` process: same resident

    other = world.run("c", "SessionStart", "startup", env={"TEAM": "blue"})
    assert "TEAM=blue" in world.text(other)
    assert world.log()[-1]["answered_by"] == "in-process"
    world.ready(more_than=1)
    again = world.run("c", "UserPromptSubmit", env={"TEAM": "blue"})
    assert world.text(again) is None and world.log()[-1]["answered_by"] == "resident", world.log()[-1]["fallback"]
    third = world.text(world.run("d", "SessionStart", "startup", env={"CLAUDE_PID": "300"}))
    assert "TEAM=- PID=300 LEFT=-" in third and f"Working directory: {world.root}" in third


def test_installing_or_removing_a_plugin_package_is_noticed(world, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    env = {"PYTHONPATH": str(site)}
    world.run("s", "SessionStart", "startup", env=env)
    first = world.ready(env)
    (site / "acme_installed.py").write_text(
        "from nia_core import ContextSource, hookimpl\n@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='installed/x', load=lambda: 1, baseline=lambda v: 'INSTALLED',"
        " removal=lambda v: 'UNINSTALLED')]\n"
    )
    dist = site / "acme_installed-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-installed\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[nia]\nacme-installed = acme_installed\n")
    assert world.text(world.run("s", "UserPromptSubmit", env=env)) == "INSTALLED"
    assert world.log()[-1]["answered_by"] == "in-process"  # the installed distributions moved: a new scope
    world.ready(env, more_than=1)
    assert world.text(world.run("s", "UserPromptSubmit", env=env)) is None
    assert world.log()[-1]["answered_by"] == "resident"
    second = world.log()[-1]
    for path in sorted(dist.iterdir()):
        path.unlink()
    dist.rmdir()
    assert world.text(world.run("s", "UserPromptSubmit", env=env)) == "UNINSTALLED"
    assert world.log()[-1]["answered_by"] == "in-process" and second["answered_by"] == "resident"
    assert first["pid"] != world.ready(env)["pid"]


def test_a_change_to_nias_own_code_ends_the_resident(world):
    import nia_core.about

    resident = world.started()
    path = Path(nia_core.about.__file__)
    info = path.stat()
    try:
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
        done = world.run("s", "SessionStart", "startup")
    finally:
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert "ACME-RULE: one" in world.text(done)
    last = world.log()[-1]
    assert last["answered_by"] == "in-process" and "nia's code changed" in last["fallback"]
    world.gone(resident["pid"])


def test_a_database_replaced_between_hooks_is_the_one_the_next_hook_uses(world):
    """The resident keeps its store open between hooks, but never past the file it opened being replaced."""
    world.started()
    assert "ACME-RULE: one" in world.text(world.run("s", "SessionStart", "startup"))
    assert world.text(world.run("s", "UserPromptSubmit")) is None
    db = Path(os.environ["XDG_DATA_HOME"]) / "nia" / "nia.db"
    for path in db.parent.glob("nia.db*"):
        path.rename(path.with_name("old-" + path.name))  # a user moving the database away while agents run
    again = world.run("s", "UserPromptSubmit")
    assert "ACME-RULE: one" in world.text(again)  # a new database: the conversation starts a new epoch in it
    assert world.log()[-1]["answered_by"] == "resident"
    assert db.exists()


# -- switches, visibility, lifetime ------------------------------------------------------------------


def test_nia_resident_0_starts_no_resident(world):
    for _ in range(2):
        world.run("s", "UserPromptSubmit", env={"NIA_RESIDENT": "0"})
    time.sleep(1)
    assert world.residents() == []
    assert [e["fallback"] for e in world.log()] == ["NIA_RESIDENT=0", "NIA_RESIDENT=0"]


def test_a_project_can_switch_resident_processes_off(world):
    world.started()
    (world.root / ".nia" / "project.toml").write_text("[hooks]\nresident = false\n")
    assert "ACME-RULE: one" in world.text(world.run("s", "SessionStart", "startup"))
    last = world.log()[-1]
    assert last["answered_by"] == "in-process" and "resident = false" in last["fallback"]


def test_plugin_folders_too_large_to_check_at_every_hook_are_answered_in_process(world):
    world.started()
    junk = world.root / ".nia" / "plugins" / "vendored"
    for i in range(2_001):  # one more than the resident checks at every hook
        (junk / f"d{i // 100}" / f"e{i}").mkdir(parents=True)
    assert "ACME-RULE: one" in world.text(world.run("s", "SessionStart", "startup"))
    (world.root / "rule.txt").write_text("two\n")
    assert "ACME-RULE changed: two" in world.text(world.run("s", "UserPromptSubmit"))
    last = world.log()[-1]
    assert last["answered_by"] == "in-process" and "more than 2,000 files and folders" in last["fallback"]


CHATTY = """
import os, threading, time

def chatter():
    time.sleep(1)  # past the hook that imported it in its own process: only the resident lives on
    line = b"CHATTY " + b"x" * 1000 + b"\\n"
    for _ in range(3_000):  # 3 MB, three times what the log keeps
        os.write(2, line)
    os.write(2, b"CHATTY-END\\n")

threading.Thread(target=chatter, daemon=True).start()
"""


def test_what_a_plugin_prints_outside_hooks_keeps_the_residents_log_under_its_limit(world):
    from nia_core.resident.folder import location
    from nia_core.resident.server import DROPPED, LOG_LIMIT

    (world.plugins / "chatty.py").write_text(CHATTY)
    resident = world.started()
    world.run("s", "UserPromptSubmit")
    log = Path(location()) / f"{resident['key']}.log"
    deadline = time.monotonic() + 60
    while b"CHATTY-END" not in log.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.2)
    data = log.read_bytes()
    assert data.endswith(b"CHATTY-END\n") and data.startswith(DROPPED), data[:200]
    assert len(data) <= LOG_LIMIT and log.stat().st_mode & 0o777 == 0o600


def test_hook_status_lists_residents_and_hook_stop_ends_them(world):
    resident = world.started()
    status = world.nia("hook", "status")
    line = next(line for line in status.stdout.splitlines() if f"pid {resident['pid']}" in line)
    assert str(world.root) in line and "MiB" in line and " up " in line
    assert resident["memory_bytes"] and resident["age_seconds"] >= 0
    stopped = world.nia("hook", "stop")
    assert f"pid {resident['pid']}: ended" in stopped.stdout
    assert world.residents() == []
    assert "resident processes: none" in world.nia("hook", "status").stdout


def test_the_resident_a_hook_starts_is_listed_when_it_ends_and_holds_none_of_the_agents_pipes(world):
    """An agent that reads a pipe its hook inherited gets its end when the hook ends, and ``nia hook stop``
    right after the hook ends the resident it started (listed while still starting)."""
    agents_end, hooks_end = os.pipe()
    try:
        done = subprocess.run(
            [*HOOK, "claude-code"],
            input=world.payload("warm-up", "PreToolUse"),
            capture_output=True,
            text=True,
            env=world.env,
            cwd=world.root,
            timeout=120,
            pass_fds=(hooks_end,),
        )
        assert done.returncode == 0, done.stderr
        os.close(hooks_end)
        hooks_end = -1
        readable, _, _ = select.select([agents_end], [], [], 10)  # at once, unless a resident holds the pipe
        assert readable and os.read(agents_end, 1) == b""
        stopped = world.nia("hook", "stop")
    finally:
        os.close(agents_end)
        if hooks_end >= 0:
            os.close(hooks_end)
    assert stopped.returncode == 0 and stopped.stdout.count(": ended") == 1, stopped.stdout
    assert world.residents() == []


def test_an_idle_resident_ends_by_itself_and_uses_no_cpu_meanwhile(world):
    world.env["NIA_RESIDENT_IDLE"] = "4"
    resident = world.started()
    before = _cpu_ticks(resident["pid"])
    time.sleep(2)
    assert _cpu_ticks(resident["pid"]) == before  # waiting for a hook is one blocking call
    world.gone(resident["pid"], timeout=30)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_the_thin_client_imports_only_the_standard_library_modules_it_needs(world):
    world.started()
    world.run("s", "SessionStart", "startup")
    probe = (
        "import sys, atexit\n"
        "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
        "sys.argv = ['nia', 'hook', 'claude-code']\n"
        "from nia_core.cli import main\n"
        "main()\n"
    )
    bare = set(
        subprocess.run(
            [sys.executable, "-c", "import sys; print(' '.join(sys.modules))"],
            capture_output=True,
            text=True,
            env=world.env,
        ).stdout.split()
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        input=world.payload("s", "UserPromptSubmit"),
        capture_output=True,
        text=True,
        env=world.env,
        cwd=world.root,
        timeout=120,
    )
    assert world.log()[-1]["answered_by"] == "resident"
    loaded = set(done.stderr.rsplit("MODULES ", 1)[1].split()) - bare
    nia = {m for m in loaded if m.startswith("nia_")}
    assert nia <= {
        "nia_core",
        "nia_core.about",
        "nia_core.lazy",
        "nia_core.cli",
        "nia_core.agents",
        "nia_core.resident",
        "nia_core.resident.client",
        "nia_core.resident.scope",
        "nia_core.resident.folder",
    }, nia
    stdlib = {m for m in loaded - nia if not m.startswith("_")}
    assert "socket" in stdlib and "json" in stdlib
    assert stdlib.isdisjoint(
        {
            "click",
            "pluggy",
            "sqlite3",
            "logging",
            "dataclasses",
            "pathlib",
            "hashlib",
            "subprocess",
            "threading",
            "importlib_metadata",
            "tomllib",
            "typing",
        }
    ), stdlib


# -- security ------------------------------------------------------------------------------------------


def _socket_folder(world: World) -> Path:
    return Path(world.env["XDG_RUNTIME_DIR"]) / "nia"


def test_a_folder_others_can_enter_is_refused(world):
    folder = _socket_folder(world)
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    assert "ACME-RULE: one" in world.text(world.run("s", "SessionStart", "startup"))
    assert "can be entered by other users" in world.log()[-1]["fallback"]
    time.sleep(1)
    assert list(folder.iterdir()) == []  # nothing was started or bound there


def test_a_symlinked_folder_is_refused(world, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    _socket_folder(world).symlink_to(elsewhere)
    world.run("s", "SessionStart", "startup")
    assert "is not a folder" in world.log()[-1]["fallback"]
    time.sleep(1)
    assert list(elsewhere.iterdir()) == []


def test_something_planted_at_the_socket_path_is_not_talked_to(world):
    resident = world.started()
    folder = _socket_folder(world)
    path = next(folder.glob("*.sock"))
    kill(resident["pid"])
    world.gone(resident["pid"])
    path.unlink(missing_ok=True)
    os.mkfifo(path)  # a FIFO where the socket was: opening it would hang a reader
    done = world.run("s", "SessionStart", "startup", timeout=60)
    assert "ACME-RULE: one" in world.text(done)
    assert "is not a socket" in world.log()[-1]["fallback"]


def test_a_planted_server_that_answers_nonsense_is_answered_around(world):
    resident = world.started()
    path = next(_socket_folder(world).glob("*.sock"))
    kill(resident["pid"])
    world.gone(resident["pid"])
    path.unlink(missing_ok=True)
    fake = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fake.bind(str(path))
    fake.listen(4)

    def serve() -> None:
        conn, _ = fake.accept()
        with conn:
            conn.recv(1 << 20)
            conn.sendall(b'{"stdout": 7}')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        done = world.run("s", "SessionStart", "startup")
    finally:
        fake.close()
    assert "ACME-RULE: one" in world.text(done)
    assert world.log()[-1]["answered_by"] == "in-process"


@pytest.mark.skipif(os.getuid() != 0, reason="making a file another user owns needs root")
def test_a_socket_or_folder_of_another_user_is_refused(world):
    folder = _socket_folder(world)
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    world.run("s", "SessionStart", "startup")
    assert "belongs to another user" in world.log()[-1]["fallback"]
    os.chown(folder, 0, 0)
    world.run("s", "UserPromptSubmit")
    resident = world.ready()
    path = next(folder.glob("*.sock"))
    os.chown(path, 65534, 65534)
    world.run("s", "UserPromptSubmit")
    assert "belongs to another user" in world.log()[-1]["fallback"]
    os.chown(path, 0, 0)
    world.run("s", "UserPromptSubmit")
    assert world.log()[-1]["answered_by"] == "resident" and world.residents()[0]["pid"] == resident["pid"]


def test_a_resident_refuses_a_hook_of_another_version_or_environment(world):
    """The socket's name is only a digest: the resident compares the whole scope it is sent with its own."""
    resident = world.started()
    path = next(_socket_folder(world).glob("*.sock"))
    probe = (
        "import json, socket, sys\n"
        "from nia_core.resident import scope\n"
        "found = scope.scope(None)\n"
        "found['nia'] = '0.0.1'\n"
        "request = {'scope': found, 'per_hook': {}, 'host': 'claude-code', 'input': sys.argv[2], 'wait': 5}\n"
        "with socket.socket(socket.AF_UNIX) as conn:\n"
        "    conn.connect(sys.argv[1])\n"
        "    conn.sendall(json.dumps(request).encode())\n"
        "    conn.shutdown(socket.SHUT_WR)\n"
        "    print(conn.makefile().read())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(path), world.payload("s", "SessionStart", "startup")],
        capture_output=True, text=True, env=world.env, cwd=world.root, timeout=60,
    )  # fmt: skip
    assert json.loads(done.stdout) == {"refused": "the resident process serves another environment"}
    assert [e for e in world.log() if e["host_session"] == "s"] == []  # nothing was answered, nothing admitted
    assert world.residents()[0]["pid"] == resident["pid"]


@pytest.mark.skipif(shutil.which("git") is None or sys.platform != "linux", reason="needs git, and Linux's inotify")
def test_in_a_git_repository_a_resident_runs_no_git_for_an_unchanged_prompt_and_sees_an_edit_at_once(world, tmp_path):
    """Prompts further apart than nia-git's refresh interval (an agent's turns): the watched tree decides."""
    (world.root / ".git").rmdir()
    git = shutil.which("git") or "git"
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "Start"]):
        identity = ["-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-c", "commit.gpgsign=false"]
        subprocess.run([git, *identity, *command], cwd=world.root, check=True, capture_output=True)
    (world.root / ".nia" / "project.toml").write_text("[plugins.nia-git]\nrefresh = 0.2\n")
    calls = tmp_path / "git-calls.log"
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    (fake / "git").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {git} "$@"\n')
    (fake / "git").chmod(0o755)
    env = {"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}

    world.run("s", "SessionStart", "startup", env=env)
    world.ready()
    for _ in range(2):  # the resident's first observation, then the one that sets the watches
        time.sleep(0.3)
        world.run("s", "UserPromptSubmit", env=env)
    before = calls.read_text().count(" status ")
    quiet = []
    for _ in range(3):
        time.sleep(0.3)
        quiet.append(world.text(world.run("s", "UserPromptSubmit", env=env)))
    runs = calls.read_text().count(" status ") - before
    (world.root / "AGENTS.md").write_text("AGENTS-SAYS: use spaces.\n")
    edited = world.text(world.run("s", "UserPromptSubmit", env=env))

    assert (quiet, runs) == ([None, None, None], 0)
    assert edited is not None and "1 file modified since the last message (`AGENTS.md`)" in edited
    assert {e["answered_by"] for e in world.log()[1:]} == {"resident"}
