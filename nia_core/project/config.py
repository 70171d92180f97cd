"""``.nia/project.toml``, read with tomllib and validated; the reader ``.nia/commands.toml`` shares.

A wrong type, an unknown key or a missing value is a :class:`ConfigError`
naming file, line and key path, e.g. ``.nia/commands.toml:14:
[[workflows]][1].operations[0].context[2].path must be a string, not an
integer``. Parsed files are cached by their ``stat`` signature, since plugins
read ``project.toml`` at every safe boundary. ``commands.toml``'s records (the
workflows) are :mod:`nia_core.project.commands_config`'s: only the commands
that run a workflow read them.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar

from nia_core.files import Refused, Signature, read_checked, signature
from nia_core.project.keypath import KeyLines, KeyPath
from nia_core.project.paths import shown_path
from nia_core.project.toml import MAX_CONFIG_BYTES, ConfigError, config_text, parse_toml, refused_config

EntryKind = Literal["file", "directory"]
PromptFormat = Literal["md", "xml"]
FORMATS: tuple[PromptFormat, ...] = ("md", "xml")
DEFAULT_KEEP_TRANSACTIONS = 50

PROJECT_FILE = "project.toml"


@dataclass(frozen=True)
class ContextEntry:
    """One ``[[...context]]`` entry or ``--context-file``/``--context-dir`` flag."""

    kind: EntryKind
    path: str
    description: str
    origin: str
    """Where it was named: ``project.toml [[project.context]][0]``, ``--context-file``."""
    base: str | None = None
    """Where a relative ``path`` starts, when not at the root (the working directory, for flags)."""


@dataclass(frozen=True)
class ProjectInfo:
    name: str = ""
    description: str = ""
    role_prompt: str = ""
    prompt_format: PromptFormat | None = None


@dataclass(frozen=True)
class Service:
    name: str
    path: str
    config: str
    origin: str


@dataclass(frozen=True)
class CommitConfig:
    conventions: str = ""
    types: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    max_subject_length: int | None = None
    sign_off: bool | None = None

    @property
    def empty(self) -> bool:
        return self == CommitConfig()


@dataclass(frozen=True)
class ProjectConfig:
    project: ProjectInfo = ProjectInfo()
    context: tuple[ContextEntry, ...] = ()
    commit: CommitConfig = CommitConfig()
    services: tuple[Service, ...] = ()
    keep_transactions: int = DEFAULT_KEEP_TRANSACTIONS
    exists: bool = False
    """Whether ``.nia/project.toml`` exists at all."""
    session_model: str | None = None
    """``[session] model``: the model of new sessions here, unless ``--model`` or ``NIA_MODEL`` says otherwise."""


_TYPE_NAMES: dict[type, str] = {
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a float",
    list: "an array",
    dict: "a table",
}


def _type_name(value: object) -> str:
    for cls, name in _TYPE_NAMES.items():
        if type(value) is cls:
            return name
    return "a date or time" if hasattr(value, "isoformat") else type(value).__name__


T = TypeVar("T")


class TableReader:
    """Typed access to parsed TOML that reports errors with file, line and key path."""

    def __init__(self, display: str, short: str, text: str) -> None:
        self.display = display
        self.short = short
        self.lines = KeyLines(text)

    def origin(self, where: KeyPath) -> str:
        return f"{self.short} {where}"

    def fail(self, where: KeyPath, problem: str) -> NoReturn:
        line = self.lines.line_of(where)
        location = f"{self.display}:{line}" if line else self.display
        raise ConfigError(f"{location}: {where} {problem}", file=self.display, line=line or None, key=str(where))

    def table(self, value: object, where: KeyPath, allowed: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where, f"must be a table, not {_type_name(value)}")
        for key in value:
            if key not in allowed:
                self.fail(where.key(key), f"is not a known key (expected one of: {', '.join(allowed)})")
        return value

    def tables(self, value: object, where: KeyPath, name: str) -> list[tuple[KeyPath, Any]]:
        """The elements of an array of tables, each with its key path."""
        if not isinstance(value, list):
            self.fail(where.key(name), f"must be an array of tables ([[...]]), not {_type_name(value)}")
        return [(where.element(name, i), item) for i, item in enumerate(value)]

    def get(self, table: dict[str, Any], name: str, where: KeyPath, cls: type[T], default: T) -> T:
        if name not in table:
            return default
        value = table[name]
        if type(value) is not cls:
            self.fail(where.key(name), f"must be {_TYPE_NAMES[cls]}, not {_type_name(value)}")
        return value  # type: ignore[no-any-return]

    def string(self, table: dict[str, Any], name: str, where: KeyPath, *, required: bool = False) -> str:
        if required and name not in table:
            self.fail(where, f"needs a '{name}' key")
        value = self.get(table, name, where, str, "")
        if required and not value.strip():
            self.fail(where.key(name), "must not be empty")
        return value

    def strings(self, table: dict[str, Any], name: str, where: KeyPath) -> tuple[str, ...]:
        values = self.get(table, name, where, list, [])
        for i, item in enumerate(values):
            if not isinstance(item, str):
                self.fail(where.key(name).item(i), f"must be a string, not {_type_name(item)}")
        return tuple(values)

    def choice(self, table: dict[str, Any], name: str, where: KeyPath, choices: tuple[str, ...]) -> str | None:
        if name not in table:
            return None
        value = self.get(table, name, where, str, "")
        if value not in choices:
            expected = " or ".join(f'"{c}"' for c in choices)
            self.fail(where.key(name), f'must be {expected}, not "{value}"')
        return value

    def entries(self, table: dict[str, Any], where: KeyPath) -> tuple[ContextEntry, ...]:
        if "context" not in table:
            return ()
        found = []
        for path, item in self.tables(table["context"], where, "context"):
            entry = self.table(item, path, ("type", "path", "description"))
            kind = self.choice(entry, "type", path, ("file", "directory"))
            if kind is None:
                self.fail(path, 'needs a \'type\' key ("file" or "directory")')
            value = self.string(entry, "path", path, required=True)
            description = self.string(entry, "description", path)
            found.append(ContextEntry(kind, value, description, self.origin(path)))  # type: ignore[arg-type]
        return tuple(found)


def _project(reader: TableReader, data: dict[str, Any]) -> ProjectConfig:
    root = KeyPath()
    info = ProjectInfo()
    context: tuple[ContextEntry, ...] = ()
    if "project" in data:
        where = root.table("project")
        table = reader.table(data["project"], where, ("name", "description", "role_prompt", "prompt_format", "context"))
        info = ProjectInfo(
            name=reader.string(table, "name", where),
            description=reader.string(table, "description", where),
            role_prompt=reader.string(table, "role_prompt", where),
            prompt_format=reader.choice(table, "prompt_format", where, FORMATS),  # type: ignore[arg-type]
        )
        context = reader.entries(table, where)
    commit = CommitConfig()
    if "commit" in data:
        where = root.table("commit")
        table = reader.table(
            data["commit"], where, ("conventions", "types", "scopes", "max_subject_length", "sign_off")
        )
        length = table.get("max_subject_length")
        if length is not None and (type(length) is not int or length < 1):
            reader.fail(where.key("max_subject_length"), f"must be a positive integer, not {length!r}")
        sign_off = table.get("sign_off")
        if sign_off is not None and type(sign_off) is not bool:
            reader.fail(where.key("sign_off"), f"must be a boolean, not {_type_name(sign_off)}")
        commit = CommitConfig(
            conventions=reader.string(table, "conventions", where),
            types=reader.strings(table, "types", where),
            scopes=reader.strings(table, "scopes", where),
            max_subject_length=length,
            sign_off=sign_off,
        )
    services = []
    if "services" in data:
        for where, item in reader.tables(data["services"], root, "services"):
            table = reader.table(item, where, ("name", "path", "config"))
            services.append(
                Service(
                    name=reader.string(table, "name", where, required=True),
                    path=reader.string(table, "path", where, required=True),
                    config=reader.string(table, "config", where),
                    origin=reader.origin(where),
                )
            )
    keep = DEFAULT_KEEP_TRANSACTIONS
    if "logs" in data:
        where = root.table("logs")
        table = reader.table(data["logs"], where, ("keep_transactions",))
        keep = reader.get(table, "keep_transactions", where, int, DEFAULT_KEEP_TRANSACTIONS)
        if keep < 1:
            reader.fail(where.key("keep_transactions"), f"must be at least 1, not {keep}")
    session_model = None
    if "session" in data:
        where = root.table("session")
        table = reader.table(data["session"], where, ("model",))
        session_model = reader.string(table, "model", where) or None
        if session_model is not None and not re.fullmatch(r"[^/\s]+/\S+", session_model):
            reader.fail(where.key("model"), f"must be PROVIDER/MODEL, not {session_model!r}")
    if "plugins" in data:  # [plugins] disabled; each [plugins.NAME] table is that plugin's to check
        where = root.table("plugins")
        table = data["plugins"]
        if not isinstance(table, dict):
            reader.fail(where, f"must be a table, not {_type_name(table)}")
        reader.strings(table, "disabled", where)
        for name, value in table.items():
            if name != "disabled" and not isinstance(value, dict):
                reader.fail(where.key(name), f"must be a table of the plugin's settings, not {_type_name(value)}")
    return ProjectConfig(info, context, commit, tuple(services), keep, exists=True, session_model=session_model)


C = TypeVar("C")
_cache: dict[tuple[str, str], tuple[Signature, Any]] = {}
_parsed: dict[tuple[str, str], tuple[Signature, dict[str, Any] | ConfigError, str]] = {}
_lock = threading.Lock()


def _read(root: Path, filename: str) -> tuple[Signature, dict[str, Any], str] | None:
    """The parsed tables of ``root/.nia/filename`` and its text, checked; ``None`` when absent or refused.

    The one read of a ``.nia`` file: every reader of ``project.toml`` (the
    validated :class:`ProjectConfig`, the plugin host's ``[plugins]``, the
    providers' ``[providers]``, the hooks' ``[hooks]``) shares this parse and
    its change detection, the ``stat`` signature. A file that does not parse
    is remembered too, so a broken file costs one ``stat`` per look.
    """
    path = root / ".nia" / filename
    display = shown_path(path)
    try:
        cached = _parsed.get((str(path), display))  # the display too: an error names the file as shown
        if cached is not None and signature(os.stat(path)) == cached[0]:
            if isinstance(cached[1], ConfigError):
                raise cached[1]
            return cached[0], cached[1], cached[2]
        content = read_checked(path, root, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return None
    except Refused as exc:
        refused_config(display, exc.problem, path)  # ignored, as if absent: the rest of the context renders
        return None
    except OSError as exc:
        raise ConfigError(f"{display}: cannot read: {exc.strerror or exc}") from None
    if content.oversize:
        raise ConfigError(f"{display}: larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB; refused unread")
    try:
        data = parse_toml(content.data, display)
    except ConfigError as exc:
        with _lock:
            _parsed[(str(path), display)] = (content.sig, exc, "")
        raise
    text = config_text(content.data, display)
    with _lock:
        _parsed[(str(path), display)] = (content.sig, data, text)
    return content.sig, data, text


def project_tables(root: Path) -> dict[str, Any]:
    """Every table of ``root/.nia/project.toml`` as parsed, unvalidated (``{}`` when absent or refused).

    For the readers that own one table's rules (``[plugins]``, ``[providers]``,
    ``[hooks]``); raises the file's :class:`ConfigError` when it does not load.
    The dict is shared: do not modify it.
    """
    read = _read(root, PROJECT_FILE)
    return read[1] if read is not None else {}


def load_checked(root: Path, filename: str, build: Callable[[TableReader, dict[str, Any]], C], empty: C) -> C:
    path = root / ".nia" / filename
    read = _read(root, filename)
    if read is None:
        return empty
    sig, data, text = read
    cached = _cache.get((str(path), filename))
    if cached is not None and cached[0] == sig:
        return cached[1]  # type: ignore[no-any-return]  # built from these very bytes
    config = build(TableReader(shown_path(path), filename, text), data)
    with _lock:
        _cache[(str(path), filename)] = (sig, config)
    return config


def load_project_config(root: Path) -> ProjectConfig:
    """The validated ``.nia/project.toml`` under ``root`` (an empty config when absent)."""
    return load_checked(root, PROJECT_FILE, _project, ProjectConfig())
