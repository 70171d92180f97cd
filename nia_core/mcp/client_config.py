"""Where each MCP client reads its servers, and nia's entry there: ``nia mcp install|uninstall CLIENT``.

:data:`CLIENTS` is the one table of MCP clients: for each, the file of each
scope it reads (project, personal ``local``, ``user``), where the servers sit
in it, the shape of an entry, and what the user still has to do before the
client starts a server from it (approve it, trust the folder). Facts were
checked against the pinned binaries (``tests/real_agents``): their own
``mcp add`` commands write these shapes, their ``mcp list`` or a turn starts
the server from them.

Every file is read and written as every other tool's settings are
(:class:`~nia_core.agents.settings_file.SettingsFile`: inside its edge, a
regular file, bounded). JSON is edited in place
(:mod:`nia_core.agents.json_text`), so the user's formatting and key order
stay and uninstall gives back what install found; TOML with tomlkit, so
comments and layout stay. A file nia created and emptied again is deleted,
with the folders nia left empty. An entry named ``nia`` that does not run
nia is the user's: install refuses to replace it, uninstall leaves it.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shlex
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nia_core.agents import json_text
from nia_core.agents.hook_install import PROGRAM_NAMES, this_program
from nia_core.agents.settings_file import SettingsError, SettingsFile, parse_json_object

if TYPE_CHECKING:
    from nia_core.runtime.runtime import Narrow

log = logging.getLogger("nia.mcp")

SERVER_NAME = "nia"
Scope = Literal["project", "local", "user"]
SCOPES: tuple[Scope, ...] = ("project", "local", "user")
Style = Literal["claude", "plain", "copilot", "opencode", "codex"]

ENVIRONMENT = (
    "NIA_DB",
    "NIA_TABLES",
    "NIA_DEBUG",
    "NIA_DISABLE_PLUGINS",
    "NIA_LOAD_PLUGINS",
    "NIA_IMPORT_TIMEOUT",
    "NIA_MAX_SOURCE_BYTES",
    "NIA_TIMEZONE",
    "NIA_CACHE_DIR",
    "NIA_NO_CACHE",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
)
"""The environment nia reads (docs/cli.md): the session store, the user-global AGENTS.md, plugin switches.
Codex starts a server with a short fixed environment plus the names its ``env_vars`` lists."""

CODEX_STARTUP_SECONDS = 60
"""How long Codex waits for ``nia mcp`` to list its tools (it loads every plugin first)."""


@dataclass(frozen=True)
class Place:
    """One scope's file of one client."""

    file: Callable[[Path], SettingsFile]
    """The file, given the project root."""
    style: Style
    """The shape of an entry there."""
    servers: Callable[[Path], tuple[str, ...]] = lambda root: ("mcpServers",)
    """Where the servers object lies in the file, given the project root."""
    shared: bool = False
    """A project file meant to be committed: it names ``nia`` on ``PATH``, never this machine's path."""
    note: str = ""
    """What the user still has to do before the client starts nia from this file."""
    owner: str = ""
    """Another client's file this one reads too: nia's entry there, if any, serves both as it is."""


@dataclass(frozen=True)
class McpClient:
    name: str
    title: str
    places: Mapping[Scope, Place | Callable[[Path], Place]] = field(default_factory=dict)
    """Each scope's file; a function of the project root where the project decides which file the client reads."""
    default: Scope = "project"
    host: str | None = None
    """The agent adapter (:data:`nia_core.agents.ADAPTERS`) that knows which files the client loads itself."""

    def place(self, scope: Scope, root: Path) -> Place:
        found = self.places.get(scope)
        if found is None:
            have = ", ".join(f"--{s}" for s in self.places) or "none"
            raise SettingsError(self.title, f"has no {scope} scope for MCP servers (it has: {have})")
        return found if isinstance(found, Place) else found(root)


# -- the files ---------------------------------------------------------------------------------------


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _user_folder(variable: str | None, *default: str) -> Path:
    named = os.environ.get(variable) if variable else None
    return Path(named) if named else _home().joinpath(*default)


def _in_project(*parts: str) -> Callable[[Path], SettingsFile]:
    return lambda root: SettingsFile.in_project(root, *parts)


