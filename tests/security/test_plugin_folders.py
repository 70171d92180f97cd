"""Plugin folders in a hostile repository: what a project's ``.nia/plugins`` may hold, and what nia runs from it.

A project's local plugins are its own code (docs/security.md, "Plugins"), so
nia runs what the project's files say. It never runs code from *outside* the
project through them (a link from ``.nia/plugins``, from ``.nia`` itself, from
a module of a plugin package, or a hard link: the same edge as every file nia
reads from a project), and no file in a plugin folder can freeze a door that
watches it (``nia dev``, ``nia mcp``): a FIFO, a device or an endless file is
never read.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.security.test_attack_corpus import LIMIT, NIA, Attack, clean, each
from tests.unix_sockets import bind_unix_socket

pytestmark = pytest.mark.slow


@pytest.fixture
def world(tmp_path: Path) -> Attack:
    return Attack(tmp_path)


RAN = "ran-outside-code"
"""What the outside plugin writes into its marker file when Python runs it."""


def _outside_plugin(w: Attack, name: str = "pwn.py") -> Path:
    """A plugin outside the project that leaves a marker file when it is run; its path."""
    marker = w.base / "marker"
    folder = w.outside / "plugins"
    folder.mkdir(exist_ok=True)
    code = f"open({str(marker)!r}, 'w').write({RAN!r})\n"
    (folder / name).write_text(code)
    return folder / name


def _marker(w: Attack) -> Path:
    return w.base / "marker"


def _folder_link(w: Attack) -> None:
    _outside_plugin(w)
    (w.root / ".nia" / "plugins").symlink_to(w.outside / "plugins", target_is_directory=True)


def _file_link(w: Attack) -> None:
    target = _outside_plugin(w)
    (w.root / ".nia" / "plugins").mkdir()
    (w.root / ".nia" / "plugins" / "pwn.py").symlink_to(target)


def _relative_file_link(w: Attack) -> None:
    _outside_plugin(w)
    (w.root / ".nia" / "plugins").mkdir()
    (w.root / ".nia" / "plugins" / "pwn.py").symlink_to("../../../outside/plugins/pwn.py")


def _package_module_link(w: Attack) -> None:
    target = _outside_plugin(w, "sub.py")
    package = w.root / ".nia" / "plugins" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from . import sub\n")
    (package / "sub.py").symlink_to(target)


def _package_init_link(w: Attack) -> None:
    target = _outside_plugin(w, "__init__.py")
    package = w.root / ".nia" / "plugins" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").symlink_to(target)


def _package_folder_link(w: Attack) -> None:
    _outside_plugin(w, "__init__.py")
    (w.root / ".nia" / "plugins").mkdir()
    (w.root / ".nia" / "plugins" / "pkg").symlink_to(w.outside / "plugins", target_is_directory=True)


def _dot_nia_link(w: Attack) -> None:
    _outside_plugin(w)
    os.rmdir(w.root / ".nia")
    (w.outside / ".nia").mkdir()
    (w.outside / ".nia" / "plugins").symlink_to(w.outside / "plugins", target_is_directory=True)
    (w.root / ".nia").symlink_to(w.outside / ".nia", target_is_directory=True)


def _hard_link(w: Attack) -> None:
    target = _outside_plugin(w)
    (w.root / ".nia" / "plugins").mkdir()
    os.link(target, w.root / ".nia" / "plugins" / "pwn.py")


OUTSIDE_CODE: dict[str, Callable[[Attack], None]] = {
    ".nia/plugins is a link out": _folder_link,
    "a plugin file is a link out": _file_link,
    "a plugin file is a relative link out": _relative_file_link,
    "a module of a plugin package is a link out": _package_module_link,
    "a package's __init__.py is a link out": _package_init_link,
    "a plugin package folder is a link out": _package_folder_link,
    ".nia is a link out": _dot_nia_link,
    "a plugin file is a hard link to an outside file": _hard_link,
}

HOOK_INPUT = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "hi"}


def _doors(w: Attack) -> dict[str, subprocess.CompletedProcess[str]]:
    hook = json.dumps({**HOOK_INPUT, "cwd": str(w.root)}).encode()
    return {
        "context show": w.nia("context", "show"),
        "--help": w.nia("--help"),
        "plugins list": w.nia("plugins", "list"),
        "hook claude-code": w.nia("hook", "claude-code", stdin=hook, exact=True),
    }


def test_no_plugin_code_from_outside_the_project_runs(tmp_path: Path) -> None:
    def attack(name: str, setup: Callable[[Attack], None]) -> None:
        base = tmp_path / name.replace(" ", "-").replace("/", "_")
        base.mkdir()
        w = Attack(base)
        setup(w)
        for door, result in _doors(w).items():
            clean(result)
            assert not _marker(w).exists(), f"{door}: code from outside the project ran"
            assert "unexpected" not in result.stderr, f"{door}: {result.stderr[-2000:]}"
        listed = w.nia("plugins", "list").stdout + w.nia("plugins", "list").stderr
        assert "outside the project" in listed or "hard link" in listed, f"nothing says why: {listed[-2000:]}"

    each(OUTSIDE_CODE, attack)


def test_a_plugin_linked_inside_the_project_still_runs(world: Attack) -> None:
    """The edge is the project: a link that stays inside it is followed, as for every other project file."""
    tools = world.root / "tools"
    tools.mkdir()
    (tools / "mine.py").write_text(f"open({str(_marker(world))!r}, 'w').write({RAN!r})\n")
    (world.root / ".nia" / "plugins").mkdir()
    (world.root / ".nia" / "plugins" / "mine.py").symlink_to("../../tools/mine.py")
    result = world.nia("context", "show")
    clean(result)
    assert _marker(world).read_text() == RAN


def test_a_plugin_module_outside_the_project_is_named_in_one_line(world: Attack) -> None:
    _file_link(world)
    result = world.nia("context", "show")
    clean(result)
    lines = [line for line in result.stderr.splitlines() if "pwn" in line]
    assert lines and all("outside the project" in line for line in lines), result.stderr[-2000:]
    assert str(world.outside) not in result.stderr, "the outside path itself is never printed"


# -- special files in a plugin folder never freeze a door that watches it ---------------------------


def _special(kind: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "socket":
        bind_unix_socket(path).close()
    else:
        raise AssertionError(kind)


SPECIAL: dict[str, tuple[str, str]] = {
    "a FIFO in a plugin package": ("fifo", ".nia/plugins/pkg/data.json"),
    "a link to /dev/zero in a plugin package": ("zero", ".nia/plugins/pkg/data.bin"),
    "a socket in a plugin package": ("socket", ".nia/plugins/pkg/run.sock"),
    "a FIFO beside the plugins": ("fifo", ".nia/plugins/notes"),
    "a link to /dev/zero beside the plugins": ("zero", ".nia/plugins/notes.txt"),
}


def _with_package(w: Attack, kind: str, where: str) -> None:
    package = w.root / ".nia" / "plugins" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    _special(kind, w.root / where)


def _output_until(process: subprocess.Popen[bytes], done: Callable[[bytes], bool]) -> bytes:
    """What the process printed until ``done`` holds for it, it ends its output, or :data:`LIMIT` passes."""
    assert process.stdout is not None
    got, deadline = b"", time.monotonic() + LIMIT
    while not done(got) and time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], deadline - time.monotonic())
        chunk = os.read(process.stdout.fileno(), 65536) if ready else b""
        if not chunk:
            break
        got += chunk
    return got


def _stop(process: subprocess.Popen[bytes]) -> str:
    process.terminate()
    try:
        out, err = process.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return (out + err).decode("utf-8", "replace")


def test_a_special_file_in_a_plugin_folder_never_freezes_nia_dev(tmp_path: Path) -> None:
    def attack(name: str, case: tuple[str, str]) -> None:
        base = tmp_path / name.replace(" ", "-").replace("/", "_")
        base.mkdir()
        w = Attack(base)
        _with_package(w, *case)
        process = subprocess.Popen(
            [*NIA, "-p", "no:nia-date", "dev"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=w.root,
            env=w.env,
        )
        try:
            first = _output_until(process, lambda got: b"INSIDE-RULE" in got)
        finally:
            text = _stop(process)
        assert b"INSIDE-RULE" in first, f"nia dev showed no baseline within {LIMIT:g}s: {text[-2000:]}"
        assert "Traceback" not in text, text[-3000:]

    each(SPECIAL, attack)


def test_a_special_file_in_a_plugin_folder_never_freezes_nia_mcp(tmp_path: Path) -> None:
    def attack(name: str, case: tuple[str, str]) -> None:
        base = tmp_path / name.replace(" ", "-").replace("/", "_")
        base.mkdir()
        w = Attack(base)
        _with_package(w, *case)
        requests = [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "nia://context"}},
        ]
        process = subprocess.Popen(
            [*NIA, "-p", "no:nia-date", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=w.root,
            env=w.env,
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
            process.stdin.flush()
            got = _output_until(process, lambda got: b'"id":2' in got.replace(b" ", b""))
        finally:
            text = _stop(process)
        assert b"INSIDE-RULE" in got, f"nia mcp did not answer within {LIMIT:g}s: {text[-2000:]}"
        assert "Traceback" not in text, text[-3000:]

    each(SPECIAL, attack)


def test_a_fifo_named_like_a_module_never_freezes_nia_dev_looking_for_where_a_reload_failed(tmp_path: Path) -> None:
    """A failed reload names the file and line of the plugin's source that mentions the source key; a FIFO named
    like a module, sorted before the file that does, must not be waited on while looking."""
    w = Attack(tmp_path)
    package = w.root / ".nia" / "plugins" / "pkg"
    package.mkdir(parents=True)
    good = "from nia_core import ContextSource, hookimpl\n\n@hookimpl\ndef nia_context_sources(location):\n"
    (package / "__init__.py").write_text(
        good + '    return [ContextSource(key="pkg/x", load=lambda: 1, baseline=str)]\n'
    )
    os.mkfifo(package / "A.py")  # never imported; sorted before __init__.py
    process = subprocess.Popen(
        [*NIA, "-p", "no:nia-date", "dev"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # the error's own line may come on either stream
        cwd=w.root,
        env=w.env,
    )
    try:
        assert b"INSIDE-RULE" in _output_until(process, lambda got: b"INSIDE-RULE" in got)
        broken = "    return [ContextSource(key='pkg/x', load=lambda: 2, baseline=str, update=lambda old: old)]\n"
        (package / "__init__.py").write_text(good + broken)
        said = _output_until(process, lambda got: b"pkg/__init__.py:5" in got)
    finally:
        process.kill()
        rest, _ = process.communicate(timeout=LIMIT)
    everything = (said + rest).decode("utf-8", "replace")
    assert "failed to reload" in everything and "pkg/__init__.py:5" in everything, everything[-2000:]
    assert "Traceback" not in everything, everything[-2000:]


RAISES_FROM_TRAP = (
    "import os\nfrom nia_core import hookimpl\n\n@hookimpl\ndef nia_context_sources(location):\n"
    "    trap = os.path.join(os.path.dirname(__file__), 'trap.py')\n"
    "    exec(compile(\"raise ValueError('TRAP-RAISED')\", trap, 'exec'))\n"
)
"""A hook whose failing frame names a file of the plugin that is a FIFO (code can be compiled under any name)."""


def test_a_frame_named_after_a_fifo_never_freezes_nia_dev_reporting_a_failed_reload(tmp_path: Path) -> None:
    w = Attack(tmp_path)
    package = w.root / ".nia" / "plugins" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    os.mkfifo(package / "trap.py")  # never imported
    process = subprocess.Popen(
        [*NIA, "-p", "no:nia-date", "dev"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=w.root,
        env=w.env,
    )
    try:
        assert b"INSIDE-RULE" in _output_until(process, lambda got: b"INSIDE-RULE" in got)
        (package / "__init__.py").write_text(RAISES_FROM_TRAP)
        said = _output_until(process, lambda got: b"TRAP-RAISED" in got)
    finally:
        process.kill()
        rest, _ = process.communicate(timeout=LIMIT)
    everything = (said + rest).decode("utf-8", "replace")
    assert "failed to reload" in everything and "pkg/trap.py:1: " in everything, everything[-2000:]


def test_a_debug_traceback_through_a_fifo_named_frame_is_printed_without_waiting_on_it(world: Attack) -> None:
    package = world.root / ".nia" / "plugins" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(RAISES_FROM_TRAP)
    os.mkfifo(package / "trap.py")
    result = world.nia("--debug", "context", "show")  # a hang fails the case
    assert "TRAP-RAISED" in result.stderr and 'pkg/trap.py", line 1, in <module>' in result.stderr, result.stderr
    assert 'exec(compile("raise ValueError' in result.stderr, "a regular file's line is still shown"


def test_an_os_exit_from_a_fifo_named_frame_is_refused_naming_its_line_without_waiting_on_it(world: Attack) -> None:
    package = world.root / ".nia" / "plugins" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        RAISES_FROM_TRAP.replace("raise ValueError('TRAP-RAISED')", "import os; os._exit(3)")
    )
    os.mkfifo(package / "trap.py")
    result = world.nia("context", "show")  # a hang fails the case
    assert result.returncode == 0, result.stderr
    assert "called os._exit(3)" in result.stderr and "pkg/trap.py:1)" in result.stderr, result.stderr
    assert "INSIDE-RULE" in result.stdout
