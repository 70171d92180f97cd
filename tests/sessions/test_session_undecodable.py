"""Undecodable input on stdin and in arguments (issue #11 item 10): refused with one line, nothing stored.

Real subprocesses, so the bytes reach nia as a terminal or a pipe hands them over
(stdin as bytes, argv decoded by Python with surrogateescape).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from nia_core.sessions import Message, RefusedInput, Store, StoreError

from .session_tamper import count_rows

NIA = [sys.executable, "-c", "from nia_core.cli import main; main()"]

COMMANDS = """\
[[workflows]]
target = "issue"

[[workflows.operations]]
name = "draft"
task_prompt = "Draft an issue from the user's notes."
user_input = true
"""


def dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return list(conn.iterdump())


def nia(
    env: dict[str, str], *args: str | bytes, stdin: bytes | None = None, cwd: Path | None = None
) -> tuple[int, str, str]:
    result = subprocess.run(
        [*NIA, *args], input=stdin, capture_output=True, env={**os.environ, **env}, cwd=cwd, timeout=120
    )
    return result.returncode, result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace")


@pytest.fixture
def session(tmp_path: Path, cli_env: dict[str, str], sqlite_path: Path) -> str:
    (tmp_path / "AGENTS.md").write_text("Rule one.\n")
    runner = CliRunner()
    session_id = runner.invoke(cli, ["session", "new", "--location", str(tmp_path)]).output.strip()
    assert runner.invoke(cli, ["session", "send", session_id, "hello"]).exit_code == 0
    return session_id


@pytest.mark.parametrize(("data", "byte", "offset"), [(b"caf\xe9", "0xe9", 3), (b"ok\n\xff\xfe", "0xff", 3)])
def test_invalid_utf8_on_stdin_is_refused_and_nothing_is_stored(
    session: str, cli_env: dict[str, str], sqlite_path: Path, data: bytes, byte: str, offset: int
) -> None:
    before = dump(sqlite_path)
    code, out, err = nia(cli_env, "session", "send", session, "-", stdin=data)
    assert code == 2 and out == ""
    assert err.startswith(f"Error: stdin is not valid UTF-8 (byte {byte} at offset {offset}); nothing was stored.")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert dump(sqlite_path) == before
    code, out, err = nia(cli_env, "session", "send", session, "-", stdin="café ✓".encode())
    assert code == 0, err


def test_an_argument_with_an_undecodable_byte_is_refused(
    session: str, cli_env: dict[str, str], sqlite_path: Path
) -> None:
    before = dump(sqlite_path)
    code, _out, err = nia(cli_env, "session", "send", session, b"caf\xe9")
    assert code == 2
    assert err == "Error: the argument TEXT is not valid UTF-8 (byte 0xe9 at offset 3); nothing was stored\n"
    code, _out, err = nia(cli_env, "session", "show", b"\xff" + session.encode())
    assert code == 2 and err == "Error: the session id is not valid UTF-8 (byte 0xff at offset 0); nothing was stored\n"
    assert dump(sqlite_path) == before


def test_an_argument_with_a_lone_surrogate_is_refused(session: str, cli_env: dict[str, str], sqlite_path: Path) -> None:
    before = dump(sqlite_path)
    result = CliRunner().invoke(cli, ["session", "send", session, "half \ud83d of an emoji"])
    assert result.exit_code == 2
    assert result.output == (
        "Error: the argument TEXT is not valid UTF-8 (a lone surrogate U+D83D at offset 5); nothing was stored\n"
    )
    assert dump(sqlite_path) == before


def test_a_workflow_refuses_undecodable_input_before_it_stores_or_logs_anything(
    tmp_path: Path, cli_env: dict[str, str], sqlite_path: Path
) -> None:
    project = tmp_path / "proj"
    (project / ".nia").mkdir(parents=True)
    (project / ".nia" / "commands.toml").write_text(COMMANDS)
    code, _out, err = nia(cli_env, "issue", "draft", stdin=b"caf\xe9", cwd=project)
    assert code == 2
    assert err.startswith("Error: the input on stdin is not valid UTF-8 (byte 0xe9 at offset 3); nothing was stored.")
    code, _out, err = nia(cli_env, "issue", "draft", b"notes: caf\xe9", cwd=project)
    assert code == 2
    assert err == "Error: the input argument is not valid UTF-8 (byte 0xe9 at offset 10); nothing was stored\n"
    assert not (project / ".nia" / "logs").exists() and not sqlite_path.exists()
    code, out, err = nia(cli_env, "issue", "draft", "--print-prompt", stdin="café".encode(), cwd=project)
    assert code == 0 and "café" in out, err


def test_the_stores_refuse_text_that_is_not_utf8(store: Store, store_url: str, reopen: Callable[[], Store]) -> None:
    """Every door (hooks, MCP, an embedding program) stores through the Store: it refuses such text too."""
    session_id = store.create_session("/p", "echo/echo").id
    before = count_rows(store_url)
    for text in ("caf\udce9", "lone \ud800"):
        with pytest.raises(RefusedInput, match=f"^session {session_id}: the input is not valid UTF-8 text"):
            store.enqueue(session_id, Message("user", text))
        with pytest.raises(RefusedInput):
            store.enqueue(session_id, Message("tool_result", text, tool_call_id="c1"))
    with pytest.raises(StoreError, match="not valid UTF-8"):
        store.resolve("ab\udce9")
    assert count_rows(store_url) == before
