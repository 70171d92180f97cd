"""The ``nia/git`` source: one per repository, project root and settings, so its observer lives on."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from nia_core import ContextSource, Location
from nia_plugins.git.repository import Repository, find_repository
from nia_plugins.git.settings import Settings, settings_from


@lru_cache(maxsize=64)
def git_source(repo: Repository, root: str, settings: Settings) -> ContextSource:
    """One source per repository, project root and settings, so its observer (and its caches) live on.

    Observing and running git is imported here, once a repository is found: a ``.git`` that is
    none (an empty folder marking a project root, a broken link) costs no more than finding that out.
    """
    from nia_plugins.git.observer import Observer
    from nia_plugins.git.render import render_baseline, render_removal, render_update
    from nia_plugins.git.value import KEY, GitStatusCodec

    return ContextSource(
        key=KEY,
        load=Observer(repo, root, settings),
        baseline=render_baseline,
        update=render_update,
        removal=render_removal,
        codec=GitStatusCodec(),
        timeout=settings.timeout + 1,  # the git calls share settings.timeout; a second for the rest
        description="The git branch, HEAD and working tree of the repository the agent works in.",
    )


def sources(location: Location, config: dict[str, Any]) -> list[ContextSource]:
    """What the plugin's ``nia_context_sources`` answers: one source inside a work tree, else none."""
    settings = settings_from(config)
    repo = find_repository(str(location.path))
    if repo is None:
        return []
    return [git_source(repo, str(location.root), settings)]
