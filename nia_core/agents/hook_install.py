"""``nia hook install|uninstall|status``: nia's entries in a host's hook settings, and nothing else.

JSON settings are edited structurally (every other key and entry is kept, in
order); Codex's ``config.toml`` is edited with tomlkit, so comments and layout
survive. Installing twice changes nothing; uninstalling removes only nia's
handlers (and the containers it leaves empty).

Codex runs a hook only once the user has reviewed it: it persists that trust
as ``[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash``
in ``$CODEX_HOME/config.toml`` (``codex-rs/hooks/src/engine/discovery.rs``,
``config_rules.rs``). That record is the user's consent, given in Codex; nia
never writes it. ``status`` reports it, and ``install`` says how to give it.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nia_core.agents.contract import EVENTS
from nia_core.agents.settings_file import SettingsError, SettingsFile

Scope = Literal["project", "user"]
HOOK_TIMEOUT = 30
"""Seconds the host lets nia's hook run (nia's own deadline is shorter; see :mod:`nia_core.agents.answer`)."""

PROGRAM_NAMES = ("nia", "nia.exe")
"""The names nia's console script has: a handler whose program is one of them (any folder) is nia's."""

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


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def claude_home() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def hooks_file(host: str, scope: Scope, root: Path) -> SettingsFile:
    """Where ``host`` reads hook entries for ``scope`` (``root``: the project root)."""
    if host == "claude-code":
        if scope == "project":
            return SettingsFile.in_project(root, ".claude", "settings.json")
        return SettingsFile.in_user_folder(claude_home(), "settings.json")
    if host == "codex":
        if scope == "project":
            return SettingsFile.in_project(root, ".codex", "hooks.json")
        return SettingsFile.in_user_folder(codex_home(), "hooks.json")
    raise SettingsError(host, "unknown host (known: claude-code, codex)")


def codex_config(scope: Scope, root: Path) -> SettingsFile:
    if scope == "project":
        return SettingsFile.in_project(root, ".codex", "config.toml")
    return SettingsFile.in_user_folder(codex_home(), "config.toml")


# -- reading and writing --------------------------------------------------------------


def _read_json(settings: SettingsFile) -> dict[str, Any]:
    return settings.read_json() or {}


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _events_table(data: dict[str, Any], path: Path, *, create: bool) -> dict[str, Any] | None:
    hooks = data.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = data["hooks"] = {}
    if not isinstance(hooks, dict):
        raise SettingsError(path, "'hooks' is not an object; nothing was changed")
    return hooks


def _handlers(groups: object) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    if not isinstance(groups, list):
        return
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            for handler in group["hooks"]:
                if isinstance(handler, dict):
                    yield group, handler


def installed_events(data: dict[str, Any], host: str) -> list[str]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    return [
        event
        for event in EVENTS
        if any(is_nia_command(handler.get("command"), host) for _, handler in _handlers(hooks.get(event)))
    ]


# -- install / uninstall ---------------------------------------------------------------


@dataclass
class Change:
    path: Path
    what: str


@dataclass
class Outcome:
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def install(host: str, scope: Scope, root: Path, *, program: str = "nia") -> Outcome:
    """Add nia's SessionStart and UserPromptSubmit handlers for ``host`` (idempotent)."""
    outcome = Outcome()
    settings = hooks_file(host, scope, root)
    path = settings.path
    data = _read_json(settings)
    config = codex_config(scope, root) if host == "codex" else None
    document = _codex_document(config) if config is not None else None  # read everything before writing anything
    hooks = _events_table(data, path, create=True)
    assert hooks is not None
    command = command_for(host, program)
    added = []
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsError(path, f"'hooks.{event}' is not a list; nothing was changed")
        mine = [handler for _, handler in _handlers(groups) if is_nia_command(handler.get("command"), host, program)]
        if mine:
            for handler in mine:  # an earlier install with another program path: bring it up to date
                if handler.get("command") != command:
                    handler["command"] = command
                    added.append(event)
            continue
        groups.append({"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]})
        added.append(event)
    if added:
        settings.write(_dump(data))
        outcome.changes.append(Change(path, f"nia's {', '.join(added)} hooks"))
    if config is not None and document is not None:
        _codex_feature(config, document, outcome)
        outcome.notes.append(
            "Codex runs new hooks only after you review them: start `codex` in this project and approve "
            "nia's hooks when it asks (nia never records that consent for you)."
        )
    return outcome


def _codex_document(config: SettingsFile) -> Any:
    """Codex's ``config.toml`` as a tomlkit document (comments and layout kept), read through the checked reader."""
    import tomlkit

    from nia_core.project.toml import ConfigError, check_nesting

    text = config.read_text() or ""
    try:
        check_nesting(text, str(config.path))
        return tomlkit.parse(text)
    except ConfigError as exc:
        raise SettingsError(config.path, str(exc).split(": ", 1)[-1]) from None
    except RecursionError:
        raise SettingsError(config.path, "nested too deeply; nia refuses such a file") from None
    except tomlkit.exceptions.TOMLKitError as exc:
        raise SettingsError(config.path, f"cannot read it as TOML ({exc}); nothing was changed") from None


def _codex_feature(config: SettingsFile, document: Any, outcome: Outcome) -> None:
    import tomlkit

    features = document.get("features")
    if features is None:
        features = tomlkit.table()
        document["features"] = features
    elif not isinstance(features, dict):
        raise SettingsError(config.path, "'features' is not a table; nothing was changed")
    if features.get("hooks") is True:
        return
    features["hooks"] = True
    config.write(tomlkit.dumps(document))
    outcome.changes.append(Change(config.path, "[features] hooks = true"))


def uninstall(host: str, scope: Scope, root: Path, *, program: str | None = None) -> Outcome:
    """Remove nia's handlers for ``host``; every other entry stays, empty containers nia leaves go."""
    outcome = Outcome()
    settings = hooks_file(host, scope, root)
    path = settings.path
    data = settings.read_json()
    if data is None:
        return outcome
    hooks = _events_table(data, path, create=False)
    if hooks is None:
        return outcome
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if not (isinstance(group, dict) and isinstance(group.get("hooks"), list)):
                kept_groups.append(group)
                continue
            kept = [
                h
                for h in group["hooks"]
                if not (isinstance(h, dict) and is_nia_command(h.get("command"), host, program))
            ]
            if len(kept) != len(group["hooks"]):
                removed.append(event)
                if not kept:
                    continue
                group["hooks"] = kept
            kept_groups.append(group)
        if event in removed:
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if not removed:
        return outcome
    if not hooks:
        del data["hooks"]
    settings.write(_dump(data))
    outcome.changes.append(Change(path, f"removed nia's {', '.join(dict.fromkeys(removed))} hooks"))
    return outcome


# -- status ----------------------------------------------------------------------------


@dataclass
class Status:
    host: str
    scope: Scope
    path: Path
    events: list[str]
    problem: str = ""
    feature: bool | None = None
    """Codex: whether ``[features] hooks = true`` is in effect in this scope's config.toml."""
    trusted: list[str] = field(default_factory=list)
    """Codex: events of nia's handlers with a persisted trust record."""

    def as_json(self) -> dict[str, Any]:
        item: dict[str, Any] = {"host": self.host, "scope": self.scope, "path": str(self.path), "events": self.events}
        if self.problem:
            item["problem"] = self.problem
        if self.host == "codex":
            item["feature_enabled"] = self.feature
            item["trusted_events"] = self.trusted
        return item


def status(host: str, scope: Scope, root: Path) -> Status:
    """Where nia's hooks for ``host`` stand in ``scope``; reads only, through the checked reader, writes nothing."""
    settings = hooks_file(host, scope, root)
    data: dict[str, Any] = {}
    try:
        data = _read_json(settings)
        result = Status(host, scope, settings.path, installed_events(data, host))
    except SettingsError as exc:
        result = Status(host, scope, settings.path, [], problem=exc.problem)
    if host == "codex":
        problems: list[str] = []
        result.feature = _codex_flag(codex_config(scope, root), problems) or _codex_flag(
            codex_config("user", root), problems
        )
        result.trusted = _codex_trusted(settings.path, data, problems)
        result.problem = "; ".join(dict.fromkeys([*([result.problem] if result.problem else []), *problems]))
    return result


def _read_toml(config: SettingsFile, problems: list[str]) -> dict[str, Any]:
    """A TOML file for reading only: what cannot be read (refused, invalid, too deep) is empty, and said."""
    import tomllib

    from nia_core.project.toml import ConfigError, check_nesting

    try:
        text = config.read_text() or ""
        check_nesting(text, str(config.path))
        return tomllib.loads(text)
    except SettingsError as exc:
        problems.append(str(exc))
    except ConfigError as exc:
        problems.append(str(exc))
    except tomllib.TOMLDecodeError as exc:
        problems.append(f"{config.path}: not valid TOML ({exc})")
    except RecursionError:
        problems.append(f"{config.path}: nested too deeply")
    return {}


def _codex_flag(config: SettingsFile, problems: list[str]) -> bool:
    features = _read_toml(config, problems).get("features")
    return isinstance(features, dict) and features.get("hooks") is True


EVENT_LABELS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit"}


def _codex_trusted(hooks_path: Path, data: dict[str, Any], problems: list[str]) -> list[str]:
    """Events whose nia handler has a trust record in the user's Codex config (hash not re-computed)."""
    hooks_table = _read_toml(codex_config("user", hooks_path.parent), problems).get("hooks")
    states = hooks_table.get("state") if isinstance(hooks_table, dict) else None
    if not isinstance(states, dict):
        return []
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    trusted = []
    for event in EVENTS:
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        if not isinstance(groups, list):
            continue
        for gi, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                continue
            for hi, handler in enumerate(handlers):
                if not (isinstance(handler, dict) and is_nia_command(handler.get("command"), "codex")):
                    continue
                suffix = f"{hooks_path}:{EVENT_LABELS[event]}:{gi}:{hi}"
                for key, state in states.items():
                    if key.endswith(suffix) and isinstance(state, dict) and state.get("trusted_hash"):
                        trusted.append(event)
    return list(dict.fromkeys(trusted))
