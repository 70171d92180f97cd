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
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nia_core.agents.contract import EVENTS
from nia_core.errors import NiaError

Scope = Literal["project", "user"]
HOOK_TIMEOUT = 30
"""Seconds the host lets nia's hook run (nia's own deadline is shorter; see :mod:`nia_core.agents.answer`)."""


class SettingsError(NiaError):
    """A settings file nia was asked to edit cannot be read as what it should be; nothing was written."""


def command_for(host: str, program: str = "nia") -> str:
    return f"{program} hook {host}"


def is_nia_command(command: object, host: str) -> bool:
    """Whether a hook command is nia's hook for ``host`` (whatever path or interpreter runs nia)."""
    if not isinstance(command, str):
        return False
    return re.search(r"(^|[\s/\\])nia(\.exe)?[\"']?\s+hook\s+" + re.escape(host) + r"(\s|$)", command) is not None


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def claude_home() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def hooks_file(host: str, scope: Scope, root: Path) -> Path:
    """Where ``host`` reads hook entries for ``scope`` (``root``: the project root)."""
    if host == "claude-code":
        return (root / ".claude" if scope == "project" else claude_home()) / "settings.json"
    if host == "codex":
        return (root / ".codex" if scope == "project" else codex_home()) / "hooks.json"
    raise SettingsError(f"unknown host {host!r} (known: claude-code, codex)")


def codex_config(scope: Scope, root: Path) -> Path:
    return (root / ".codex" if scope == "project" else codex_home()) / "config.toml"


# -- reading and writing --------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read it: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SettingsError(f"{path}: not valid JSON ({exc}); nothing was changed") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a JSON object at the top; nothing was changed")
    return data


def _write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` in one rename, so a crash leaves the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with _suppress():
            os.unlink(tmp)
        raise


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def _events_table(data: dict[str, Any], path: Path, *, create: bool) -> dict[str, Any] | None:
    hooks = data.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = data["hooks"] = {}
    if not isinstance(hooks, dict):
        raise SettingsError(f"{path}: 'hooks' is not an object; nothing was changed")
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
    path = hooks_file(host, scope, root)
    data = _read_json(path)
    hooks = _events_table(data, path, create=True)
    assert hooks is not None
    command = command_for(host, program)
    added = []
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsError(f"{path}: 'hooks.{event}' is not a list; nothing was changed")
        mine = [handler for _, handler in _handlers(groups) if is_nia_command(handler.get("command"), host)]
        if mine:
            for handler in mine:  # an earlier install with another program path: bring it up to date
                if handler.get("command") != command:
                    handler["command"] = command
                    added.append(event)
            continue
        groups.append({"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]})
        added.append(event)
    if added:
        _write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        outcome.changes.append(Change(path, f"nia's {', '.join(added)} hooks"))
    if host == "codex":
        _codex_feature(scope, root, outcome)
        outcome.notes.append(
            "Codex runs new hooks only after you review them: start `codex` in this project and approve "
            "nia's hooks when it asks (nia never records that consent for you)."
        )
    return outcome


def _codex_feature(scope: Scope, root: Path, outcome: Outcome) -> None:
    import tomlkit

    path = codex_config(scope, root)
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        document = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.TOMLKitError) as exc:
        raise SettingsError(f"{path}: cannot read it as TOML ({exc}); nothing was changed") from None
    features = document.get("features")
    if features is None:
        features = tomlkit.table()
        document["features"] = features
    elif not isinstance(features, dict):
        raise SettingsError(f"{path}: 'features' is not a table; nothing was changed")
    if features.get("hooks") is True:
        return
    features["hooks"] = True
    _write_atomically(path, tomlkit.dumps(document))
    outcome.changes.append(Change(path, "[features] hooks = true"))


def uninstall(host: str, scope: Scope, root: Path) -> Outcome:
    """Remove nia's handlers for ``host``; every other entry stays, empty containers nia leaves go."""
    outcome = Outcome()
    path = hooks_file(host, scope, root)
    if not path.exists():
        return outcome
    data = _read_json(path)
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
            kept = [h for h in group["hooks"] if not (isinstance(h, dict) and is_nia_command(h.get("command"), host))]
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
    _write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
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
    path = hooks_file(host, scope, root)
    try:
        data = _read_json(path)
        result = Status(host, scope, path, installed_events(data, host))
    except SettingsError as exc:
        result = Status(host, scope, path, [], problem=str(exc))
    if host == "codex":
        result.feature = _codex_flag(codex_config(scope, root)) or _codex_flag(codex_config("user", root))
        result.trusted = _codex_trusted(path, data if not result.problem else {})
    return result


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _codex_flag(path: Path) -> bool:
    features = _read_toml(path).get("features")
    return isinstance(features, dict) and features.get("hooks") is True


EVENT_LABELS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit"}


def _codex_trusted(hooks_path: Path, data: dict[str, Any]) -> list[str]:
    """Events whose nia handler has a trust record in the user's Codex config (hash not re-computed)."""
    hooks_table = _read_toml(codex_config("user", hooks_path.parent)).get("hooks")
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