def _in_user(variable: str | None, default: tuple[str, ...], *parts: str) -> Callable[[Path], SettingsFile]:
    return lambda root: SettingsFile.in_user_folder(_user_folder(variable, *default), *parts)


def _host_settings(host: str, scope: Scope) -> Callable[[Path], SettingsFile]:
    """The file where ``host``'s hooks live for ``scope``: its MCP servers live there too (Gemini CLI, Qwen Code)."""

    def file(root: Path) -> SettingsFile:
        from nia_core.agents import adapter
        from nia_core.agents.hook_install import hooks_file

        return hooks_file(adapter(host), scope, root)

    return file


def _host_folder(host: str, *parts: str) -> Callable[[Path], SettingsFile]:
    """A file in ``host``'s user configuration folder (its environment variable, else its default)."""

    def file(root: Path) -> SettingsFile:
        from nia_core.agents import adapter
        from nia_core.agents.hook_install import user_file

        return user_file(adapter(host), *parts)

    return file


def _claude_local_servers(root: Path) -> tuple[str, ...]:
    """Claude Code keeps a project's personal servers under the git root it was started in (else the folder)."""
    here = root.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return ("projects", str(folder), "mcpServers")
    return ("projects", str(here), "mcpServers")


COPILOT_TOOLS = "In `copilot -p`, let it call nia's tool without asking with `--allow-tool nia`."
COPILOT_TRUST = (
    "Copilot CLI starts a project's MCP servers only in a trusted folder: trust this project when copilot asks "
    "(trustedFolders in ~/.copilot/config.json); nia never records that consent for you. " + COPILOT_TOOLS
)


def _copilot_project(root: Path) -> Place:
    """Copilot CLI reads a project's ``.mcp.json`` when there is one (Claude Code's file), else ``.github/mcp.json``."""
    if os.path.lexists(root / ".mcp.json"):
        return Place(_in_project(".mcp.json"), "claude", shared=True, note=COPILOT_TRUST, owner="Claude Code")
    return Place(_in_project(".github", "mcp.json"), "copilot", shared=True, note=COPILOT_TRUST)


GEMINI_TRUST = (
    "Gemini CLI starts MCP servers only in a trusted folder: trust this project when gemini asks "
    "(or run it with GEMINI_CLI_TRUST_WORKSPACE=true); nia never records that consent for you."
)

CLIENTS: dict[str, McpClient] = {
    "claude-code": McpClient(
        "claude-code",
        "Claude Code",
        {
            "project": Place(
                _in_project(".mcp.json"),
                "claude",
                shared=True,
                note=(
                    "Claude Code ignores a project's .mcp.json until you approve its servers: start claude in this "
                    "project and approve 'nia' (nia never records that consent for you), or install with --local."
                ),
            ),
            "local": Place(_in_user("CLAUDE_CONFIG_DIR", (), ".claude.json"), "claude", _claude_local_servers),
            "user": Place(_in_user("CLAUDE_CONFIG_DIR", (), ".claude.json"), "claude"),
        },
        host="claude-code",
    ),
    "codex": McpClient(
        "codex",
        "Codex",
        {
            "project": Place(
                _in_project(".codex", "config.toml"),
                "codex",
                lambda root: ("mcp_servers",),
                shared=True,
                note="Codex reads a project's .codex/config.toml only once you trust the project in codex.",
            ),
            "user": Place(_host_folder("codex", "config.toml"), "codex", lambda root: ("mcp_servers",)),
        },
        default="user",
        host="codex",
    ),
    "gemini": McpClient(
        "gemini",
        "Gemini CLI",
        {
            "project": Place(_host_settings("gemini", "project"), "plain", shared=True, note=GEMINI_TRUST),
            "user": Place(_host_settings("gemini", "user"), "plain", note=GEMINI_TRUST),
        },
        host="gemini",
    ),
    "opencode": McpClient(
        "opencode",
        "OpenCode",
        {
            "project": Place(_in_project("opencode.json"), "opencode", lambda root: ("mcp",), shared=True),
            "user": Place(
                _in_user("XDG_CONFIG_HOME", (".config",), "opencode", "opencode.json"),
                "opencode",
                lambda root: ("mcp",),
            ),
        },
        host="opencode",
    ),
    "copilot": McpClient(
        "copilot",
        "GitHub Copilot CLI",
        {
            "project": _copilot_project,
            "user": Place(_in_user("COPILOT_HOME", (".copilot",), "mcp-config.json"), "copilot", note=COPILOT_TOOLS),
        },
        host="copilot",
    ),
    "qwen-code": McpClient(
        "qwen-code",
        "Qwen Code",
        {
            "project": Place(
                _host_settings("qwen-code", "project"),
                "plain",
                shared=True,
                note=(
                    "Qwen Code waits for your approval of a project's MCP servers: run `qwen mcp approve nia` in this "
                    "project (nia never records that consent for you)."
                ),
            ),
            "user": Place(_host_settings("qwen-code", "user"), "plain"),
        },
        host="qwen-code",
    ),
    "json": McpClient("json", "an MCP client"),
}
"""Every MCP client ``nia mcp install`` knows, by the name the command takes. ``json`` prints the
``mcpServers`` entry editors and desktop apps take (or merges it into ``--config FILE``)."""


