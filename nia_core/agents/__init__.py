"""Agent hosts: the doors through which agents that own their conversation (Claude Code, Codex, Gemini CLI,
OpenCode, GitHub Copilot CLI, Qwen Code) get nia's context.

Each host is one module of facts (:mod:`nia_core.agents.claude_code`,
:mod:`nia_core.agents.codex`) whose ``ADAPTER`` says how its hooks talk, what
its transcript records, what it loads itself and where its settings live;
:data:`ADAPTERS` is the one table of host names. The door
(:mod:`nia_core.agents.answer`) runs one hook through the runtime's boundary;
the installer (:mod:`nia_core.agents.hook_install`) edits the host's settings.
Neither names a host. Adapters are imported on demand: a hook process pays
for its own host only.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from __future__ import annotations

import importlib
import os

from nia_core.lazy import lazy_exports

TYPE_CHECKING = False  # not typing's: the hook's thin client reads ADAPTERS here

if TYPE_CHECKING:  # imported on first use: the hook's thin client reads ADAPTERS and nothing else
    from nia_core.agents.contract import HookInput as HookInput
    from nia_core.agents.contract import HostAdapter as HostAdapter
    from nia_core.agents.contract import HostInputError as HostInputError

ADAPTERS: dict[str, str] = {
    "claude-code": "nia_core.agents.claude_code",
    "codex": "nia_core.agents.codex",
    "copilot": "nia_core.agents.copilot",
    "gemini": "nia_core.agents.gemini",
    "opencode": "nia_core.agents.opencode",
    "qwen-code": "nia_core.agents.qwen_code",
}
"""Every agent host nia has hooks for: host name -> the module whose ``ADAPTER`` holds its facts.

The one place host names are listed: ``nia hook HOST``, ``nia hook
install|uninstall|status`` and the console script's fast path read it."""


DEADLINE = 20.0
"""Seconds a hook may run before nia gives up (``NIA_HOOK_DEADLINE``; the host's own timeout for it is longer)."""


def deadline() -> float:
    """``NIA_HOOK_DEADLINE`` in seconds; anything but a finite number above 0 (``nan``, ``-1``) is the default.

    Here, beside :data:`ADAPTERS`, because the hook's thin client and the door (:mod:`nia_core.agents.answer`)
    both read it and the client loads nothing else of nia's agents.
    """
    try:
        value = float(os.environ.get("NIA_HOOK_DEADLINE", DEADLINE))
    except ValueError:
        return DEADLINE
    return value if 0 < value < 1e9 else DEADLINE  # nan compares false


def adapter(name: str) -> HostAdapter:
    """The adapter of host ``name``; raises ``KeyError`` naming the known hosts."""
    module = ADAPTERS.get(name)
    if module is None:
        raise KeyError(f"unknown host {name!r} (known: {', '.join(ADAPTERS)})")
    found: HostAdapter = importlib.import_module(module).ADAPTER
    return found


_exported, __getattr__, __dir__ = lazy_exports(__name__)
__all__ = [
    "ADAPTERS",
    "DEADLINE",
    "adapter",
    "deadline",
    *_exported,
]  # the one package whose own names are exported too
