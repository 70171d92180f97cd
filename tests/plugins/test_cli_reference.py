"""docs/cli.md lists every command of the ``nia`` command line."""

from __future__ import annotations

from pathlib import Path

import click

from nia_core.cli import cli

REFERENCE = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()


def command_paths(group: click.Group, prefix: str = "nia") -> list[str]:
    paths = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        paths.append(path)
        if isinstance(command, click.Group):
            paths += command_paths(command, path)
    return paths


def test_every_command_is_in_the_reference():
    missing = [path for path in command_paths(cli) if f"`{path}" not in REFERENCE and f"{path} " not in REFERENCE]
    assert missing == []


def test_every_global_option_is_in_the_reference():
    options = [opt for param in cli.params for opt in param.opts if opt.startswith("-")]
    assert [opt for opt in options if f"`{opt}" not in REFERENCE] == []
