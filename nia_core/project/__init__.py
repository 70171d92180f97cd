"""The project layer: locating the project, reading ``.nia/*.toml``, the context-merging rules.

Workflows (``nia TARGET OPERATION``) are assembled by :func:`assemble_workflow`;
see ``docs/project.md``.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time __getattr__ imports on demand: locating a project needs no workflow code
    from nia_core.project.location import locate as locate
    from nia_core.project.toml import read_toml as read_toml
    from nia_core.project.workflow import Workflow as Workflow
    from nia_core.project.workflow import assemble_workflow as assemble_workflow

_EXPORTS = {
    "locate": "nia_core.project.location",
    "read_toml": "nia_core.project.toml",
    "Workflow": "nia_core.project.workflow",
    "assemble_workflow": "nia_core.project.workflow",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import an exported name on first use (PEP 562) and keep it."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nia_core.project' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
