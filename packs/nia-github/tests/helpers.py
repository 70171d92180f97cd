"""Helpers for the pack's tests."""

from __future__ import annotations

from pathlib import Path

import nia_github

NAME = "nia-github"
SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


def write_checkout(
    root: Path,
    *,
    branch: str = "feature",
    origin: str = "https://github.com/acme/shop.git",
    upstream: str | None = None,
) -> Path:
    """A ``.git`` folder as git leaves it after ``git clone`` and ``git switch -c BRANCH`` (and a push -u)."""
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (git / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    remotes = f'[remote "origin"]\n\turl = {origin}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    if upstream:
        remotes += f'[remote "upstream"]\n\turl = {upstream}\n\tfetch = +refs/heads/*:refs/remotes/upstream/*\n'
    (git / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        + remotes
        + '[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n'
        + f'[branch "{branch}"]\n\tremote = origin\n\tmerge = refs/heads/{branch}\n'
    )
    return git


def source_at(location, config: dict | None = None):
    """The plugin's source at ``location`` as its hook returns it (``None`` when it contributes none).

    Its ``load`` is the plugin's own loader, called directly: nia's refresh
    schedule, which a host's view adds around it, is tested through the kit's
    conversations instead.
    """
    sources = nia_github.nia_context_sources(location, config or {})
    return sources[0] if sources else None


def host_with_plugin():
    """A host holding only this plugin, under its entry-point name (its config table's name)."""
    from nia_core.testing import add_plugin, make_host

    host = make_host()
    add_plugin(host, nia_github, name=NAME)
    return host
