"""Which GitHub repository and branch a folder is on, read from ``.git`` without running git.

Only three things are taken from the git directory: the branch ``HEAD``
names, and from ``config`` the remotes' URLs and the branch's remote and
merge ref. Every file goes through nia's checked reader with the work tree
(or, for a linked worktree, the git directory that points back to it) as its
edge and a size limit. Nothing from a remote URL but the host, owner and
repository name is kept: a URL can carry a token.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

from nia_core import StatCache

files = StatCache()

SMALL = 64 * 1024
CONFIG_LIMIT = 1024 * 1024
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
_REMOTE_URL = re.compile(
    r"(?:(?:https?|git|ssh)://(?:[^@/]+@)?(?P<host1>[^/:]+)(?::\d+)?/"
    r"|(?:[^@/]+@)?(?P<host2>[^/:]+):)"
    r"/?(?P<owner>[^/]+)/(?P<repo>[^/]+?)(?:\.git)?/?"
)


@dataclass(frozen=True)
class Checkout:
    """Where a work tree keeps its git data."""

    top: str
    """The work tree's top folder (holds ``.git``)."""
    gitdir: str
    """The git directory ``HEAD`` is in (a linked worktree's own)."""
    common: str
    """The git directory ``config`` is in."""
    edge: str
    """The folder every file read must lie in."""


@dataclass(frozen=True)
class Remote:
    host: str
    owner: str
    repo: str

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"


def _read(path: str, edge: str, limit: int = SMALL) -> str | None:
    try:
        content = files.read(path, root=edge, limit=limit)
    except OSError:
        return None
    if content.oversize:
        return None
    return content.data.decode("utf-8", errors="replace")


def find_checkout(start: str) -> Checkout | None:
    """The nearest ``.git`` upward from ``start`` (a folder, or a linked worktree's ``gitdir:`` file)."""
    folder = start
    while True:
        dotgit = os.path.join(folder, ".git")
        if os.path.lexists(dotgit):
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    if os.path.isdir(dotgit) and not os.path.islink(dotgit):
        return Checkout(folder, dotgit, dotgit, dotgit)  # nia's reader refuses .git's files below a work tree root
    text = _read(dotgit, folder)
    if text is None or not text.startswith("gitdir:"):
        return None
    gitdir = os.path.normpath(os.path.join(folder, text[len("gitdir:") :].strip()))
    # A linked worktree's git directory names the .git file that points to it; anything else (a repository
    # that points somewhere it does not belong) is not followed.
    back = _read(os.path.join(gitdir, "gitdir"), gitdir)
    if back is None or os.path.realpath(os.path.join(gitdir, back.strip())) != os.path.realpath(dotgit):
        return None
    common_text = _read(os.path.join(gitdir, "commondir"), gitdir)
    common = os.path.normpath(os.path.join(gitdir, common_text.strip())) if common_text else gitdir
    if os.path.realpath(gitdir) != os.path.realpath(os.path.join(common, "worktrees", os.path.basename(gitdir))):
        return None
    return Checkout(folder, gitdir, common, common)


def current_branch(checkout: Checkout) -> str | None:
    """The branch ``HEAD`` names; ``None`` when detached or unreadable."""
    head = _read(os.path.join(checkout.gitdir, "HEAD"), checkout.edge)
    if head is None or not head.startswith("ref: refs/heads/"):
        return None
    branch = head[len("ref: refs/heads/") :].strip()
    return branch if branch and all(ch.isprintable() and not ch.isspace() for ch in branch) else None


@lru_cache(maxsize=16)
def parse_config(text: str) -> dict[tuple[str, str], dict[str, str]]:
    """``{(section, subsection): {key: value}}`` of a git config file: sections, quoted values, comments.

    Enough for ``[remote "origin"] url`` and ``[branch "x"] remote``/``merge``;
    includes are not followed (nia reads no file the repository points to).
    """
    sections: dict[tuple[str, str], dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            header = re.fullmatch(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]', line)
            if header is None:
                current = None
                continue
            name, sub = header.group(1).lower(), re.sub(r"\\(.)", r"\1", header.group(2) or "")
            if not header.group(2) and "." in name:
                name, _, sub = name.partition(".")
            current = sections.setdefault((name, sub), {})
            continue
        if current is None:
            continue
        key, sep, value = line.partition("=")
        key = key.strip().lower()
        value = value.strip() if sep else "true"
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            value = value[1:-1]
        else:
            value = re.split(r"\s[#;]", value, maxsplit=1)[0].strip()
        current.setdefault(key, value)
    return sections


def read_config(checkout: Checkout) -> dict[tuple[str, str], dict[str, str]]:
    text = _read(os.path.join(checkout.common, "config"), checkout.edge, CONFIG_LIMIT)
    return parse_config(text) if text is not None else {}


def parse_remote(url: str) -> Remote | None:
    """``host``, ``owner``, ``repo`` of a remote URL (https, ssh, scp-like); ``None`` for anything else."""
    match = _REMOTE_URL.fullmatch(url.strip())
    if match is None:
        return None
    host = (match["host1"] or match["host2"] or "").lower()
    owner, repo = match["owner"], match["repo"]
    if not _NAME.fullmatch(owner) or not _NAME.fullmatch(repo) or repo in (".", ".."):
        return None
    return Remote(host, owner, repo)


@dataclass(frozen=True)
class Target:
    """The pull request to look for: ``head_owner:head_branch`` into ``base``."""

    base: Remote
    head_owner: str
    head_branch: str
    local_branch: str


def target(config: dict[tuple[str, str], dict[str, str]], branch: str, host: str) -> Target | None:
    """Where the branch's pull request would be: the ``upstream`` remote if it is on ``host`` (a fork's
    parent), else the branch's own remote (``branch.NAME.remote``, else ``origin``)."""
    tracking = config.get(("branch", branch), {})
    remote_name = tracking.get("remote", "origin")
    head = parse_remote(config.get(("remote", remote_name), {}).get("url", ""))
    if head is None or head.host != host:
        return None
    base = parse_remote(config.get(("remote", "upstream"), {}).get("url", ""))
    if base is None or base.host != host:
        base = head
    merge = tracking.get("merge", "")
    head_branch = merge[len("refs/heads/") :] if merge.startswith("refs/heads/") else branch
    return Target(base, head.owner, head_branch, branch)
