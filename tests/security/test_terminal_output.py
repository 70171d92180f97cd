"""What nia prints to a terminal shows control characters and never obeys them (docs/security.md, "Terminals").

Every case runs the installed CLI with stdout and stderr on a real pseudo-terminal, fed text holding
control sequences from a source nia does not trust: a file's content, a ``commands.toml`` description, a key
of ``project.toml`` quoted in a warning, a plugin's name, error, print or value. What reaches the terminal may
hold no C0/C1 control character but newline and tab (the terminal's own CR before each LF aside); the same
commands into a pipe keep every byte.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_attack_corpus import LIMIT, NIA, Attack, each

TITLE = "\x1b]0;PWNED-TITLE\x07"
CLIPBOARD = "\x1b]52;c;Y2xpcGJvYXJk\x07"
CSI_C1 = "\u009b2J"
CURSOR = "\x1b[2A\x1b[K"
OVERWRITE = "harmless\rFORGED"
HOSTILE = f"start {TITLE} {CLIPBOARD} {CSI_C1} {CURSOR} {OVERWRITE} \x08\x7f\x05 end"
"""Every kind of control a terminal obeys: OSC (title, clipboard), a C1 CSI, cursor moves, CR, BS, DEL, ENQ.
(No NUL: a file holding one is binary, and left out before anything is printed.)"""

OBEYED = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|\xc2[\x80-\x9f]")
"""What a terminal would act on: any C0 control but LF and tab, a CR not ending a line, a C1 control."""


def on_a_terminal(w: Attack, *args: str, seconds: float | None = None) -> tuple[int, bytes]:
    """Run nia with stdout and stderr on one pseudo-terminal; ``seconds``: then send SIGINT (``nia dev``)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [*NIA, "-p", "no:nia-date", *args],
        cwd=w.root, env=w.env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    output = b""
    deadline = time.monotonic() + LIMIT
    interrupt_at = None if seconds is None else time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if interrupt_at is not None and time.monotonic() >= interrupt_at:
                process.send_signal(signal.SIGINT)
                interrupt_at = None
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the last writer closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            elif process.poll() is not None:
                break
        else:
            pytest.fail(f"nia {' '.join(args)} hung on a terminal")
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        os.close(master)
    return process.returncode, output


def obeyed(output: bytes, own: bytes = b"") -> list[bytes]:
    """The control sequences in ``output`` a terminal would act on (``own``: nia's own colour codes, removed)."""
    return OBEYED.findall(re.sub(own, b"", output) if own else output)


def _agents(w: Attack) -> None:
    (w.root / "AGENTS.md").write_text(f"Rule: {HOSTILE}\n")


def _context_file(w: Attack) -> None:
    (w.root / "notes.md").write_text(f"Notes: {HOSTILE}\n")
    w.toml('[[project.context]]\ntype = "file"\npath = "notes.md"\n')


def _description(w: Attack) -> None:
    text = json.dumps(f"Issues {HOSTILE}")  # a TOML basic string takes JSON's escapes
    (w.root / ".nia" / "commands.toml").write_text(
        f'[[workflows]]\ntarget = "issue"\ndescription = {text}\n\n'
        '[[workflows.operations]]\nname = "draft"\ntask_prompt = "Draft."\n'
    )


def _key(w: Attack) -> None:
    w.toml(f"[project]\n{json.dumps('key ' + HOSTILE)} = 1\n")


def _plugin_error(w: Attack) -> None:
    w.plugin("evil", f"raise ValueError({HOSTILE!r})\n")


def _plugin_print(w: Attack) -> None:
    w.plugin("loud", f"print({HOSTILE!r})\nimport sys\nsys.stderr.write({HOSTILE!r})\n")


def _plugin_value(w: Attack) -> None:
    w.plugin(
        "valued",
        "from nia_core import ContextSource, hookimpl\n\n@hookimpl\ndef nia_context_sources(location):\n"
        f"    return [ContextSource(key='valued/x', load=lambda: {HOSTILE!r}, baseline=lambda v: 'V: ' + v)]\n",
    )


def _plugin_name(w: Attack) -> None:
    folder = w.root / ".nia" / "plugins"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"bad{TITLE}name.py").write_text("x = (\n")


