"""Providers: lowering a :class:`~nia_core.model.ModelRequest` to a wire format and sending it.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""
