"""Real ``nia`` processes against a project with hostile local plugins."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

NIA = [sys.executable, "-c", "from nia_core.cli import main; main()"]
LIMIT = 60
"""Seconds a process may take before the test calls it a hang (generous: the machine is shared)."""


def project(tmp_path: Path, plugins: dict[str, str], *, agents: str | None = "Be brief.\n") -> Path:
    root = tmp_path / "project"
    folder = root / ".nia" / "plugins"
    folder.mkdir(parents=True)
    for name, source in plugins.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
    if agents is not None:
        (root / "AGENTS.md").write_text(agents)
    return root


def nia(
    root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = LIMIT
) -> subprocess.CompletedProcess[str]:
    """Run ``nia ARGS`` in ``root``; a hang fails the test (``TimeoutExpired``) instead of freezing it."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NIA_")}
    environment.update(env or {})
    return subprocess.run([*NIA, *args], cwd=root, env=environment, capture_output=True, text=True, timeout=timeout)


GOOD = """
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource("good/a", lambda: "fine", lambda v: "Good plugin says " + v)]
"""
