"""The runtime: the embedding API beneath every door (CLI, agent hooks, MCP).

``Runtime`` wires the plugin host, the providers and the store into
boundaries and turns; see ``docs/sessions.md`` and ``docs/architecture.md``.
"""

from nia_core.runtime.attached import attach, attached_id
from nia_core.runtime.reports import BoundaryReport, Outcome, TurnReport
from nia_core.runtime.runtime import Runtime, Where

__all__ = ["BoundaryReport", "Outcome", "Runtime", "TurnReport", "Where", "attach", "attached_id"]
