"""The CLI layer: click commands, output formatting, exit codes. Nothing below knows it.

``main`` is the ``nia`` console script. ``nia hook claude-code`` and ``nia hook
codex`` (exactly that, as the installed hooks run them) skip click: an agent
waits for them at every prompt, so they load only the hook's own path.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from __future__ import annotations

import sys
from typing import Any

HOOK_HOSTS = ("claude-code", "codex")


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if len(argv) == 2 and argv[0] == "hook" and argv[1] in HOOK_HOSTS:
        from nia_core.agents.answer import main as hook_main

        hook_main(argv[1])
    from nia_core.cli.main import main as click_main

    click_main()


def __getattr__(name: str) -> Any:
    if name == "cli":
        from nia_core.cli.main import cli

        return cli
    raise AttributeError(f"module 'nia_core.cli' has no attribute {name!r}")


__all__ = ["cli", "main"]
