"""Building throwaway projects and running the CLI inside them."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

from click.testing import CliRunner, Result

from nia_core.cli import cli

EXAMPLES = Path(__file__).parent / "examples"


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content))
    return root


def project(
    root: Path, *, project_toml: str = "", commands_toml: str = "", files: dict[str, str | bytes] | None = None
) -> Path:
    """A project at ``root`` with ``.nia/project.toml``, ``.nia/commands.toml`` and ``files``."""
    (root / ".nia").mkdir(parents=True, exist_ok=True)
    write(root, {".nia/project.toml": project_toml, ".nia/commands.toml": commands_toml, **(files or {})})
    return root


def example(name: str, tmp_path: Path, folder: str = "project") -> Path:
    """A copy of the fixture project ``examples/NAME`` (so runs can write their logs)."""
    root = tmp_path / folder
    shutil.copytree(EXAMPLES / name, root)
    return root


def run(root: Path | str, *args: str, input: str | None = None) -> Result:
    """``nia ARGS`` with ``root`` as the working directory; stdout and stderr kept apart."""
    previous = os.getcwd()
    os.chdir(root)
    try:
        return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    finally:
        os.chdir(previous)
