"""Client configuration for ``nia mcp``: Claude Code, Codex, or the plain ``mcpServers`` JSON entry.

Each installer merges one entry named ``nia`` into the client's file and
keeps every other entry (and, for TOML, its comments and layout). A file
that does not parse is reported and left untouched. The files are read and
written as every other tool's settings are
(:class:`nia_core.agents.settings_file.SettingsFile`): inside the project for
``.mcp.json``, inside the home folder for ``~/.codex/config.toml``, regular
files only, bounded; a link out is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nia_core.agents.settings_file import SettingsError, SettingsFile, parse_json_object
from nia_core.errors import UsageError

SERVER_NAME = "nia"
CLIENTS = ("claude-code", "codex", "json")


@dataclass(frozen=True)
class Launch:
    """How a client starts the server."""

    command: str
    args: tuple[str, ...]

    def entry(self) -> dict[str, Any]:
        return {"command": self.command, "args": list(self.args)}


def launch(location: Path | None, extra: tuple[str, ...] = ()) -> Launch:
    """``nia mcp`` by the absolute path of this installation's ``nia`` (else this Python with ``-m``)."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    found = shutil.which("nia")
    if script is not None and script.name == "nia" and script.exists():
        command, args = str(script.resolve()), ["mcp"]
    elif found:
        command, args = str(Path(found).resolve()), ["mcp"]
    else:
        command, args = sys.executable, ["-c", "from nia_core.cli import main; main()", "mcp"]
    if location is not None:
        args += ["--location", str(location)]
    return Launch(command, (*args, *extra))


@dataclass(frozen=True)
class Planned:
    """A config file and its new text."""

    settings: SettingsFile
    text: str
    existed: bool

    @property
    def path(self) -> Path:
        return self.settings.path


def given_file(path: str | Path) -> SettingsFile:
    """A file the user named with ``--config``: its own folder is its edge (the user chose it)."""
    absolute = Path(os.path.abspath(path))
    return SettingsFile(absolute, absolute.parent, str(absolute.parent))


def plan(client: str, launch: Launch, path: Path | SettingsFile) -> Planned:
    settings = path if isinstance(path, SettingsFile) else given_file(path)
    current = settings.read_text()
    if client == "codex":
        return Planned(settings, _codex(settings.path, current or "", launch), current is not None)
    entry = launch.entry()
    if client == "claude-code":
        entry = {"type": "stdio", **entry, "env": {}}
    return Planned(settings, _json(settings.path, current, entry), current is not None)


def default_path(client: str, root: Path) -> SettingsFile | None:
    """Where each client reads its servers: the project's ``.mcp.json``, Codex's ``config.toml``; JSON prints."""
    if client == "claude-code":
        return SettingsFile.in_project(root, ".mcp.json")
    if client == "codex":
        home = os.environ.get("CODEX_HOME")
        return SettingsFile.in_user_folder(Path(home) if home else Path.home() / ".codex", "config.toml")
    return None


def json_entry(launch: Launch) -> str:
    return json.dumps({"mcpServers": {SERVER_NAME: launch.entry()}}, indent=2) + "\n"


def _json(path: Path, text: str | None, entry: dict[str, Any]) -> str:
    data: dict[str, Any] = parse_json_object(text, str(path)) if text and text.strip() else {}
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise UsageError(f"{path}: 'mcpServers' is not an object; nothing was changed")
    servers[SERVER_NAME] = entry
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _codex(path: Path, text: str, launch: Launch) -> str:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    from nia_core.project.toml import ConfigError, check_nesting

    try:
        check_nesting(text, str(path))
        document = tomlkit.parse(text)
    except ConfigError as exc:
        raise SettingsError(path, str(exc).split(": ", 1)[-1]) from None
    except RecursionError:
        raise SettingsError(path, "nested too deeply; nia refuses such a file") from None
    except TOMLKitError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc}); fix it, nothing was changed") from None
    servers = document.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        document["mcp_servers"] = servers
    elif not isinstance(servers, dict):
        raise UsageError(f"{path}: 'mcp_servers' is not a table; nothing was changed")
    table = tomlkit.table()
    table["command"] = launch.command
    table["args"] = list(launch.args)
    servers[SERVER_NAME] = table
    return tomlkit.dumps(document)


def write(planned: Planned) -> None:
    """Replace the file in one rename (a crash never leaves half a config), inside its edge."""
    planned.settings.write(planned.text)
