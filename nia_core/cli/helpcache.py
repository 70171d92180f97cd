"""The rows ``nia --help`` lists for plugin commands and workflow targets, cached between runs.

Listing a plugin's commands means importing every plugin and calling its
``nia_register_commands``: most of what ``nia --help`` would cost. The rows
are kept in the user cache folder (see :func:`nia_core.plugin_host.cachefiles.cache_folder`)
with everything they were computed from, and used only while all of it is
unchanged:

- nia's version, the interpreter, the working directory, the global options
  (``-p no:NAME``, ``--plugins-dir``, ``--strict``) and every ``NIA_*``
  environment variable;
- the ``sys.path`` folders (an install or removal changes them) and the
  metadata files of installed plugins, as for the entry-point scan;
- where the project root is (each ``.nia`` and ``.git`` from the working
  directory up), ``.nia/project.toml`` (``[plugins] disabled``) and
  ``.nia/commands.toml``;
- each local plugin folder and what is in it;
- the source file of every module imported while the commands were listed:
  plugins, the helpers they import, editable installs.

A file is compared by its modification time, change time, size and inode.
Rows are written only after a clean listing (no plugin failed or warned, no
warning logged) with no input modified in the two seconds before the listing
started (a change within the same clock tick could go unseen) nor changed
while it ran (by its change time, which an edit that sets the modification
time back still moves): the rows would come from the older content. They are
never used with ``--debug``, which is asked to show the loading, or
``NIA_NO_CACHE=1``. The file is read like every cache file
(:func:`nia_core.plugin_host.cachefiles.read_cache`: the current user's
alone, a regular file, bounded) and its shape is checked whole before a
value in it is used.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import click

from nia_core.about import __version__
from nia_core.cli.app import App
from nia_core.plugin_host.cachefiles import Pair, cache_enabled, digest, ignored, read_cache, shaped, write_cache

if TYPE_CHECKING:
    from pathlib import Path

CACHE_FORMAT = 1
RACY_NS = 2_000_000_000
"""An input modified this recently may change again within the same clock tick: no rows are written yet."""
Signature = list[int] | None


def signature(path: str) -> Signature:
    """What a change to ``path`` changes: kind, inode, size, modification and change times (``None``: absent)."""
    try:
        found = os.stat(path)
        linked = os.lstat(path)
    except OSError:
        return None
    return [
        stat.S_IFMT(linked.st_mode),
        stat.S_IFMT(found.st_mode),
        found.st_ino,
        found.st_size,
        found.st_mtime_ns,
        found.st_ctime_ns,
    ]


def kind(path: str) -> Signature:
    """Only whether ``path`` exists and as what (a root marker: ``.nia``'s contents do not matter here)."""
    try:
        found = os.stat(path)
        linked = os.lstat(path)
    except OSError:
        return None
    return [stat.S_IFMT(linked.st_mode), stat.S_IFMT(found.st_mode)]


def _ancestors(directory: str) -> Iterator[str]:
    while True:
        yield directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return
        directory = parent


def key(app: App, cwd: str) -> list[Any]:
    """The inputs compared as values (files are compared by :func:`signature`)."""
    environment = sorted([k, v] for k, v in os.environ.items() if k.startswith("NIA_"))
    return [
        CACHE_FORMAT,
        __version__,
        sys.version,
        sys.executable,
        sys.prefix,
        cwd,
        list(app.flags),
        [os.path.abspath(d) for d in app.plugins_dirs],
        app.strict,
        environment,
        sys.path,
    ]


def cache_name(cwd: str) -> str:
    """One file per interpreter and working directory."""
    return f"help-{digest(f'{sys.prefix}|{sys.executable}|{cwd}')}.json"


def usable(app: App) -> bool:
    return cache_enabled() and not app.debug


SHAPE = {
    "key": list,
    "kinds": [Pair(str, (list, type(None)))],
    "files": [Pair(str, (list, type(None)))],
    "commands": list,
}
"""What :func:`write` writes (each command entry is checked by :func:`_well_formed`)."""


def read(app: App) -> list[dict[str, Any]] | None:
    """The cached command entries, when the file can be trusted and every input is as it was; ``None`` otherwise.

    With ``--debug`` the rows are never used (it is asked to show the
    loading), but the file is still checked, so the log says why a cache
    would be ignored (another user's file, a folder others may write to).
    """
    if not cache_enabled():
        return None
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:  # deleted under us: the listing says so
        return None
    name = cache_name(cwd)
    if app.debug:
        from nia_core.cli.logs import configure_logging

        configure_logging(True)
    data = read_cache(name)
    if data is None or app.debug:
        return None
    if not shaped(data, SHAPE) or not all(_well_formed(item) for item in data["commands"]):
        ignored(name, "not the shape nia writes")
        return None
    paths = [path for path, _ in data["kinds"]] + [path for path, _ in data["files"]]
    if any("\0" in path for path in paths) or data["key"] != key(app, cwd):
        return None
    for path, recorded in data["kinds"]:
        if kind(path) != recorded:
            return None
    for path, recorded in data["files"]:
        if signature(path) != recorded:
            return None
    commands: list[dict[str, Any]] = data["commands"]
    return commands


def _well_formed(item: object) -> bool:
    """Whether a cached entry has what :func:`short_help` and the help formatter use, of the types they expect."""
    if not isinstance(item, dict):
        return False
    return (
        isinstance(item.get("name"), str)
        and isinstance(item.get("text"), str)
        and type(item.get("limit")) is int
        and isinstance(item.get("hidden"), bool)
        and isinstance(item.get("plain"), bool)
        and all(item.get(k) is None or isinstance(item.get(k), str) for k in ("help", "short_help"))
        and (item.get("deprecated") is None or isinstance(item.get("deprecated"), (bool, str)))
    )


def entry(name: str, command: click.Command, limit: int) -> dict[str, Any]:
    """What a row needs; click's own commands keep their help text, so any width can be rendered later."""
    plain = type(command).get_short_help_str is click.Command.get_short_help_str
    return {
        "name": name,
        "hidden": bool(command.hidden),
        "text": command.get_short_help_str(limit),
        "limit": limit,
        "help": command.help if plain else None,
        "short_help": command.short_help if plain else None,
        "deprecated": command.deprecated if plain else None,
        "plain": plain,
    }


def short_help(item: dict[str, Any], limit: int) -> str | None:
    """The row text of a cached entry at ``limit`` (``None``: cannot be rendered at this width)."""
    if item["limit"] == limit:
        return str(item["text"])
    if not item["plain"]:
        return None
    command = click.Command(
        item["name"], help=item["help"], short_help=item["short_help"], deprecated=item["deprecated"]
    )
    return command.get_short_help_str(limit)


def _local_inputs(folders: Iterable[Path]) -> list[str]:
    """Each local plugin folder, its entries, and each package's ``__init__.py``."""
    paths = []
    for folder in folders:
        paths.append(str(folder))
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            paths.append(path)
            if os.path.isdir(path):
                paths.append(os.path.join(path, "__init__.py"))
    return paths


def _module_files(names: Iterable[str]) -> list[str]:
    """The source (or compiled) files of the modules ``names``, outside the standard library."""
    import sysconfig

    stdlib = {os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")}
    files = []
    for name in names:
        module = sys.modules.get(name)
        try:
            path = vars(module).get("__file__")  # statically: a module's __getattr__ is the plugin's code
        except TypeError:  # not a module (sys.modules may hold any object)
            continue
        if not isinstance(path, str):
            continue
        real = os.path.realpath(path)
        if not any(real.startswith(folder) for folder in stdlib):
            files.append(path)
    return files


def now() -> int:
    """The file-system clock's reading before a listing starts (for :func:`write`)."""
    return time.time_ns()


def write(app: App, commands: list[dict[str, Any]], imported: Iterable[str], started: int | None = None) -> None:
    """Keep ``commands`` with everything they came from; a recent change anywhere means: not yet.

    ``started``: when the listing began (:func:`now`); an input changed since
    may have changed after it was read, so its signature would vouch for rows
    made from its older content.
    """
    from nia_core.plugin_host import epcache, local_folders
    from nia_core.plugin_host.discovery import ENTRY_POINT_GROUP

    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        return
    location = app.locate()
    markers = [os.path.join(d, marker) for d in _ancestors(cwd) for marker in (".nia", ".git")]
    kinds = [[path, kind(path)] for path in markers]
    files = [
        *(p or os.curdir for p in sys.path),
        *(f for f, _ in epcache.watched_files(epcache.scan(ENTRY_POINT_GROUP))),
        str(location.nia_dir / "project.toml"),
        str(location.nia_dir / "commands.toml"),
        *_local_inputs(local_folders(location, app.plugins_dirs)),
        *_module_files(imported),
    ]
    signatures = [[f, signature(f)] for f in dict.fromkeys(files)]
    began = time.time_ns() if started is None else started
    if any(s is not None and (s[4] >= began - RACY_NS or s[5] >= began) for _f, s in signatures):
        return
    data = {"key": key(app, cwd), "kinds": kinds, "files": signatures, "commands": commands}
    write_cache(cache_name(cwd), data)
