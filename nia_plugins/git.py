"""``nia/git``: the repository's branch, HEAD and working tree, kept current during a session.

The code is in :mod:`nia_plugins.gitstatus`. This module is what nia loads
at every start, so it holds the hook alone: at a Location with no ``.git``
above it (and no ``[plugins.nia-git]`` settings to check) there is no
repository to describe, and the rest is never imported.
"""

from __future__ import annotations

import os
from typing import Any

from nia_core import ContextSource, Location, hookimpl

NIA_NAMESPACE = "nia"


def _dotgit_above(start: str) -> bool:
    """Whether ``start`` or a folder above it holds a ``.git`` of any kind: git finds a repository nowhere else."""
    folder = start
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


@hookimpl
def nia_context_sources(location: Location, config: dict[str, Any]) -> list[ContextSource]:
    if not config and not _dotgit_above(str(location.path)):
        return []
    from nia_plugins.gitstatus import sources

    return sources(location, config)
