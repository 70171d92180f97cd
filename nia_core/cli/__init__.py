"""The CLI layer: click commands, output formatting, exit codes. Nothing below knows it.

``main`` is the ``nia`` console script. ``nia hook HOST`` for a host of
:data:`nia_core.agents.ADAPTERS` (exactly that, as the installed hooks run
it) skips click: an agent waits for it at every prompt, so it is the thin
client of a resident process (:mod:`nia_core.resident.client`), and loads the
hook's own path only when it answers in-process.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: the hook's thin client starts here (typing costs it ~4 ms)
if TYPE_CHECKING:
    from typing import Any


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if len(argv) == 2 and argv[0] == "hook":
        from nia_core.agents import ADAPTERS

        if argv[1] in ADAPTERS:
            from nia_core.resident.client import main as hook_main

            sys.exit(hook_main(argv[1]))
    from nia_core.cli.commands import main as click_main

    click_main()


def __getattr__(name: str) -> Any:
    if name == "cli":
        from nia_core.cli.commands import cli

        return cli
    raise AttributeError(f"module 'nia_core.cli' has no attribute {name!r}")


__all__ = ["cli", "main"]
