"""NIA_DB (issue #11 item 15): a malformed URL or DSN is one clear line with no secret in it, and a
command that only reads never creates a database file, its folder, or nia's tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nia_core.cli import cli

NIA = [sys.executable, "-c", "from nia_core.cli import main; main()"]
SECRET = "s3cr3tpw"

MALFORMED = [
    ("   ", "it is blank"),
    ("sqlite:", "it names no file"),
    ("sqlite://", "it names no file"),
    ("sqlite:///", "it names no file"),
    ("sqlite:///var/tmp/folder/", "it names a folder, not a file"),
    ("://nia.db", "expected SCHEME://"),
    ("9p://host/nia.db", "expected SCHEME://"),
    ("sqlite:///x.db?timeout=-1", "timeout must be a number of seconds"),
    ("sqlite:///x.db?timeout=nan", "timeout must be a number of seconds"),
    ("sqlite:///x.db?timeout=soon", "timeout must be a number of seconds"),
    ("sqlite:///x.db?timeout", "is not name=value pairs"),
    ("sqlite:///x.db?synchronous=off", "synchronous must be full or normal"),
    ("sqlite:///x.db?color=red", "unknown option 'color'"),
    ("/tmp/a\nb.db", "it contains a control character"),
    (f"host=db.internal dbname=nia password={SECRET}", "a key=value connection string"),
    (f"mysql://nia:{SECRET}@db/nia", "unsupported scheme 'mysql'"),
    (f"postgresql://nia:{SECRET}@[::1/nia", "Invalid IPv6 URL"),
    (f"postgresql://nia:{SECRET}@db:port/nia", "its port is not a whole number"),
    (f"postgresql://nia:{SECRET}@db:70000/nia", "its port is not a whole number"),
    (f"postgresql://nia:{SECRET}@db/nia?timeout=-3", "timeout must be a positive number"),
    (f"postgresql://nia:{SECRET}@db/nia?pool_size=many", "pool_size a positive whole number"),
    (f"postgresql://%zz:{SECRET}@db/nia", "not a valid PostgreSQL URL"),
]


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NIA, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("url", "expected"), MALFORMED, ids=[repr(u) for u, _ in MALFORMED])
def test_a_malformed_database_url_is_one_clear_line(
    url: str, expected: str, tmp_path: Path, cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NIA_DB", url)
    for args in (["session", "list"], ["session", "new", "--location", str(tmp_path)], ["db", "check"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        assert result.output.startswith("Error: ") and expected in result.output, result.output
        assert len(result.output.splitlines()) == 1
        assert SECRET not in result.output and "Traceback" not in result.output and "unexpected" not in result.output
    assert list(tmp_path.iterdir()) == []  # nothing created where nia ran


READERS = [
    ["session", "list"],
    ["session", "list", "--json"],
    ["session", "show", "abc"],
    ["session", "show", "abc", "--json"],
    ["session", "stats", "abc"],
    ["session", "prune", "--older-than", "30d", "--dry-run"],
    ["session", "prune", "--older-than", "30d", "-y"],
    ["session", "delete", "-y", "abc"],
    ["db", "check"],
    ["context", "show"],
    ["workflows", "list"],
]


@pytest.mark.parametrize("use_default", [False, True], ids=["NIA_DB", "default path"])
def test_read_only_commands_never_create_a_database_or_its_folder(
    tmp_path: Path, cli_env: dict[str, str], use_default: bool
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("Rule one.\n")
    env = {**os.environ, **cli_env}
    if use_default:
        env.pop("NIA_DB")
        folder = tmp_path / "data" / "nia"
    else:
        folder = tmp_path / "not" / "yet"
        env["NIA_DB"] = f"sqlite:///{folder / 'nia.db'}"
    for args in READERS:
        result = run(env, project, *args)
        assert "Traceback" not in result.stderr and "unexpected" not in result.stderr, (args, result.stderr)
        assert not folder.exists() and not (tmp_path / "not").exists() and not (tmp_path / "data").exists(), args
    assert run(env, project, "session", "list").stdout == ""
    assert run(env, project, "session", "list", "--json").stdout.strip() == "[]"
    shown = run(env, project, "session", "show", "abc")
    assert shown.returncode == 2 and shown.stderr.startswith("Error: no session 'abc' in ")
    checked = run(env, project, "db", "check")
    assert checked.returncode == 1 and "no database at" in checked.stderr
    created = run(env, project, "session", "new")  # a command that writes creates it
    assert created.returncode == 0 and (folder / "nia.db").exists()
    listed = run(env, project, "session", "list")
    assert created.stdout.strip() in listed.stdout


def test_read_only_commands_create_no_tables_in_an_empty_postgres_schema(
    postgres_url: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    import psycopg

    env = {**os.environ, **cli_env, "NIA_DB": postgres_url}
    for args in (["session", "list"], ["session", "show", "abc"], ["db", "check"]):
        result = run(env, tmp_path, *args)
        assert result.returncode != 0 or result.stdout == "", (args, result.stdout)
        assert len(result.stderr.strip().splitlines()) <= 1 and "Traceback" not in result.stderr, result.stderr
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
    assert tables == []
    assert run(env, tmp_path, "db", "migrate").returncode == 0
    assert run(env, tmp_path, "session", "list").returncode == 0
