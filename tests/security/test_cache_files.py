"""Caches are inputs too: every file nia keeps in the user cache folder, attacked through the installed CLI.

A cache file is used only when it is a regular file of bounded size, of the
shape nia writes, owned by the current user, and neither it nor its folder is
writable by anyone else (docs/security.md, "Files nia keeps for itself").
Anything else is a cache miss: never a hang, never a traceback, never a row or
a plugin another user planted; ``--debug`` says why the file was ignored.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_attack_corpus import LIMIT, Attack, each

ROOT_USER = os.geteuid() == 0
LAUNCHER = (
    "import os, sys\n"
    "if os.environ.get('NIA_TEST_OTHER_EUID'):\n"
    "    os.geteuid = lambda: int(os.environ['NIA_TEST_OTHER_EUID'])\n"
    "from nia_core.cli import main\n"
    "main()\n"
)
"""The real CLI. Without root no file can be given to another user, so nia is told it runs as another uid
instead: what it owns then belongs to "another user", which is the very comparison under test."""

INSTALLED = """\
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="pack/colour", load=lambda: "green", baseline=lambda v: "PACK-COLOUR: " + v)]
"""
PLANTED = """\
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="planted/x", load=lambda: "x", baseline=lambda v: "PLANTED-PLUGIN-RAN")]
"""


def _age(*tops: Path) -> None:
    past = time.time() - 3600
    for top in tops:
        for path in [top, *top.rglob("*")]:
            os.utime(path, (past, past), follow_symlinks=False)


class Cached(Attack):
    """A project, an installed plugin pack on ``PYTHONPATH``, and the caches one run of nia wrote."""

    def __init__(self, base: Path) -> None:
        base.mkdir(parents=True, exist_ok=True)
        super().__init__(base)
        self.site = base / "site"
        (self.site / "pack_mod").mkdir(parents=True)
        (self.site / "pack_mod" / "__init__.py").write_text(INSTALLED)
        (self.site / "planted_mod.py").write_text(PLANTED)  # importable, named by no distribution
        info = self.site / "pack-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pack\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("[nia]\npack = pack_mod\n")
        self.env["PYTHONPATH"] = str(self.site)
        self.cache = self.home / ".cache" / "nia"
        self.other = False
        plugin = self.root / ".nia" / "plugins" / "greeter.py"
        plugin.parent.mkdir()
        plugin.write_text(
            "import click\nfrom nia_core import hookimpl\n\n@hookimpl\ndef nia_register_commands(cli):\n"
            '    @cli.command(help="Greet from a local plugin.")\n    def greet():\n        click.echo("hi")\n'
        )
        _age(self.site, self.root)

    def run(self, *args: str, env: dict[str, str] | None = None, umask: int = -1) -> subprocess.CompletedProcess[str]:
        """The CLI (through :data:`LAUNCHER`, so every run shares one ``sys.path`` and so one cache file)."""
        extra = dict(env or {})
        if self.other:
            extra["NIA_TEST_OTHER_EUID"] = str(os.geteuid() + 4242)
        try:
            done = subprocess.run(
                [sys.executable, "-c", LAUNCHER, "-p", "no:nia-date", *args],
                capture_output=True,
                text=True,
                cwd=self.root,
                env={**self.env, **extra},
                timeout=LIMIT,
                umask=umask,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"nia {' '.join(args)} hung (no exit within {LIMIT:g}s)")
        assert "Traceback" not in done.stderr, done.stderr
        assert "unexpected" not in done.stderr, done.stderr
        return done

    def warm(self, *, rows: bool = True) -> tuple[Path, Path]:
        """Run nia until its caches are written: the entry-point scan and (with ``rows``) the ``--help`` rows."""
        first = self.run("context", "show")
        assert "PACK-COLOUR: green" in first.stdout, first.stderr
        (scan,) = self.cache.glob("entry-points-*.json")
        if not rows:
            return scan, scan
        shown = self.run("--help")
        assert "Greet from a local plugin." in shown.stdout
        (written,) = self.cache.glob("help-*.json")
        return scan, written

    def another_user(self, path: Path) -> None:
        """``path`` now belongs to another user (see :data:`LAUNCHER` without root)."""
        if ROOT_USER:
            os.chown(path, 65534, 65534, follow_symlinks=False)
        else:  # the cache folder and every file in it are nia's "other user"'s now
            self.other = True


def _plant_entry(scan: Path) -> None:
    data = json.loads(scan.read_text())
    data["entry_points"].append({**data["entry_points"][0], "name": "planted", "value": "planted_mod"})
    scan.write_text(json.dumps(data))


def _plant_row(rows: Path) -> None:
    data = json.loads(rows.read_text())
    data["commands"].append({**data["commands"][0], "name": "planted", "text": "PLANTED-HELP-ROW"})
    rows.write_text(json.dumps(data))


@pytest.fixture
def world(tmp_path: Path) -> Cached:
    return Cached(tmp_path)


def test_a_planted_cache_entry_of_the_current_user_is_used(world: Cached) -> None:
    """The control: the plants below would work if their files could be trusted."""
    scan, rows = world.warm()
    _plant_row(rows)
    assert "PLANTED-HELP-ROW" in world.run("--help").stdout
    _plant_entry(scan)
    assert "PLANTED-PLUGIN-RAN" in world.run("context", "show").stdout


UNTRUSTED: dict[str, Callable[[Cached, Path], Any]] = {
    "the file is another user's": lambda w, f: w.another_user(f),
    "the file is world-writable": lambda w, f: f.chmod(0o666),
    "the file is group-writable": lambda w, f: f.chmod(0o620),
    "the folder is world-writable": lambda w, f: f.parent.chmod(0o777),
    "the folder is group-writable": lambda w, f: f.parent.chmod(0o770),
    "the folder is world-writable with the sticky bit": lambda w, f: f.parent.chmod(0o1777),
    "the folder is another user's": lambda w, f: w.another_user(f.parent),
}


def test_a_planted_entry_point_is_never_imported_from_a_cache_another_user_could_write(tmp_path: Path) -> None:
    def attack(name: str, untrust: Callable[[Cached, Path], Any]) -> None:
        w = Cached(tmp_path / name.replace(" ", "-").replace("'", ""))
        scan, _ = w.warm(rows=False)
        _plant_entry(scan)
        untrust(w, scan)
        debug = w.run("--debug", "context", "show")
        assert "PLANTED-PLUGIN-RAN" not in debug.stdout
        assert f"cache file {scan} ignored: " in debug.stderr, debug.stderr
        assert "owned by another user" in debug.stderr or "writable by other users" in debug.stderr
        if scan.exists():  # nia replaced the file with its own scan when it could: plant it again
            _plant_entry(scan)
            untrust(w, scan)
        shown = w.run("context", "show")
        assert shown.returncode == 0, shown.stderr
        assert "PACK-COLOUR: green" in shown.stdout and "PLANTED-PLUGIN-RAN" not in shown.stdout
        assert shown.stderr == ""

    each(UNTRUSTED, attack)


def test_a_planted_help_row_is_never_listed_from_a_cache_another_user_could_write(tmp_path: Path) -> None:
    def attack(name: str, untrust: Callable[[Cached, Path], Any]) -> None:
        w = Cached(tmp_path / name.replace(" ", "-").replace("'", ""))
        _, rows = w.warm()
        _plant_row(rows)
        untrust(w, rows)
        debug = w.run("--debug", "--help")
        assert "PLANTED-HELP-ROW" not in debug.stdout
        assert f"cache file {rows} ignored: " in debug.stderr, debug.stderr
        shown = w.run("--help")
        assert shown.returncode == 0, shown.stderr
        assert "Greet from a local plugin." in shown.stdout and "PLANTED-HELP-ROW" not in shown.stdout

    each(UNTRUSTED, attack)


def test_nia_writes_no_cache_into_a_folder_others_may_write(world: Cached) -> None:
    world.cache.mkdir(parents=True)
    world.cache.chmod(0o777)
    world.run("context", "show")
    world.run("--help")
    assert list(world.cache.iterdir()) == []
    debug = world.run("--debug", "context", "show")
    assert "not written: the folder is writable by other users (mode 777)" in debug.stderr


def test_a_cache_folder_an_earlier_nia_left_group_writable_is_tightened_and_used(world: Cached) -> None:
    world.cache.mkdir(parents=True)
    world.cache.chmod(0o775)  # a plain mkdir under a 002 umask, as nia made it before it checked the folder
    planted = world.cache / "entry-points-0000000000000000.json"
    planted.write_text("{}")  # what was in the folder while the group could write there is not kept
    world.run("context", "show")
    assert stat.S_IMODE(world.cache.stat().st_mode) == 0o755
    assert not planted.exists()
    assert list(world.cache.glob("entry-points-*.json")), "the cache is written again"


def test_nia_makes_its_cache_folder_private_whatever_the_umask(world: Cached) -> None:
    world.run("context", "show", umask=0)
    assert stat.S_IMODE(world.cache.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in world.cache.iterdir())


# -- damaged or hostile content: a cache miss, never a hang, a traceback or an error -----------------


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _link(target: str) -> Callable[[Path], None]:
    def relink(path: Path) -> None:
        path.unlink()
        path.symlink_to(target)

    return relink


def _link_to_a_copy(path: Path) -> None:
    copy = path.with_name("copy.json")
    path.rename(copy)
    path.symlink_to(copy.name)


def _huge(path: Path) -> None:
    data = json.loads(path.read_text())
    data["padding"] = "x" * (16 * 1024 * 1024)
    path.write_text(json.dumps(data))


def _edit(change: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))

    return damage


def _first_entry(key: str, value: object) -> Callable[[Path], None]:
    return _edit(lambda d: d["entry_points"][0].__setitem__(key, value))


def _deep(path: Path) -> None:
    path.write_text('{"key": ' + "[" * 200_000 + "]" * 200_000 + "}")


SCAN_DAMAGE: dict[str, Callable[[Path], Any]] = {
    "a FIFO": _fifo,
    "a link to /dev/zero": _link("/dev/zero"),
    "a link to /dev/urandom": _link("/dev/urandom"),
    "a link to a good copy": _link_to_a_copy,
    "a folder": lambda p: (p.unlink(), p.mkdir()),
    "over 16 MiB": _huge,
    "nested 200,000 deep": _deep,
    "not UTF-8": lambda p: p.write_bytes(b"\xff\xfe" + p.read_bytes()),
    "empty": lambda p: p.write_bytes(b""),
    "a JSON list": lambda p: p.write_text("[1, 2]"),
    "a JSON string": lambda p: p.write_text('"entry_points"'),
    "a value that is a number": _first_entry("value", 5),
    "a name that is null": _first_entry("name", None),
    "a group that is a list": _first_entry("group", ["nia"]),
    "editable as text": _first_entry("editable", "yes"),
    "a version that is an object": _first_entry("version", {"v": 1}),
    "an entry that is a list": _edit(lambda d: d["entry_points"].__setitem__(0, ["pack", "pack_mod"])),
    "an entry without its value": _edit(lambda d: d["entry_points"][0].pop("value")),
    "an entry with a field nia does not write": _first_entry("extra", 1),
    "entry points that are an object": _edit(lambda d: d.__setitem__("entry_points", {"a": 1})),
    "files that are not pairs": _edit(lambda d: d["files"].append(["a", 1, 2])),
    "a file named with a NUL": _edit(lambda d: d["files"].append(["a\x00b", None])),
    "a file time that is text": _edit(lambda d: d["files"].append(["/x", "1"])),
    "a file time that is true": _edit(lambda d: d["files"].append(["/x", True])),
    "no key": _edit(lambda d: d.pop("key")),
}


def test_a_damaged_entry_point_cache_is_a_miss_in_every_command(tmp_path: Path) -> None:
    def attack(name: str, damage: Callable[[Path], Any]) -> None:
        w = Cached(tmp_path / name.replace(" ", "-").replace("/", "-").replace(",", ""))
        scan, _ = w.warm(rows=False)
        damage(scan)
        shown = w.run("context", "show")
        assert shown.returncode == 0 and shown.stderr == "", shown.stderr
        assert "PACK-COLOUR: green" in shown.stdout
        listed = w.run("plugins", "list")
        assert listed.returncode == 0 and "pack" in listed.stdout, listed.stderr
        hook = {"hook_event_name": "UserPromptSubmit", "session_id": "h", "cwd": str(w.root), "prompt": "x"}
        answered = subprocess.run(
            [sys.executable, "-c", LAUNCHER, "hook", "claude-code"],
            input=json.dumps(hook), capture_output=True, text=True, cwd=w.root, env=w.env, timeout=LIMIT,
        )  # fmt: skip
        assert answered.returncode == 0 and "PACK-COLOUR: green" in answered.stdout, answered.stderr

    each(SCAN_DAMAGE, attack)


HELP_DAMAGE: dict[str, Callable[[Path], Any]] = {
    "a FIFO": _fifo,
    "a link to /dev/zero": _link("/dev/zero"),
    "a link to a good copy": _link_to_a_copy,
    "over 16 MiB": _huge,
    "nested 200,000 deep": _deep,
    "a JSON list": lambda p: p.write_text("[]"),
    "commands that are an object": _edit(lambda d: d.__setitem__("commands", {"greet": 1})),
    "a kind that is a number": _edit(lambda d: d["kinds"].append(["/x", 5])),
    "a file named with a NUL": _edit(lambda d: d["files"].append(["a\x00b", None])),
    "a file named by a number": _edit(lambda d: d["files"].append([3, None])),
    "a hidden flag that is text": _edit(lambda d: d["commands"][0].__setitem__("hidden", "no")),
}


def test_a_damaged_help_cache_is_a_miss(tmp_path: Path) -> None:
    def attack(name: str, damage: Callable[[Path], Any]) -> None:
        w = Cached(tmp_path / name.replace(" ", "-").replace("/", "-").replace(",", ""))
        _, rows = w.warm()
        damage(rows)
        shown = w.run("--help")
        assert shown.returncode == 0 and shown.stderr == "", shown.stderr
        assert "Greet from a local plugin." in shown.stdout

    each(HELP_DAMAGE, attack)
