"""nia-github: the current branch's pull request, its checks and unresolved review comments, kept current.

One source, ``github/pull-request``, at a Location inside a git work tree with
a remote on GitHub (``github.com``, or the host ``NIA_GITHUB_HOST`` names):

- the branch's pull request: number, title, state (open, draft, closed,
  merged) and review decision;
- the check runs of its head commit: each check's name and verdict;
- unresolved review threads: how many, and the first few (path, line,
  author, the first line of the comment), quoted as data.

GitHub is asked through nia's one HTTP client with a token from
``GH_TOKEN``/``GITHUB_TOKEN`` or ``gh auth token``. The source has
``refresh`` set (60 s): nia keeps each answer for that long and asks for the
next one in the background, so a prompt never waits on the network in a
process that stays up. Built on nia's public API only.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from nia_core import ContextSource, Location, hookimpl

from nia_github.render import render_baseline, render_removal, render_update
from nia_github.repository import Checkout, find_checkout, parse_remote, read_config
from nia_github.settings import Api, Settings, api_from_environment, settings_from
from nia_github.source import PullRequestStatus

__version__ = "0.1.0"

NIA_NAMESPACE = "github"


@lru_cache(maxsize=64)
def pull_request_source(checkout: Checkout, root: str, settings: Settings, api: Api) -> ContextSource:
    """One source per checkout and settings: the same object from one boundary to the next."""
    checks, comments = settings.checks, settings.comments
    return ContextSource(
        key="github/pull-request",
        load=PullRequestStatus(checkout, root, settings, api),
        baseline=lambda value: render_baseline(value, checks, comments),
        update=lambda old, new: render_update(old, new, checks, comments),
        removal=render_removal,
        timeout=settings.timeout + 1.0,
        refresh=settings.refresh,
        description="The current branch's pull request on GitHub: state, review decision, checks, open threads.",
    )


def on_github(checkout: Checkout, host: str) -> bool:
    """Whether any remote of the repository is on ``host`` (else there is nothing to ask GitHub)."""
    return any(
        (remote := parse_remote(table.get("url", ""))) is not None and remote.host == host
        for (section, _), table in read_config(checkout).items()
        if section == "remote"
    )


@hookimpl
def nia_context_sources(location: Location, config: dict[str, Any]) -> list[ContextSource]:
    settings = settings_from(config)
    checkout = find_checkout(str(location.path))
    if checkout is None:
        return []
    api = api_from_environment()
    if not on_github(checkout, api.host):
        return []
    return [pull_request_source(checkout, str(location.root), settings, api)]
