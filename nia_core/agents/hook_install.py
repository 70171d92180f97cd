"""``nia hook install|uninstall|status``: nia's entries in a host's hook settings, and nothing else.

One installer for every command-hook host: where the file is, how an entry
is written, which events, which switch the host needs, and how it records
trust are the adapter's facts (:class:`~nia_core.agents.contract.HostAdapter`).

The user's file is edited in place (:mod:`nia_core.agents.json_text`): every
other key, entry, comment, indentation and key order stays, and uninstall
after install gives back the original bytes. A file nia created and left
empty is deleted (with its folder, when nia left that empty too). A TOML
switch (Codex's ``[features] hooks = true``) is edited with tomlkit and
carries nia's marker comment, so uninstall turns off only what nia turned on.
Every file is read and written inside its edge
(:mod:`nia_core.agents.settings_file`); everything a command edits is read
and checked before the first write.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nia_core.agents import json_text
from nia_core.agents.contract import HOOK_TIMEOUT, HostAdapter
from nia_core.agents.settings_file import SettingsError, SettingsFile, parse_json_object

Scope = Literal["project", "local", "user"]
SCOPES: tuple[Scope, ...] = ("project", "local", "user")

PROGRAM_NAMES = ("nia", "nia.exe")
"""The names nia's console script has: a handler whose program is one of them (any folder) is nia's."""

MARKER = "nia hook install"
"""The comment nia puts on a switch it turned on, so uninstall turns off only what nia turned on."""

__all__ = ["SettingsError", "install", "status", "uninstall"]


def command_for(host: str, program: str = "nia") -> str:
    """The hook command nia writes: ``PROGRAM hook HOST`` (the program quoted for a shell when it must be)."""
    return f"{shlex.quote(program)} hook {host}"


def is_nia_command(command: object, host: str, program: str | None = None) -> bool:
    """Whether a hook command is exactly one nia writes for ``host``: ``PROGRAM hook HOST``, nothing more.

    ``PROGRAM`` is a path whose last name is ``nia`` (any folder), or the
    ``program`` an install was given. A user's command that merely mentions
    ``nia hook HOST`` (an argument, a comment, a log line, a pipeline) is not
    nia's, so nia never rewrites or removes it.
    """
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) != 3 or words[1:] != ["hook", host]:
        return False
    return os.path.basename(words[0]) in PROGRAM_NAMES or (program is not None and words[0] == program)


def this_program() -> str:
    """The absolute path of this installation's ``nia``: what the host should run, whatever its ``PATH``.

    The script that is running (``sys.argv[0]`` named ``nia``), else the one
    beside this interpreter (its virtualenv's ``bin``), else the first on
    ``PATH``; ``nia`` when there is none to name.
    """
    candidates = [sys.argv[0] if sys.argv else "", os.path.join(os.path.dirname(sys.executable), "nia")]
    for candidate in candidates:
        if os.path.basename(candidate) in PROGRAM_NAMES and os.path.isfile(candidate):
            return os.path.abspath(candidate)
    found = shutil.which("nia")
    return os.path.abspath(found) if found else "nia"


def resolve_program(command: str) -> str | None:
    """The file a hook command's program is, as a shell on this ``PATH`` would find it; ``None`` if none."""
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        return None
    if os.sep in program:
        return program if os.path.isfile(program) and os.access(program, os.X_OK) else None
    return shutil.which(program)


def program_problem(command: str) -> str:
    """What is wrong with the program of one of nia's hook commands ('' when it runs this nia)."""
    runs = resolve_program(command)
    program = shlex.split(command)[0]
    if runs is None:
        return (
            f"its command does not resolve: {program!r} is not "
            + ("an executable file" if os.sep in program else "on PATH")
            + "; every hook fails silently (install again: nia writes this nia's absolute path)"
        )
    mine = this_program()
    if os.path.realpath(runs) != os.path.realpath(mine):
        return f"its command runs {runs}, another nia than this one ({mine})"
    return ""


# -- where the files are ---------------------------------------------------------------------------


def scopes(adapter: HostAdapter) -> tuple[Scope, ...]:
    """The scopes ``adapter``'s host reads hooks from (``local`` only where it has a personal project scope)."""
    return tuple(scope for scope in SCOPES if scope != "local" or adapter.settings.local is not None)


def user_folder(adapter: HostAdapter) -> Path:
    """The host's configuration folder: its environment variable, else its default below the home folder."""
    variable, default = adapter.settings.user_folder
    return Path(os.environ.get(variable) or Path.home() / default)


def user_file(adapter: HostAdapter, *names: str) -> SettingsFile:
    return SettingsFile.in_user_folder(user_folder(adapter), *names)


def hooks_file(adapter: HostAdapter, scope: Scope, root: Path) -> SettingsFile:
    """Where ``adapter``'s host reads hook entries for ``scope`` (``root``: the project root)."""
    places = adapter.settings
    if scope == "user":
        return user_file(adapter, *places.user)
    if scope == "local":
        if places.local is None:
            raise SettingsError(adapter.title, "has no personal project scope; use --project or --user")
        return SettingsFile.in_project(root, *places.local)
    return SettingsFile.in_project(root, *places.project)


def switch_file(adapter: HostAdapter, scope: Scope, root: Path) -> SettingsFile | None:
    """The file holding ``adapter``'s switch for ``scope``: beside the scope's hooks file."""
    if adapter.switch is None:
        return None
    hooks = hooks_file(adapter, scope, root)
    return SettingsFile(hooks.path.with_name(adapter.switch.file), hooks.root, hooks.edge)


# -- reading entries -------------------------------------------------------------------------------


def handlers(adapter: HostAdapter, data: Mapping[str, Any], event: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(group index, handler index, handler)`` of every handler of ``event`` (flat formats: group index -1)."""
    hooks = data.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    if not isinstance(groups, list):
        return
    for group_index, group in enumerate(groups):
        if not isinstance(group, dict):
            continue
        if not adapter.format.nested:
            yield -1, group_index, group
            continue
        inner = group.get("hooks")
        if isinstance(inner, list):
            for handler_index, handler in enumerate(inner):
                if isinstance(handler, dict):
                    yield group_index, handler_index, handler


def _command(adapter: HostAdapter, handler: Mapping[str, Any]) -> object:
    return handler.get(adapter.format.command_key)


def installed_events(adapter: HostAdapter, data: Mapping[str, Any], program: str | None = None) -> list[str]:
    return [
        event
        for event in adapter.events
        if any(
            is_nia_command(_command(adapter, h), adapter.name, program) for _, _, h in handlers(adapter, data, event)
        )
    ]


def _handler_path(adapter: HostAdapter, event: str, group: int, handler: int) -> json_text.Where:
    if adapter.format.nested:
        return ("hooks", event, group, "hooks", handler)
    return ("hooks", event, handler)


def _entry(adapter: HostAdapter, command: str) -> dict[str, Any]:
    timeout = HOOK_TIMEOUT * adapter.format.timeout_scale
    handler = {**adapter.format.handler, adapter.format.command_key: command, adapter.format.timeout_key: timeout}
    return {"hooks": [handler]} if adapter.format.nested else handler


def _read(settings: SettingsFile) -> tuple[str, dict[str, Any], bool]:
    """The file's text and data, and whether it exists with content (a missing or blank file is ``{}``)."""
    text = settings.read_text()
    if text is None or not text.strip():
        return "{}\n", {}, False
    return text, parse_json_object(text, str(settings.path)), True


# -- install / uninstall ---------------------------------------------------------------------------


@dataclass
class Change:
    path: Path
    what: str


@dataclass
class Outcome:
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def install(
    adapter: HostAdapter, scope: Scope, root: Path, *, program: str = "nia", no_git_snapshot: bool = False
) -> Outcome:
    """Add nia's handler for each of ``adapter``'s events (idempotent; an entry with another program is updated).

    ``no_git_snapshot``: also set the host's members that leave out its own
    git status snapshot (:attr:`HostAdapter.git_snapshot_off`); nia records
    which it set, so uninstall takes back only those.
    """
    if adapter.module is not None and not no_git_snapshot:
        from nia_core.agents import module_install

        return module_install.install(adapter, scope, root, program)
    outcome = Outcome()
    settings = hooks_file(adapter, scope, root)
    path = settings.path
    text, data, exists = _read(settings)
    if no_git_snapshot and adapter.git_snapshot_off is None:
        raise SettingsError(adapter.title, "has no setting that leaves out its own git status")
    ledger = _Ledger.read() if no_git_snapshot else None
    switch = switch_file(adapter, scope, root)
    document = _toml_document(switch) if switch is not None else None  # everything is read before any write
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise SettingsError(path, "'hooks' is not an object; nothing was changed")
    for event in adapter.events:
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        if groups is not None and not isinstance(groups, list):
            raise SettingsError(path, f"'hooks.{event}' is not a list; nothing was changed")
    command = command_for(adapter.name, program)
    changed: list[str] = []
    for key, value in adapter.format.top.items():
        if key not in data:
            text = json_text.append(text, (), value, name=key)
    for key, value in adapter.format.created.items() if not exists else ():
        text = json_text.append(text, (), value, name=key)
    if "hooks" not in data:
        text = json_text.append(text, (), {}, name="hooks")
    for event in adapter.events:
        mine = [
            (g, h, handler)
            for g, h, handler in handlers(adapter, json.loads(text), event)
            if is_nia_command(_command(adapter, handler), adapter.name, program)
        ]
        if mine:
            for g, h, handler in mine:  # an earlier install with another program: bring it up to date
                if _command(adapter, handler) != command:
                    where = (*_handler_path(adapter, event, g, h), adapter.format.command_key)
                    text = json_text.replace(text, where, command)
                    changed.append(event)
            continue
        if event in json.loads(text)["hooks"]:
            text = json_text.append(text, ("hooks", event), _entry(adapter, command))
        else:
            text = json_text.append(text, ("hooks",), [_entry(adapter, command)], name=event)
        changed.append(event)
    said = [f"nia's {', '.join(dict.fromkeys(changed))} hooks"] if changed else []
    owned: dict[str, Any] = {}
    if ledger is not None and adapter.git_snapshot_off is not None:
        for key, value in adapter.git_snapshot_off.items():
            if key not in data:
                text = json_text.append(text, (), value, name=key)
                owned[key] = value
                said.append(f"{json.dumps(key)}: {json.dumps(value)} ({adapter.title}'s own git status left out)")
            elif data[key] != value:
                text = json_text.replace(text, (key,), value)
                said.append(f"{json.dumps(key)}: {json.dumps(value)} (was {json.dumps(data[key])})")
                owned[key] = {"was": data[key]}
    if said:
        if owned and ledger is not None:
            ledger.record(path, owned)  # before the write: a crash between leaves a record, never an orphan
        settings.write(text)
        outcome.changes.append(Change(path, "; ".join(said)))
        if owned and adapter.git_snapshot_note:
            outcome.notes.append(f"Leaving out {adapter.title}'s git status: {adapter.git_snapshot_note}.")
    if switch is not None and document is not None:
        _switch_on(adapter, switch, document, outcome)
    outcome.notes.extend(adapter.notes)
    return outcome


def uninstall(adapter: HostAdapter, scope: Scope, root: Path, *, program: str | None = None) -> Outcome:
    """Remove nia's handlers; every other entry stays; containers, files and switches nia leaves empty go."""
    if adapter.module is not None:
        from nia_core.agents import module_install

        return module_install.uninstall(adapter, scope, root)
    outcome = Outcome()
    settings = hooks_file(adapter, scope, root)
    path = settings.path
    text, data, exists = _read(settings)
    switch = switch_file(adapter, scope, root)
    document = _toml_document(switch) if switch is not None else None
    if exists and data.get("hooks") is not None and not isinstance(data.get("hooks"), dict):
        raise SettingsError(path, "'hooks' is not an object; nothing was changed")
    removed: list[str] = []
    ledger = _Ledger.read()
    owned = ledger.owned(path)
    for key, value in owned.items():  # what nia set for the host's git status, if it is still as nia set it
        expected = adapter.git_snapshot_off.get(key) if adapter.git_snapshot_off else None
        if key not in data or data[key] != expected:
            continue
        if isinstance(value, dict) and "was" in value:
            text = json_text.replace(text, (key,), value["was"])
        else:
            text = json_text.remove(text, (key,))
        data = json.loads(text)
        removed.append(key)
    while True:
        found = next(
            (
                (event, g, h)
                for event in (data.get("hooks") or {})
                for g, h, handler in handlers(adapter, data, event)
                if is_nia_command(_command(adapter, handler), adapter.name, program)
            ),
            None,
        )
        if found is None:
            break
        event, g, h = found
        text = _remove_handler(adapter, text, data, event, g, h)
        data = json.loads(text)
        removed.append(event)
    if removed:
        if "hooks" in data and not data["hooks"]:
            text = json_text.remove(text, ("hooks",))
            data = json.loads(text)
        own = {**adapter.format.created, **adapter.format.top}
        if all(key in own and data[key] == own[key] for key in data):
            settings.remove()  # nothing of the user's is left: the file was nia's
            settings.remove_folder_if_empty()
            outcome.changes.append(Change(path, "removed (nia's entries were all it held)"))
        else:
            settings.write(text)
            outcome.changes.append(Change(path, f"removed nia's {', '.join(dict.fromkeys(removed))}"))
        if owned:
            ledger.forget(path)
    if switch is not None and document is not None and not data.get("hooks"):
        _switch_off(adapter, switch, document, outcome)
    return outcome


def _remove_handler(adapter: HostAdapter, text: str, data: Mapping[str, Any], event: str, g: int, h: int) -> str:
    """``text`` without one handler, and without the group and event array it leaves empty."""
    text = json_text.remove(text, _handler_path(adapter, event, g, h))
    after = json.loads(text)
    if adapter.format.nested and not after["hooks"][event][g]["hooks"]:
        text = json_text.remove(text, ("hooks", event, g))
        after = json.loads(text)
    if not after["hooks"][event]:
        text = json_text.remove(text, ("hooks", event))
    return text


class _Ledger:
    """What nia set in a host's settings besides its hooks (``--no-host-git-status``), so uninstall undoes only that.

    JSON settings carry no comments to mark nia's members, so nia keeps the
    record in its own state folder (``$XDG_STATE_HOME/nia/hook-settings.json``),
    read and written as every file nia keeps for itself
    (:func:`nia_core.files.read_private`): the current user's alone, bounded.
    """

    NAME = "hook-settings.json"

    def __init__(self, entries: dict[str, dict[str, Any]]) -> None:
        self.entries = entries

    @staticmethod
    def folder() -> str:
        state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
        return os.path.join(state, "nia")

    @classmethod
    def read(cls) -> _Ledger:
        from nia_core.files import read_private

        try:
            data = json.loads(read_private(cls.folder(), cls.NAME))
        except (OSError, ValueError):
            return cls({})
        return cls({k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {})

    def owned(self, path: Path) -> dict[str, Any]:
        return dict(self.entries.get(str(path), {}))

    def record(self, path: Path, members: dict[str, Any]) -> None:
        self.entries[str(path)] = {**self.entries.get(str(path), {}), **members}
        self._write()

    def forget(self, path: Path) -> None:
        if self.entries.pop(str(path), None) is not None:
            self._write()

    def _write(self) -> None:
        from nia_core.files import write_private

        try:
            write_private(self.folder(), self.NAME, json.dumps(self.entries, indent=1).encode())
        except OSError as exc:
            raise SettingsError(os.path.join(self.folder(), self.NAME), f"cannot record it: {exc}") from None


# -- the switch (Codex's [features] hooks = true) -------------------------------------------------


def _toml_document(settings: SettingsFile) -> Any:
    """A TOML file as a tomlkit document (comments and layout kept), read through the checked reader."""
    import tomlkit

    from nia_core.project.toml import ConfigError, check_nesting

    text = settings.read_text() or ""
    try:
        check_nesting(text, str(settings.path))
        return tomlkit.parse(text)
    except ConfigError as exc:
        raise SettingsError(settings.path, str(exc).split(": ", 1)[-1]) from None
    except RecursionError:
        raise SettingsError(settings.path, "nested too deeply; nia refuses such a file") from None
    except tomlkit.exceptions.TOMLKitError as exc:
        raise SettingsError(settings.path, f"cannot read it as TOML ({exc}); nothing was changed") from None


def _switch_on(adapter: HostAdapter, settings: SettingsFile, document: Any, outcome: Outcome) -> None:
    import tomlkit

    assert adapter.switch is not None
    table_name, key = adapter.switch.table, adapter.switch.key
    table = document.get(table_name)
    if table is None:
        table = tomlkit.table()
        document[table_name] = table
    elif not isinstance(table, dict):
        raise SettingsError(settings.path, f"'{table_name}' is not a table; nothing was changed")
    if table.get(key) is True:
        return
    value = tomlkit.item(True)
    value.comment(f"{MARKER}: {adapter.title} runs hooks only with this")
    table[key] = value
    settings.write(tomlkit.dumps(document))
    outcome.changes.append(Change(settings.path, f"[{table_name}] {key} = true"))


def _switch_off(adapter: HostAdapter, settings: SettingsFile, document: Any, outcome: Outcome) -> None:
    """Turn the switch off again if nia turned it on (its marker comment) and no hooks are left to need it."""
    assert adapter.switch is not None
    table_name, key = adapter.switch.table, adapter.switch.key
    import tomlkit
    from tomlkit.items import Item, Table

    table = document.get(table_name)
    if not isinstance(table, Table) or key not in table:
        return
    item = table.item(key)
    if not isinstance(item, Item) or MARKER not in (item.trivia.comment or ""):
        return  # the user's own setting
    del table[key]
    if not table:
        del document[table_name]

    rest = tomlkit.dumps(document)
    if rest.strip():
        settings.write(rest)
        outcome.changes.append(Change(settings.path, f"removed [{table_name}] {key} (nia had turned it on)"))
    else:
        settings.remove()
        settings.remove_folder_if_empty()
        outcome.changes.append(Change(settings.path, f"removed (nia's [{table_name}] {key} was all it held)"))


# -- status ----------------------------------------------------------------------------------------


@dataclass
class Status:
    host: str
    scope: Scope
    path: Path
    events: list[str]
    problem: str = ""
    switch: bool | None = None
    """Whether the host's switch is on for this scope (``None``: the host has none)."""
    trusted: list[str] | None = None
    """Events of nia's handlers with a trust record (``None``: the host records none nia can read)."""
    command: str = ""
    """The command nia's entries run ('' when none is installed)."""
    runs: str | None = None
    """The file that command's program resolves to here (``None``: it does not resolve)."""
    command_problem: str = ""
    """Why that command will not run this nia: it does not resolve, or it is another nia."""

    def as_json(self) -> dict[str, Any]:
        item: dict[str, Any] = {"host": self.host, "scope": self.scope, "path": str(self.path), "events": self.events}
        if self.command:
            item.update(command=self.command, runs=self.runs)
        if self.command_problem:
            item["command_problem"] = self.command_problem
        if self.problem:
            item["problem"] = self.problem
        if self.switch is not None:
            item["feature_enabled"] = self.switch
        if self.trusted is not None:
            item["trusted_events"] = self.trusted
        return item


def status(adapter: HostAdapter, scope: Scope, root: Path) -> Status:
    """Where nia's hooks for ``adapter`` stand in ``scope``; reads only, through the checked reader."""
    if adapter.module is not None:
        from nia_core.agents import module_install

        return module_install.status(adapter, scope, root)
    settings = hooks_file(adapter, scope, root)
    data: dict[str, Any] = {}
    problems: list[str] = []
    try:
        _, data, _ = _read(settings)
    except SettingsError as exc:
        problems.append(exc.problem)
    result = Status(adapter.name, scope, settings.path, installed_events(adapter, data))
    commands = [
        str(_command(adapter, h))
        for event in result.events
        for _, _, h in handlers(adapter, data, event)
        if is_nia_command(_command(adapter, h), adapter.name)
    ]
    if commands:
        result.command = commands[0]
        result.runs = resolve_program(result.command)
        result.command_problem = "; ".join(dict.fromkeys(p for p in map(program_problem, commands) if p))
    if adapter.switch is not None:
        here = switch_file(adapter, scope, root)
        mine = switch_file(adapter, "user", root)
        result.switch = any(_switch_is_on(adapter, f, problems) for f in dict.fromkeys((here, mine)) if f)
    if adapter.trusted is not None:
        result.trusted = adapter.trusted(settings.path, data, problems)
    result.problem = "; ".join(dict.fromkeys(problems))
    return result


def _switch_is_on(adapter: HostAdapter, settings: SettingsFile, problems: list[str]) -> bool:
    assert adapter.switch is not None
    table = read_toml(settings, problems).get(adapter.switch.table)
    return isinstance(table, dict) and table.get(adapter.switch.key) is True


def read_toml(settings: SettingsFile, problems: list[str]) -> dict[str, Any]:
    """A TOML file for reading only: what cannot be read (refused, invalid, too deep) is empty, and said."""
    import tomllib

    from nia_core.project.toml import ConfigError, check_nesting

    try:
        text = settings.read_text() or ""
        check_nesting(text, str(settings.path))
        return tomllib.loads(text)
    except SettingsError as exc:
        problems.append(str(exc))
    except ConfigError as exc:
        problems.append(str(exc))
    except tomllib.TOMLDecodeError as exc:
        problems.append(f"{settings.path}: not valid TOML ({exc})")
    except RecursionError:
        problems.append(f"{settings.path}: nested too deeply")
    return {}