# -- what the client runs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Launch:
    """How a client starts the server."""

    command: str
    args: tuple[str, ...]

    def shown(self) -> str:
        return shlex.join([self.command, *self.args])


def launch(
    client: McpClient, *, program: str | None, shared: bool, location: Path | None, plugins_dirs: tuple[str, ...] = ()
) -> Launch:
    """``nia mcp`` for ``client``: this installation's absolute ``nia``, or ``nia`` on ``PATH`` in a shared file.

    The clients start a server in the folder they run in, so no ``--location``
    is written for them; ``--client`` tells the server what the client loads
    itself. A file given with ``--config`` (an editor's, started anywhere) gets
    the project's ``--location``.
    """
    command = program or ("nia" if shared else this_program())
    args: list[str] = ["mcp"]
    if client.host is not None:
        args += ["--client", client.name]
    if location is not None:
        args += ["--location", str(location)]
    for folder in plugins_dirs:
        args += ["--plugins-dir", str(Path(folder).resolve())]
    return Launch(command, tuple(args))


def entry(style: Style, run: Launch) -> dict[str, Any]:
    """nia's entry in a JSON file of ``style``."""
    if style == "claude":
        return {"type": "stdio", "command": run.command, "args": list(run.args), "env": {}}
    if style == "copilot":
        return {"type": "local", "command": run.command, "args": list(run.args), "tools": ["*"]}
    if style == "opencode":
        return {"type": "local", "command": [run.command, *run.args], "enabled": True}
    return {"command": run.command, "args": list(run.args)}


def is_nia_entry(value: object, program: str | None = None) -> bool:
    """Whether a server entry runs ``nia mcp`` (any path to nia, the ``program`` given, or ``nia`` on PATH)."""
    if not isinstance(value, Mapping):
        return False
    given, args = value.get("command"), value.get("args") or []
    if not isinstance(args, list):
        return False
    words = list(given) if isinstance(given, list) else [given, *args]  # OpenCode: one list
    if len(words) < 2 or not isinstance(words[0], str):
        return False
    named = os.path.basename(words[0]) in PROGRAM_NAMES or (program is not None and words[0] == program)
    return named and words[1] == "mcp"


def _serves(value: object, client: McpClient) -> bool:
    """Whether nia's entry was written for ``client`` (its ``--client``)."""
    if not is_nia_entry(value) or not isinstance(value, Mapping):
        return False
    args = value.get("args")
    words = [str(word) for word in args] if isinstance(args, list) else []
    return any(pair == ("--client", client.name) for pair in itertools.pairwise(words))


# -- install / uninstall -----------------------------------------------------------------------------


@dataclass
class Plan:
    """What one install or uninstall does to one file."""

    settings: SettingsFile
    text: str | None
    """The new text; ``None``: delete the file (nia's entry was all it held)."""
    what: str
    changed: bool = True
    notes: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.settings.path

    def apply(self) -> None:
        if not self.changed:
            return
        if self.text is None:
            self.settings.remove()
            self.settings.remove_folder_if_empty()
        else:
            self.settings.write(self.text)


def given_file(path: str | Path) -> SettingsFile:
    """A file the user named with ``--config``: its own folder is its edge (the user chose it)."""
    absolute = Path(os.path.abspath(path))
    return SettingsFile(absolute, absolute.parent, str(absolute.parent))