SOURCES: dict[str, tuple[Callable[[Attack], Any], tuple[str, ...]]] = {
    "AGENTS.md in context show": (_agents, ("context", "show")),
    "a context file in context show": (_context_file, ("context", "show")),
    "AGENTS.md in the model view": (_agents, ("session", "show", "--model-view", "LAST")),
    "a description in --help": (_description, ("--help",)),
    "a description in workflows list": (_description, ("workflows", "list")),
    "a project.toml key in the config warning": (_key, ("context", "show")),
    "a plugin's error in plugins list": (_plugin_error, ("plugins", "list")),
    "a plugin's error in context show": (_plugin_error, ("context", "show")),
    "a plugin's prints": (_plugin_print, ("context", "show")),
    "a plugin's value": (_plugin_value, ("context", "show")),
    "a plugin's file name": (_plugin_name, ("plugins", "list")),
}


def test_nothing_from_an_untrusted_source_reaches_a_terminal_raw(tmp_path: Path) -> None:
    def attack(name: str, case: tuple[Callable[[Attack], Any], tuple[str, ...]]) -> None:
        setup, args = case
        folder = tmp_path / re.sub(r"[^a-zA-Z0-9]+", "-", name)
        folder.mkdir()
        w = Attack(folder)
        setup(w)
        if "LAST" in args:
            session = w.nia("session", "new").stdout.strip()
            assert w.nia("session", "send", session, "hi").returncode == 0
            args = tuple(session if a == "LAST" else a for a in args)
        _, output = on_a_terminal(w, *args)
        if args == ("--help",):  # the second listing comes from the --help cache
            _, output = on_a_terminal(w, *args)
        assert b"\\x1b]0;PWNED-TITLE\\x07" in output, output[-2000:]  # shown, escaped
        assert obeyed(output) == [], output[-2000:]

    each(SOURCES, attack)


@pytest.fixture
def world(tmp_path: Path) -> Attack:
    return Attack(tmp_path)


def test_nia_devs_own_colours_pass_and_what_it_shows_is_escaped(world: Attack) -> None:
    _agents(world)
    _plugin_error(world)
    code, output = on_a_terminal(world, "dev", seconds=4)
    assert code == 0, output[-2000:]
    assert b"\x1b[1mBaseline" in output and b"\x1b[31mError: plugin 'evil'" in output  # its own styling
    assert obeyed(output, own=rb"\x1b\[[0-9;]*m") == [], output[-2000:]
    assert b"Rule: start \\x1b]0;PWNED-TITLE\\x07" in output


def test_pipes_keep_every_byte(world: Attack) -> None:
    _agents(world)
    shown = world.nia("context", "show")
    assert f"Rule: {HOSTILE}\n" in shown.stdout
    data = json.loads(world.nia("context", "show", "--json").stdout)
    assert f"Rule: {HOSTILE}\n" in data["baseline"]
    _description(world)
    prompt = world.nia("issue", "draft", "--print-prompt")
    assert f"Rule: {HOSTILE}" in prompt.stdout
    _plugin_value(world)
    hook = {"hook_event_name": "UserPromptSubmit", "session_id": "h", "cwd": str(world.root), "prompt": "x"}
    answered = world.nia("hook", "codex", stdin=json.dumps(hook).encode(), exact=True)
    assert answered.returncode == 0, answered.stderr
    assert f"V: {HOSTILE}" in json.loads(answered.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_crlf_file_shows_its_lines_not_escapes(world: Attack) -> None:
    (world.root / "AGENTS.md").write_bytes(b"line one\r\nline two\r\n")
    _, output = on_a_terminal(world, "context", "show")
    assert b"line one\r\r\nline two" in output or b"line one\r\nline two" in output
    assert b"\\x0d" not in output


def test_each_case_is_a_real_attack_without_the_guard(world: Attack) -> None:
    """The control: piped, the same text is raw, so a terminal would have obeyed it."""
    _agents(world)
    assert obeyed(world.nia("context", "show").stdout.encode()) != []


def test_an_undecodable_byte_of_the_c1_range_in_a_file_name_is_shown_not_sent_raw(world: Attack) -> None:
    """A file name is bytes: one that is not UTF-8 reaches Python as a lone surrogate, which the stream writes back
    as the raw byte, and ``0x9b`` is CSI on an 8-bit terminal (``0x9b 2J`` clears the screen)."""
    folder = world.root / ".nia" / "plugins"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / os.fsdecode(b"bad\x9b2Jname.py")).write_text("x = (\n")
    _, output = on_a_terminal(world, "plugins", "list")
    assert b"bad\\x9b2Jname" in output, output[-2000:]
    assert b"\x9b" not in output, output[-2000:]
