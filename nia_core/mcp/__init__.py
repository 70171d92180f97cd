"""``nia mcp``: the context, its changes and the workflows served over the Model Context Protocol.

Only :mod:`nia_core.mcp.server` and :mod:`nia_core.mcp.run` import the SDK
(the optional ``mcp`` extra); importing this package does not.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from __future__ import annotations

from nia_core.about import extra_install


def missing_sdk(exc: ImportError) -> str:
    """One line for a server that cannot import the SDK or one of its dependencies (not installed, or broken)."""
    needs = f"nia mcp needs the MCP SDK, the 'mcp' extra: {extra_install('mcp')}"
    if exc.name:
        return f"{needs} (no module named {exc.name!r})"
    return f"{needs} ({exc})"
