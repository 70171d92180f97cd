"""``nia/git``: the repository's branch, HEAD and working tree, kept current during a session.

This module is what nia loads at every start, so it holds the hook alone: at
a Location with no ``.git`` above it (and no ``[plugins.nia-git]`` settings
to check) there is no repository to describe, and the rest is never imported.
The rest, by responsibility:

- observing ``.git``: :mod:`~nia_plugins.git.repository` (finding it, trusting
  its git directory), :mod:`~nia_plugins.git.gitdir` (what git keeps there),
  :mod:`~nia_plugins.git.outside` (whether git would read outside the project),
  :mod:`~nia_plugins.git.observer` (running git only when something moved);
- running git safely: :mod:`~nia_plugins.git.process` (a process group with a
  deadline), :mod:`~nia_plugins.git.running` (which git, what environment),
  :mod:`~nia_plugins.git.programs` (what the repository's config names that
  git could run), :mod:`~nia_plugins.git.porcelain` (reading its answers);
- the value and its text: :mod:`~nia_plugins.git.value`,
  :mod:`~nia_plugins.git.escape`, :mod:`~nia_plugins.git.render`;
- :mod:`~nia_plugins.git.settings`, :mod:`~nia_plugins.git.source` (the
  source).

Like every built-in, it uses only ``nia_core``'s public names.
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
    from nia_plugins.git.source import sources

    return sources(location, config)
