"""The runtime: the embedding API beneath every door (CLI, agent hooks, MCP).

``Runtime`` wires the plugin host, the providers and the store into
boundaries and turns; see ``docs/sessions.md`` and ``docs/architecture.md``.
This module is public: an embedder imports what it needs from here (the
store it passes in, workflows), not from the internal packages below.
"""

from nia_core.project import Workflow, assemble_workflow, locate
from nia_core.runtime.attached import attach, attached_id
from nia_core.runtime.reports import BoundaryReport, Outcome, TurnReport
from nia_core.runtime.runtime import Runtime, Where
from nia_core.sessions import Store, StoreError, open_store

__all__ = [
    "BoundaryReport",
    "Outcome",
    "Runtime",
    "Store",
    "StoreError",
    "TurnReport",
    "Where",
    "Workflow",
    "assemble_workflow",
    "attach",
    "attached_id",
    "locate",
    "open_store",
]
