"""The project layer: locating the project, reading ``.nia/*.toml``, the context-merging rules.

Workflows (``nia TARGET OPERATION``) are assembled by :func:`assemble_workflow`;
see ``docs/project.md``.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nia_core.lazy import lazy_exports

if TYPE_CHECKING:  # at run time __getattr__ imports on demand: locating a project needs no workflow code
    from nia_core.project.root import locate as locate
    from nia_core.project.toml import read_toml as read_toml
    from nia_core.project.workflow import Workflow as Workflow
    from nia_core.project.workflow import assemble_workflow as assemble_workflow

__all__, __getattr__, __dir__ = lazy_exports(__name__)
