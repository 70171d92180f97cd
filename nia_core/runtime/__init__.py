"""The runtime: the embedding API beneath every door (CLI, agent hooks, MCP).

``Runtime`` wires the plugin host, the providers and the store into
boundaries and turns; see ``docs/sessions.md`` and ``docs/architecture.md``.
This module is public: an embedder imports what it needs from here (the
store it passes in, workflows), not from the internal packages below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nia_core.lazy import lazy_exports

if TYPE_CHECKING:  # at run time __getattr__ imports on demand: a plugin host alone needs no store code
    from nia_core.project import Workflow as Workflow
    from nia_core.project import assemble_workflow as assemble_workflow
    from nia_core.project import locate as locate
    from nia_core.runtime.attached import attach as attach
    from nia_core.runtime.attached import attached_id as attached_id
    from nia_core.runtime.reports import BoundaryReport as BoundaryReport
    from nia_core.runtime.reports import Outcome as Outcome
    from nia_core.runtime.runtime import Runtime as Runtime
    from nia_core.runtime.runtime import Where as Where
    from nia_core.runtime.turn_report import TurnReport as TurnReport
    from nia_core.sessions import Store as Store
    from nia_core.sessions import StoreError as StoreError
    from nia_core.sessions import open_store as open_store

__all__, __getattr__, __dir__ = lazy_exports(__name__)
