"""The resident context process: a warm nia that answers agent hooks, and the thin client that asks it.

A hook command (``nia hook claude-code``) is a fresh process at every prompt.
The resident process keeps what a fresh process builds every time (the
plugin host, the registry views, the imported plugins, the store's code)
and runs the same door, :func:`nia_core.agents.answer.run`, for each hook it is
sent; the hook command becomes a client that imports only what it needs to
reach it (:mod:`nia_core.resident.client`) and answers in-process whenever the
resident process cannot. See docs/hosts.md ("The resident process").

Modules: :mod:`~nia_core.resident.scope` (what a resident must share with a
hook), :mod:`~nia_core.resident.folder` (the private folder of its socket),
:mod:`~nia_core.resident.client`, :mod:`~nia_core.resident.server`,
:mod:`~nia_core.resident.residents` (listing and stopping them). The first three
use the standard library only: the client imports nothing else.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""
