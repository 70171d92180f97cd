"""The project layer: locating the project, reading ``.nia/*.toml``, the context-merging rules.

Workflows (``nia TARGET OPERATION``) are assembled by :func:`assemble_workflow`;
see ``docs/project.md``.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from nia_core.project.location import locate
from nia_core.project.toml import read_toml
from nia_core.project.workflow import Workflow, assemble_workflow

__all__ = ["Workflow", "assemble_workflow", "locate", "read_toml"]