def plan_install(client: McpClient, scope: Scope, root: Path, run: Launch, config: SettingsFile | None = None) -> Plan:
    """nia's entry in ``client``'s file of ``scope`` (or ``config``), every other entry kept."""
    place, settings, where = _target(client, scope, root, config)
    text = settings.read_text()
    notes = [place.note] if place.note else []
    if place.owner and text and is_nia_entry(_json_at(settings, text, (*where, SERVER_NAME))):
        return Plan(settings, text, f"nia's server there ({place.owner}'s) serves {client.title} too", False, notes)
    if place.style == "codex":
        new = _toml_install(settings, text or "", where, run)
    else:
        new = _json_install(settings, text, where, entry(place.style, run), run)
    changed = new != text
    what = f"server {SERVER_NAME!r} runs {run.shown()}" if changed else "nia's server is already there"
    return Plan(settings, new, what, changed, notes)


def plan_uninstall(client: McpClient, scope: Scope, root: Path, config: SettingsFile | None = None) -> Plan:
    """``client``'s file of ``scope`` without nia's entry (and without what nia alone had made)."""
    place, settings, where = _target(client, scope, root, config)
    text = settings.read_text()
    if text is None or not text.strip():
        return Plan(settings, text, "no nia server to remove", changed=False)
    if place.owner and not _serves(_json_at(settings, text, (*where, SERVER_NAME)), client):
        return Plan(settings, text, f"nia's server there is {place.owner}'s; left as it is", changed=False)
    remove = _toml_uninstall if place.style == "codex" else _json_uninstall
    new = remove(settings, text, where)
    if new == text:
        return Plan(settings, text, "no nia server to remove", changed=False)
    return Plan(settings, new, "removed (nia's server was all it held)" if new is None else "removed nia's server")


def _target(
    client: McpClient, scope: Scope, root: Path, config: SettingsFile | None
) -> tuple[Place, SettingsFile, tuple[str, ...]]:
    """The place, the file and where its servers lie: ``--config`` is the client's format at the top level."""
    if config is None:
        place = client.place(scope, root)
        return place, place.file(root), place.servers(root)
    if not client.places:
        return Place(lambda root: config, "plain"), config, ("mcpServers",)
    place = client.place(client.default, root)
    return place, config, place.servers(root)[-1:]


# -- JSON --------------------------------------------------------------------------------------------


def _json_install(settings: SettingsFile, text: str | None, where: tuple[str, ...], value: Any, run: Launch) -> str:
    name = str(settings.path)
    if text is None or not text.strip():
        text = "{}\n"
    data = parse_json_object(text, name)
    node: Any = data
    for depth, step in enumerate(where):
        inner = node.get(step) if isinstance(node, dict) else None
        if inner is None:
            nested: Any = {SERVER_NAME: value}
            for outer in reversed(where[depth + 1 :]):
                nested = {outer: nested}
            return json_text.append(text, where[:depth], nested, name=step)
        if not isinstance(inner, dict):
            shown = ".".join(where[: depth + 1])
            raise SettingsError(settings.path, f"'{shown}' is not an object; nothing was changed")
        node = inner
    existing = node.get(SERVER_NAME)
    if existing is not None and not is_nia_entry(existing, run.command):
        raise SettingsError(
            settings.path,
            f"'{'.'.join((*where, SERVER_NAME))}' is a server that does not run nia; nothing was changed "
            "(rename or remove it first)",
        )
    if existing == value:
        return text
    if existing is not None:  # an earlier install (another program, other arguments): the new entry replaces it
        text = json_text.remove(text, (*where, SERVER_NAME))
    return json_text.append(text, where, value, name=SERVER_NAME)


def _json_at(settings: SettingsFile, text: str, where: tuple[str, ...]) -> Any:
    """The value at ``where`` in a JSON file's text (``None`` when a step is missing)."""
    node: Any = parse_json_object(text, str(settings.path)) if text.strip() else {}
    for step in where:
        node = node.get(step) if isinstance(node, dict) else None
    return node


def _json_uninstall(settings: SettingsFile, text: str, where: tuple[str, ...]) -> str | None:
    if not is_nia_entry(_json_at(settings, text, (*where, SERVER_NAME))):
        return text
    text = json_text.remove(text, (*where, SERVER_NAME))
    for depth in range(len(where), 0, -1):  # the containers nia's entry was alone in go with it
        container = json.loads(text)
        for step in where[:depth]:
            container = container[step]
        if container:
            break
        text = json_text.remove(text, where[:depth])
    return None if not json.loads(text) else text


