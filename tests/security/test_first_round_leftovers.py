"""The first hardening round's leftovers, as variations of their classes, against the installed CLI.

- a working directory deleted (or moved) before or while nia runs: one line, never ``unexpected``;
- ``.nia/*.toml`` starting with a byte-order mark: read as the editor meant it (UTF-16 is named);
- ``os._exit`` in plugin code, anywhere: refused and reported like an exception, never a silent exit 0;
- a context file of exactly the file-size cap: never refused by the per-source value limit.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_attack_corpus import LIMIT, NIA, Attack, clean, each

# -- a working directory that no longer exists ------------------------------------------------------

GONE = "the working directory no longer exists (it was deleted or moved); run nia from an existing folder"


def _in_a_deleted_folder(w: Attack, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    """Run nia whose working directory was removed after the shell entered it."""
    gone = w.base / f"gone-{'-'.join(args).replace('/', '')}"
    gone.mkdir()
    script = 'cd "$1" && rmdir "$1" && shift && exec "$@"'
    done = subprocess.run(
        ["sh", "-c", script, "sh", str(gone), *NIA, *args],
        input=stdin, capture_output=True, env=w.env, timeout=LIMIT, check=False,
    )  # fmt: skip
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


ONE_SHOT = {
    "context show": ("context", "show"),
    "context show --json": ("context", "show", "--json"),
    "plugins list": ("plugins", "list"),
    "workflows list": ("workflows", "list"),
    "hook status": ("hook", "status"),
    "session new": ("session", "new"),
    "dev": ("dev",),
    "a workflow": ("issue", "draft", "--print-prompt"),
}


def test_every_command_in_a_deleted_working_directory_says_so_in_one_line(world: Attack) -> None:
    def attack(_name: str, args: tuple[str, ...]) -> None:
        done = _in_a_deleted_folder(world, *args)
        clean(done)
        assert "unexpected" not in done.stderr, done.stderr
        assert done.returncode == 2 and GONE in done.stderr, done.stderr
        assert done.stdout == ""

    each(ONE_SHOT, attack)


def test_help_in_a_deleted_working_directory_lists_the_commands_and_warns_once(world: Attack) -> None:
    done = _in_a_deleted_folder(world, "--help")
    clean(done)
    assert done.returncode == 0 and "context" in done.stdout and "session" in done.stdout
    assert done.stderr == f"Warning: {GONE}\n"


def test_a_hook_in_a_deleted_working_directory_answers_and_exits_0(world: Attack) -> None:
    gone = str(world.base / "gone-hook-claude-code")
    hook = {"hook_event_name": "UserPromptSubmit", "session_id": "h", "cwd": gone, "prompt": "x"}
    done = _in_a_deleted_folder(world, "hook", "claude-code", stdin=json.dumps(hook).encode())
    clean(done)
    assert done.returncode == 0 and "unexpected" not in done.stderr


PLUGIN = """\
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="dev/x", load=lambda: "one", baseline=lambda v: "DEV-VALUE: " + v)]
"""


class Lines:
    """A process's stream read line by line on a thread, so a test can wait for one without blocking."""

    def __init__(self, stream: Any) -> None:
        self.seen: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: Any) -> None:
        for line in iter(stream.readline, b""):
            self.seen.append(line.decode("utf-8", "replace"))

    def wait_for(self, process: subprocess.Popen[bytes], needle: str) -> None:
        deadline = time.monotonic() + LIMIT
        while not any(needle in line for line in self.seen):
            assert process.poll() is None, f"nia dev ended early ({process.returncode}): {self.seen}"
            assert time.monotonic() < deadline, f"never saw {needle!r}: {self.seen}"
            time.sleep(0.05)

    def text(self) -> str:
        self.thread.join(LIMIT)
        return "".join(self.seen)

    def text_so_far(self) -> str:
        return "".join(self.seen)


