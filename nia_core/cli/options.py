"""Options several commands share, declared once so their names and help stay the same everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def location_option(text: str = "A folder inside the project (default: the current one).") -> Callable[[F], F]:
    """``--location DIR``: where a command looks from; only the help text differs between commands."""
    return click.option("--location", type=click.Path(exists=True, file_okay=False), default=None, help=text)


WATCHED_PLUGINS_DIR = click.option(
    "--plugins-dir",
    "plugins_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Also load (and watch) local plugins from this folder (repeatable).",
)
"""``--plugins-dir`` of the long-running commands (``nia dev``, ``nia mcp``), which also watch the folder."""