# -- TOML (Codex) ------------------------------------------------------------------------------------


def _toml_document(settings: SettingsFile, text: str) -> Any:
    import tomlkit

    from nia_core.project.toml import ConfigError, check_nesting

    try:
        check_nesting(text, str(settings.path))
        return tomlkit.parse(text)
    except ConfigError as exc:
        raise SettingsError(settings.path, str(exc).split(": ", 1)[-1]) from None
    except RecursionError:
        raise SettingsError(settings.path, "nested too deeply; nia refuses such a file") from None
    except tomlkit.exceptions.TOMLKitError as exc:
        raise SettingsError(settings.path, f"not valid TOML ({exc}); nothing was changed") from None


def _toml_install(settings: SettingsFile, text: str, where: tuple[str, ...], run: Launch) -> str:
    import tomlkit

    document = _toml_document(settings, text)
    (key,) = where
    servers = document.get(key)
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        document[key] = servers
    elif not isinstance(servers, dict):
        raise SettingsError(settings.path, f"'{key}' is not a table; nothing was changed")
    existing = servers.get(SERVER_NAME)
    if existing is not None and not is_nia_entry(existing, run.command):
        raise SettingsError(
            settings.path, f"[{key}.{SERVER_NAME}] is a server that does not run nia; nothing was changed"
        )
    table = tomlkit.table()
    table["command"] = run.command
    table["args"] = list(run.args)
    table["env_vars"] = list(ENVIRONMENT)  # Codex passes a fixed few variables, and these
    table["required"] = True  # codex exec waits for nia's tools before its first request, and fails without them
    table["startup_timeout_sec"] = CODEX_STARTUP_SECONDS
    if existing is not None and existing.unwrap() == table.unwrap():
        return text
    servers[SERVER_NAME] = table
    return tomlkit.dumps(document)


def _toml_uninstall(settings: SettingsFile, text: str, where: tuple[str, ...]) -> str | None:
    document = _toml_document(settings, text)
    (key,) = where
    servers = document.get(key)
    if not isinstance(servers, dict) or not is_nia_entry(servers.get(SERVER_NAME)):
        return text
    import tomlkit

    last = list(document)[-1] == key and list(servers)[-1] == SERVER_NAME
    del servers[SERVER_NAME]
    if not servers:
        del document[key]
    rest = tomlkit.dumps(document)
    if last and rest.endswith("\n\n"):  # the blank line tomlkit put before the table nia appended
        rest = rest[:-1]
    return rest if rest.strip() else None


# -- the printed entry -------------------------------------------------------------------------------


def json_entry(run: Launch) -> str:
    return json.dumps({"mcpServers": {SERVER_NAME: entry("plain", run)}}, indent=2) + "\n"


def on_path(command: str) -> str | None:
    """What a shared file's ``nia`` runs here (``None``: nothing on ``PATH``), to say when it is not this nia."""
    found = shutil.which(command)
    return os.path.realpath(found) if found else None


# -- what the client loads itself --------------------------------------------------------------------


def client_views(name: str | None, root: Path) -> Callable[[], Mapping[str, Narrow]] | None:
    """How the server shows ``name``'s client the sources it gets part of itself, as the agent hooks do.

    The client's agent adapter knows the files it loads (its newest known
    behaviour: an MCP client says no version); ``[hooks] deliver_native_files``
    in ``.nia/project.toml`` applies here too. ``None``: the client gets everything.
    """
    client = CLIENTS.get(name or "")
    if client is None or client.host is None:
        return None
    from nia_core.agents import ADAPTERS, adapter
    from nia_core.agents.hook_settings import deliver_native_files
    from nia_core.agents.native import views

    if client.host not in ADAPTERS:
        return None
    host = adapter(client.host)
    said = [""]

    def current() -> Mapping[str, Narrow]:
        deliver, problem = deliver_native_files(root, host.name)
        if problem and problem != said[0]:  # once per problem, not at every observation
            log.warning("%s", problem)
        said[0] = problem
        return {} if deliver else views(host.native_keys(None, root), root)  # the host's settings may change

    return current
