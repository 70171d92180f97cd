"""``.nia/commands.toml``: the workflows (``nia TARGET OPERATION``), read and validated as ``project.toml`` is.

Only the commands that list or run a workflow (``nia --help``, ``nia
TARGET OPERATION``, ``nia mcp``'s prompts) read these records; a boundary
reads ``project.toml`` alone, so an agent hook never imports this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nia_core.project.config import ContextEntry, TableReader, load_checked
from nia_core.project.keypath import KeyPath

COMMANDS_FILE = "commands.toml"
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]*")
"""A target's or an operation's name: a command name."""


@dataclass(frozen=True)
class Operation:
    name: str
    description: str
    task_prompt: str
    user_input: bool
    commit: bool
    context: tuple[ContextEntry, ...]


@dataclass(frozen=True)
class Target:
    """One ``[[workflows]]`` entry: a target such as ``issue`` or ``code``."""

    name: str
    description: str
    role_prompt: str
    task_prompt: str
    context: tuple[ContextEntry, ...]
    operations: tuple[Operation, ...]

    def operation(self, name: str) -> Operation | None:
        return next((op for op in self.operations if op.name == name), None)


@dataclass(frozen=True)
class CommandsConfig:
    targets: tuple[Target, ...] = ()
    exists: bool = False

    def target(self, name: str) -> Target | None:
        return next((t for t in self.targets if t.name == name), None)


def _name(reader: TableReader, table: dict[str, Any], key: str, where: KeyPath) -> str:
    value = reader.string(table, key, where, required=True)
    if not NAME_PATTERN.fullmatch(value):
        reader.fail(
            where.key(key),
            f'"{value}" is not a command name: use lowercase letters, digits, "-" and "_"',
        )
    return value


def _commands(reader: TableReader, data: dict[str, Any]) -> CommandsConfig:
    root = KeyPath()
    reader.table(data, root, ("workflows",))
    targets: list[Target] = []
    seen: dict[str, KeyPath] = {}
    for where, item in reader.tables(data.get("workflows", []), root, "workflows"):
        table = reader.table(
            item, where, ("target", "description", "role_prompt", "task_prompt", "context", "operations")
        )
        name = _name(reader, table, "target", where)
        if name in seen:
            reader.fail(where.key("target"), f'"{name}" is already defined by {seen[name]}')
        seen[name] = where
        operations: list[Operation] = []
        names: dict[str, KeyPath] = {}
        for op_where, op_item in reader.tables(table.get("operations", []), where, "operations"):
            op = reader.table(
                op_item, op_where, ("name", "description", "task_prompt", "user_input", "commit", "context")
            )
            op_name = _name(reader, op, "name", op_where)
            if op_name in names:
                reader.fail(op_where.key("name"), f'"{op_name}" is already defined by {names[op_name]}')
            names[op_name] = op_where
            operations.append(
                Operation(
                    name=op_name,
                    description=reader.string(op, "description", op_where),
                    task_prompt=reader.string(op, "task_prompt", op_where),
                    user_input=reader.get(op, "user_input", op_where, bool, False),
                    commit=reader.get(op, "commit", op_where, bool, False),
                    context=reader.entries(op, op_where),
                )
            )
        targets.append(
            Target(
                name=name,
                description=reader.string(table, "description", where),
                role_prompt=reader.string(table, "role_prompt", where),
                task_prompt=reader.string(table, "task_prompt", where),
                context=reader.entries(table, where),
                operations=tuple(operations),
            )
        )
    return CommandsConfig(tuple(targets), exists=True)


def load_commands_config(root: Path) -> CommandsConfig:
    """The validated ``.nia/commands.toml`` under ``root`` (no workflows when absent)."""
    return load_checked(root, COMMANDS_FILE, _commands, CommandsConfig())
