"""Attacks on the caches and shortcuts added for speed: the ``--help`` rows, the transcript's compaction record.

Each case runs the real ``nia`` (or the hook door) against real files; what
fails a case is the trust rule of docs/security.md: a hang, a traceback, a
stale listing, context re-sent or dropped because of text the repository wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

_SCRIPT = Path(sys.executable).with_name("nia")
NIA = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from nia_core.cli import main; main()"]
LIMIT = 40.0

PLUGIN = """\
import click
from nia_core import hookimpl

@hookimpl
def nia_register_commands(cli):
    @cli.command(help="Greet from a local plugin.")
    def greet():
        click.echo("hello")
"""


def _age(top: Path) -> None:
    past = time.time() - 3600
    for path in [top, *top.rglob("*")]:
        os.utime(path, (past, past), follow_symlinks=False)


@pytest.fixture
def helped(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A project after one ``nia --help`` wrote its rows: the project, the environment, the cache file."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / ".nia" / "plugins" / "acme.py").write_text(PLUGIN)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIA_")}
    env["NIA_CACHE_DIR"] = str(tmp_path / "cache")
    _age(root)
    first = _help(root, env)
    assert "Greet from a local plugin." in first.stdout
    (cache,) = (tmp_path / "cache").glob("help-*.json")
    return root, env, cache


def _help(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*NIA, "--help"], cwd=root, env=env, capture_output=True, text=True, timeout=LIMIT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done


def _edit(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def damage(cache: Path) -> None:
        data = json.loads(cache.read_text())
        change(data)
        cache.write_text(json.dumps(data))

    return damage


def _fifo(cache: Path) -> None:
    cache.unlink()
    os.mkfifo(cache)


def _deep(cache: Path) -> None:
    data = json.loads(cache.read_text())
    text = json.dumps(data).replace('"commands": [', '"commands": [' + "[" * 100_000 + "]" * 100_000 + ",")
    cache.write_text(text)


def _huge(cache: Path) -> None:
    data = json.loads(cache.read_text())
    data["padding"] = "x" * (17 * 1024 * 1024)
    cache.write_text(json.dumps(data))


DAMAGE = {
    "a FIFO": _fifo,
    "nested 100,000 deep": _deep,
    "over the size bound": _huge,
    "a folder": lambda cache: (cache.unlink(), cache.mkdir()),
    "not UTF-8": lambda cache: cache.write_bytes(b"\xff\xfe{" + cache.read_bytes()),
    "an entry that is a number": _edit(lambda d: d["commands"].append(1)),
    "an entry without its name": _edit(lambda d: d["commands"].append({"text": "x"})),
    "an entry whose text is a list": _edit(lambda d: d["commands"].__setitem__(0, {**d["commands"][0], "text": []})),
    "an entry whose width is text": _edit(lambda d: d["commands"].__setitem__(0, {**d["commands"][0], "limit": "9"})),
    "a path holding a NUL": _edit(lambda d: d["files"].append(["a\x00b", None])),
    "kinds that are not pairs": _edit(lambda d: d["kinds"].append([1, 2, 3])),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_help_cache_is_ignored_never_a_hang_or_traceback(helped, damage):
    root, env, cache = helped
    damage(cache)
    done = _help(root, env)
    assert "Greet from a local plugin." in done.stdout
    assert done.stderr == ""
