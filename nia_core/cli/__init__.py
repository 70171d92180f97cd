"""The CLI layer: click commands, output formatting, exit codes. Nothing below knows it."""

from nia_core.cli.main import cli, main

__all__ = ["cli", "main"]
