"""``nia mcp``: the context, its changes and the workflows served over the Model Context Protocol.

Only :mod:`nia_core.mcp.server` and :mod:`nia_core.mcp.run` import the SDK
(the optional ``mcp`` extra); importing this package does not.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""