@pytest.mark.parametrize("how", ["deleted", "moved away", "deleted and made again"])
def test_nia_dev_outlives_its_folder(world: Attack, how: str) -> None:
    world.plugin("devx", PLUGIN)
    env = {**world.env, "NIA_DEBUG": "0"}
    process = subprocess.Popen(
        [*NIA, "-p", "no:nia-date", "dev", "--poll", "--step-ms", "50", "--debounce-ms", "50"],
        cwd=world.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = Lines(process.stdout), Lines(process.stderr)
    try:
        out.wait_for(process, "for changes")
        if how == "moved away":
            world.root.rename(world.base / "moved")
        else:
            shutil.rmtree(world.root)
        err.wait_for(process, "no longer exists")
        if how == "deleted and made again":
            (world.root / ".nia" / "plugins").mkdir(parents=True)
            (world.root / ".nia" / "plugins" / "devx.py").write_text(PLUGIN.replace('"one"', '"two"'))
            out.wait_for(process, "DEV-VALUE: two")
        time.sleep(0.5)  # a few polls of the missing folder
        assert process.poll() is None, "nia dev ended"
        process.send_signal(signal.SIGINT)
        process.wait(LIMIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = err.text()
    assert process.returncode == 0, stderr
    assert "unexpected" not in stderr and "Traceback" not in stderr, stderr
    assert stderr.rstrip().endswith("Stopped."), stderr


# -- a byte-order mark ----------------------------------------------------------------------------------

BOM = b"\xef\xbb\xbf"
COMMANDS = (
    b'[[workflows]]\ntarget = "release"\ndescription = "Cut a release"\n\n'
    b'[[workflows.operations]]\nname = "notes"\ntask_prompt = "Write notes."\n'
)


@pytest.mark.parametrize("ending", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_configuration_files_starting_with_a_byte_order_mark_are_read(world: Attack, ending: str) -> None:
    project = '[project]\ndescription = "BOM-PROJECT"\n'.replace("\n", ending).encode()
    (world.root / ".nia" / "project.toml").write_bytes(BOM + project)
    (world.root / ".nia" / "commands.toml").write_bytes(BOM + COMMANDS.replace(b"\n", ending.encode()))
    listed = world.nia("workflows", "list")
    clean(listed)
    assert listed.returncode == 0 and "release: Cut a release" in listed.stdout, listed.stderr
    prompt = world.nia("release", "notes", "--print-prompt")
    assert prompt.returncode == 0 and "BOM-PROJECT" in prompt.stdout, prompt.stderr
    helped = world.nia("--help")
    assert "Cut a release" in helped.stdout and helped.stderr == ""


def test_a_key_error_in_a_file_with_a_byte_order_mark_names_its_real_line(world: Attack) -> None:
    (world.root / ".nia" / "project.toml").write_bytes(BOM + b'[project]\ndescription = "x"\nbogus = 1\n')
    shown = world.nia("context", "show")
    clean(shown)
    assert ".nia/project.toml:3" in shown.stderr and "bogus" in shown.stderr, shown.stderr
    assert "Invalid statement" not in shown.stderr


def test_switching_a_plugin_keeps_the_byte_order_mark(world: Attack) -> None:
    path = world.root / ".nia" / "project.toml"
    path.write_bytes(BOM + b'[project]\r\ndescription = "x"\r\n')
    done = world.nia("plugins", "disable", "nia-git")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes().startswith(BOM + b"[project]\r\n") and b"nia-git" in path.read_bytes()
    assert world.nia("plugins", "enable", "nia-git").returncode == 0


@pytest.mark.parametrize("mark", [b"\xff\xfe", b"\xfe\xff"], ids=["UTF-16LE", "UTF-16BE"])
@pytest.mark.parametrize("name", ["project.toml", "commands.toml"])
def test_a_configuration_file_saved_as_utf16_is_named_as_such(world: Attack, mark: bytes, name: str) -> None:
    encoding = "utf-16-le" if mark == b"\xff\xfe" else "utf-16-be"
    (world.root / ".nia" / name).write_bytes(mark + "[project]\n".encode(encoding))
    shown = world.nia("workflows", "list") if name == "commands.toml" else world.nia("context", "show")
    clean(shown)
    assert shown.returncode == 2, shown.stderr
    assert f".nia/{name}: saved as UTF-16" in shown.stderr and "save it as UTF-8" in shown.stderr


# -- os._exit in plugin code --------------------------------------------------------------------------------

EXITS = {
    "at import, status 0": ("import os\nos._exit(0)\n", "import"),
    "at import, status 3": ("import os\nos._exit(3)\n", "import"),
    "at import, posix._exit": ("import posix\nposix._exit(0)\n", "import"),
    "at import, caught as Exception": (
        "import os\ntry:\n    os._exit(0)\nexcept Exception:\n    pass\n", "import"),
    "in the sources hook": (
        "import os\nfrom nia_core import hookimpl\n\n@hookimpl\ndef nia_context_sources(location):\n    os._exit(0)\n",
        "hook"),
    "in a loader": (
        "import os\nfrom nia_core import ContextSource, hookimpl\n\n@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='bye/x', load=lambda: os._exit(0), baseline=lambda v: v)]\n", "loader"),
    "in a renderer": (
        "import os\nfrom nia_core import ContextSource, hookimpl\n\n@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='bye/x', load=lambda: 'v', baseline=lambda v: os._exit(0))]\n", "renderer"),
    "in the location hook": (
        "import os\nfrom nia_core import hookimpl\n\n@hookimpl\ndef nia_location_opened(location):\n    os._exit(0)\n",
        "hook"),
}  # fmt: skip


def test_os_exit_in_plugin_code_is_reported_and_nia_goes_on(world: Attack) -> None:
    def attack(name: str, case: tuple[str, str]) -> None:
        code, _where = case
        w = fresh(world, name)
        w.plugin("bye", code)
        shown = w.nia("context", "show")
        clean(shown)
        assert shown.returncode == 0, shown.stderr
        assert "INSIDE-RULE: be brief." in shown.stdout  # the rest of the context
        assert "plugin 'bye'" in shown.stderr and "os._exit" in shown.stderr, shown.stderr
        strict = w.nia("--strict", "context", "show")
        assert strict.returncode != 0 and "os._exit" in strict.stderr, strict.stderr
        hook = {"hook_event_name": "UserPromptSubmit", "session_id": "h", "cwd": str(w.root), "prompt": "x"}
        answered = w.nia("hook", "claude-code", stdin=json.dumps(hook).encode(), exact=True)
        clean(answered)
        assert answered.returncode == 0 and "bye" in answered.stderr, answered.stderr
        assert "os._exit" in answered.stderr and "unexpected" not in answered.stderr

    each(EXITS, attack)


def test_os_exit_at_import_names_the_file_and_line(world: Attack) -> None:
    world.plugin("bye", "import os\n\n\nos._exit(0)\n")
    shown = world.nia("context", "show")
    assert "plugin 'bye': failed to import: " in shown.stderr and "bye.py:4)" in shown.stderr, shown.stderr


def test_os_exit_in_a_plugin_command_registration_keeps_help_listing(world: Attack) -> None:
    code = "import os\nfrom nia_core import hookimpl\n\n@hookimpl\ndef nia_register_commands(cli):\n    os._exit(0)\n"
    world.plugin("bye", code)
    helped = world.nia("--help")
    clean(helped)
    assert helped.returncode == 0 and "context" in helped.stdout and "os._exit" in helped.stderr


def test_os_exit_in_a_plugin_thread_is_one_line_and_the_command_finishes(world: Attack) -> None:
    world.plugin(
        "bye",
        "import os, threading, time\nfrom nia_core import ContextSource, hookimpl\n\n"
        "threading.Thread(target=lambda: os._exit(0), name='plugin-thread').start()\n\n"
        "@hookimpl\ndef nia_context_sources(location):\n    time.sleep(0.3)\n"
        "    return [ContextSource(key='bye/x', load=lambda: 'v', baseline=lambda v: 'THREAD-PLUGIN ' + v)]\n",
    )
    shown = world.nia("context", "show")
    clean(shown)
    assert shown.returncode == 0 and "THREAD-PLUGIN v" in shown.stdout, shown.stderr
    assert "thread 'plugin-thread'" in shown.stderr and "os._exit(0)" in shown.stderr


def test_a_forked_child_of_a_plugin_still_exits_as_it_asks(world: Attack) -> None:
    world.plugin(
        "forker",
        "import multiprocessing, os\nfrom nia_core import ContextSource, hookimpl\n\n"
        "def child():\n    os._exit(7)\n\n"
        "def load():\n    process = multiprocessing.get_context('fork').Process(target=child)\n"
        "    process.start()\n    process.join(20)\n    return str(process.exitcode)\n\n"
        "@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='forker/x', load=load, timeout=30, baseline=lambda v: 'CHILD-EXIT ' + v)]\n",
    )
    shown = world.nia("context", "show")
    clean(shown)
    assert "CHILD-EXIT 7" in shown.stdout, shown.stderr


def test_os_exit_after_the_command_keeps_the_commands_status(world: Attack) -> None:
    world.plugin("bye", "import atexit, os\natexit.register(lambda: os._exit(0))\n")
    (world.root / ".nia" / "project.toml").write_text("[project\n")
    shown = world.nia("context", "show")
    assert shown.returncode == 2 and "project.toml" in shown.stderr, shown.stderr


# -- the file-size cap and the per-source limit agree ------------------------------------------------

CAP = 1024 * 1024


def _exactly_the_cap(kind: str) -> bytes:
    if kind == "ASCII":
        return b"a" * CAP
    if kind == "quotes and backslashes":
        return b'"\\' * (CAP // 2)
    if kind == "control characters":
        return b"\x01\x1b" * (CAP // 2)
    if kind == "accented":
        return "é".encode() * (CAP // 2)
    return b"\xff" * CAP  # not UTF-8: each byte becomes U+FFFD


KINDS = ["ASCII", "quotes and backslashes", "control characters", "accented", "not UTF-8"]
WORKFLOW = (
    '[[workflows]]\ntarget = "issue"\ndescription = "Issues"\n\n[[workflows.operations]]\nname = "draft"\n'
    'task_prompt = "Draft."\n\n[[workflows.operations.context]]\ntype = "file"\npath = "big.md"\n'
)


def test_a_workflow_context_file_of_exactly_the_cap_is_used(world: Attack) -> None:
    def attack(kind: str, _: object) -> None:
        w = fresh(world, kind)
        (w.root / ".nia" / "commands.toml").write_text(WORKFLOW)
        (w.root / "big.md").write_bytes(_exactly_the_cap(kind))
        prompt = w.nia("issue", "draft", "--print-prompt")
        assert prompt.returncode == 0, prompt.stderr[-2000:]
        assert "per-source limit" not in prompt.stderr and len(prompt.stdout.encode()) > CAP
        ran = w.nia("issue", "draft", stdin=b"some notes")
        assert ran.returncode == 0, ran.stderr[-2000:]
        (w.root / "big.md").write_bytes(_exactly_the_cap(kind) + b"a")
        over = w.nia("issue", "draft", "--print-prompt", "-v")
        assert "exceeds 1MB limit" in over.stderr, over.stderr[-2000:]

    each({kind: None for kind in KINDS}, attack)


@pytest.mark.parametrize("kind", ["quotes and backslashes", "control characters"])
def test_a_project_context_file_of_exactly_the_cap_is_shown(world: Attack, kind: str) -> None:
    (world.root / ".nia" / "project.toml").write_text('[[project.context]]\ntype = "file"\npath = "big.md"\n')
    (world.root / "big.md").write_bytes(_exactly_the_cap(kind))
    shown = world.nia("context", "show")
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr[-2000:]
    assert len(shown.stdout.encode()) > CAP


def test_a_plugin_value_over_the_per_source_limit_is_still_refused(world: Attack) -> None:
    world.plugin(
        "huge",
        "from nia_core import ContextSource, hookimpl\n\n@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='huge/x', load=lambda: 'a' * (1024 * 1024), baseline=lambda v: v)]\n",
    )
    shown = world.nia("context", "show")
    assert "huge/x" in shown.stderr and "over the per-source limit of 1 MiB" in shown.stderr, shown.stderr


@pytest.fixture
def world(tmp_path: Path) -> Attack:
    return Attack(tmp_path)


def fresh(world: Attack, name: str) -> Attack:
    """A world of its own for one case of ``each``, beside ``world``."""
    folder = world.base / "cases" / re.sub(r"[^a-zA-Z0-9]+", "-", name)
    folder.mkdir(parents=True)
    return Attack(folder)
