"""docs/cli.md lists every command of the ``nia`` command line.

Built-in commands are attached only when they run (``COMMAND_MODULES``), so
the walk imports each one first: run alone, this test checks every command.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import click

from nia_core.cli import cli
from nia_core.cli.commands import COMMAND_MODULES

REFERENCE = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()


def builtin_commands() -> dict[str, click.Command]:
    """Every built-in top-level command, each lazy command module imported."""
    commands = dict(cli.commands)
    for name, (target, _) in COMMAND_MODULES.items():
        module, _, attribute = target.partition(":")
        commands[name] = getattr(importlib.import_module(module), attribute)
    return commands


def command_paths(group: click.Group, prefix: str = "nia") -> list[str]:
    paths = []
    commands = builtin_commands() if group is cli else group.commands
    for name, command in sorted(commands.items()):
        path = f"{prefix} {name}"
        paths.append(path)
        if isinstance(command, click.Group):
            paths += command_paths(command, path)
    return paths


def test_the_walk_reaches_every_builtin_command_and_its_subcommands():
    paths = command_paths(cli)
    assert {f"nia {name}" for name in COMMAND_MODULES} <= set(paths)
    assert {"nia session send", "nia db check", "nia plugins list"} <= set(paths)


def test_every_command_is_in_the_reference():
    missing = [path for path in command_paths(cli) if f"`{path}" not in REFERENCE and f"{path} " not in REFERENCE]
    assert missing == []


def test_every_global_option_is_in_the_reference():
    options = [opt for param in cli.params for opt in param.opts if opt.startswith("-")]
    assert [opt for opt in options if f"`{opt}" not in REFERENCE] == []


def test_each_command_is_listed_once():
    """A command listed twice (with two wordings) leaves a reader guessing which is right."""
    rows = re.findall(r"^\| `(nia [a-z-]+(?: [a-z-]+)?)[ `]", REFERENCE, re.M)
    assert sorted(row for row in set(rows) if rows.count(row) > 1) == []
