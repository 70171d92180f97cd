"""Client configuration for ``nia mcp``: Claude Code, Codex, or the plain ``mcpServers`` JSON entry.

Each installer merges one entry named ``nia`` into the client's file and
keeps every other entry (and, for TOML, its comments and layout). A file
that does not parse is reported and left untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

    path: Path
    text: str
    existed: bool


def plan(client: str, launch: Launch, path: Path) -> Planned:
    if client == "codex":
        return Planned(path, _codex(path, launch), path.exists())
    entry = launch.entry()
    if client == "claude-code":
        entry = {"type": "stdio", **entry, "env": {}}
    return Planned(path, _json(path, entry), path.exists())


def default_path(client: str, root: Path) -> Path | None:
    """Where each client reads its servers: the project's ``.mcp.json``, Codex's ``config.toml``; JSON prints."""
    if client == "claude-code":
        return root / ".mcp.json"
    if client == "codex":
        home = os.environ.get("CODEX_HOME")
        return Path(home) / "config.toml" if home else Path.home() / ".codex" / "config.toml"
    return None


def json_entry(launch: Launch) -> str:
    return json.dumps({"mcpServers": {SERVER_NAME: launch.entry()}}, indent=2) + "\n"


def _json(path: Path, entry: dict[str, Any]) -> str:
    data: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text("utf-8") or "{}")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"{path}: not valid JSON ({exc}); fix or remove it, nothing was changed") from None
        if not isinstance(loaded, dict):
            raise UsageError(f"{path}: expected a JSON object at the top; nothing was changed")
        data = loaded
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise UsageError(f"{path}: 'mcpServers' is not an object; nothing was changed")
    servers[SERVER_NAME] = entry
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _codex(path: Path, launch: Launch) -> str:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    text = ""
    if path.exists():
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read ({exc}); nothing was changed") from None
    try:
        document = tomlkit.parse(text)
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
    """Replace the file atomically (a crash never leaves half a config)."""
    planned.path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{planned.path.name}.", dir=planned.path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(planned.text)
        if planned.existed:
            os.chmod(tmp, planned.path.stat().st_mode & 0o777)
        os.replace(tmp, planned.path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
