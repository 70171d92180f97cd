"""Running git safely: which git, in what environment, with what it must never do.

nia runs in freshly cloned, possibly hostile repositories, so every git
process gets a time budget, a clean environment (no ``GIT_*`` variable of the
user's, no pager, no prompt, no transport) and configuration overrides that
switch off whatever the repository's own config could make git run
(:mod:`nia_plugins.git.programs` says which).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from functools import lru_cache

from nia_plugins.git.escape import plain
from nia_plugins.git.process import Budget, Started, spawn
from nia_plugins.git.repository import Repository, inside_any
from nia_plugins.git.value import KEY

SAFE_OPTIONS = (
    "--no-pager",
    "--no-optional-locks",  # never take (or wait for) the index lock, never rewrite the index
)
"""Options every git call gets; its configuration overrides go through the environment (:func:`git_environment`)."""

log = logging.getLogger("nia.plugins.git")


SWITCHED_OFF: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),  # a program git status asks which files changed
    ("core.hooksPath", "/dev/null"),  # hooks (post-index-change, ...)
    ("core.pager", "cat"),
    ("status.submoduleSummary", "false"),  # would run `git submodule summary`
    ("log.showSignature", "false"),  # would run gpg.program
    ("credential.helper", ""),  # an empty value empties the list of helpers
    ("protocol.allow", "never"),
    ("color.ui", "never"),
    ("i18n.logOutputEncoding", "UTF-8"),
)
"""Configuration every git call gets, whatever any config file says (the command scope wins over all files)."""


NO_PROTOCOL = "nia_allows_none"
"""``GIT_ALLOW_PROTOCOL``: a list naming no transport (``_`` is in no URL scheme nor remote-helper name).

It overrides every ``protocol.*`` setting, so no fetch can start: no lazy
fetch from a promisor remote, and so no ssh, proxy, askpass, credential
helper, upload-pack or remote helper a repository's config names.
"""


class GitFailed(Exception):
    """git could not tell; ``str()`` is the one-line reason the model and the log get."""


class GitTimedOut(GitFailed):
    pass


def git_environment(search: str, overrides: tuple[tuple[str, str], ...] = ()) -> dict[str, str]:
    """The environment of every git call: nothing that could point git elsewhere, page, prompt or fetch.

    Configuration goes in as ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``
    pairs: a key is never split at ``=`` as ``-c KEY=VALUE`` is, so a name the
    repository chose (``[filter "x=y"]``, ``[filter ""]``) is overridden as it
    is. ``search`` is the ``PATH`` git gets: the folders outside the project.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("LANGUAGE", "PAGER")}
    config = (*SWITCHED_OFF, *overrides)
    env.update(
        PATH=search,
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",  # set and empty: neither core.askPass nor SSH_ASKPASS is asked
        GIT_ALLOW_PROTOCOL=NO_PROTOCOL,
        GIT_OPTIONAL_LOCKS="0",
        GIT_NO_LAZY_FETCH="1",
        GIT_PAGER="cat",
        PAGER="cat",
        LC_ALL="C",
        GIT_CONFIG_COUNT=str(len(config)),
    )
    for index, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def _git_in(folder: str) -> str | None:
    """The ``git`` program in ``folder``, if there is one."""
    return shutil.which("git", path=folder)


@dataclass(frozen=True)
class GitProgram:
    """The git nia runs, and the ``PATH`` it runs with."""

    path: str
    search: str
    """``PATH`` without relative entries nor folders inside the project: where git finds what it runs."""


@lru_cache(maxsize=8)
def find_git(path_variable: str, project: tuple[str, ...]) -> GitProgram | str:
    """The first ``git`` on PATH outside ``project`` (real folders), or why there is none; once per PATH and project.

    A PATH entry that is relative ("." would run a ``git`` shipped in the
    repository) or whose real folder lies inside the project is left out, as
    is a ``git`` that is a link into it; git itself gets the PATH that is left,
    so neither does it run a program of the project's by name.
    """
    kept: list[str] = []
    for folder in path_variable.split(os.pathsep):
        if folder and os.path.isabs(folder) and not inside_any(folder, project):
            kept.append(folder)
    search = os.pathsep.join(kept)
    planted = False
    for folder in kept:
        found = _git_in(folder)
        if found is None:
            continue
        if inside_any(found, project):
            planted = True
            continue
        skipped = len([f for f in path_variable.split(os.pathsep) if f]) - len(kept)
        log.debug("%s: runs %s (first on PATH outside the project; PATH entries skipped: %d)", KEY, found, skipped)
        return GitProgram(found, search)
    if planted or any(_git_in(folder) for folder in path_variable.split(os.pathsep) if folder and folder not in kept):
        return "the only `git` executables on PATH are inside the project, which nia never runs"
    return "no `git` executable was found on PATH"


def git_program(repo: Repository, root: str) -> GitProgram | str:
    """:func:`find_git` for a repository: the project is its root and the repository's work tree."""
    project = tuple(dict.fromkeys(os.path.realpath(folder) for folder in (root, repo.worktree)))
    return find_git(os.environ.get("PATH", os.defpath), project)


def start_git(
    git: GitProgram,
    repo: Repository,
    name: str,
    args: list[str],
    budget: Budget,
    overrides: tuple[tuple[str, str], ...] = (),
) -> Started:
    """Start ``git ... NAME`` in the work tree, in a process group of its own; :func:`wait_git` collects it."""
    if budget.deadline - time.monotonic() <= 0:
        raise GitTimedOut(f"`git {name}` did not answer within {budget.seconds:g}s")
    try:
        return spawn([git.path, *SAFE_OPTIONS, "-C", repo.worktree, *args], git_environment(git.search, overrides))
    except OSError as exc:
        raise GitFailed(f"git could not be started ({exc.strerror or exc})") from None


def wait_git(proc: Started, name: str, budget: Budget) -> tuple[int, bytes, bytes]:
    """What a started git said; its whole process group is killed when the budget runs out."""
    said = proc.collect(budget.deadline)
    if said is None or proc.returncode is None:
        proc.kill()
        raise GitTimedOut(f"`git {name}` did not answer within {budget.seconds:g}s")
    return proc.returncode, said[0], said[1]


def stop_git(proc: Started) -> None:
    """Kill a started git's process group (if it still runs) and reap it: nothing is left behind."""
    proc.kill()


def run_git(
    git: GitProgram,
    repo: Repository,
    name: str,
    args: list[str],
    budget: Budget,
    overrides: tuple[tuple[str, str], ...] = (),
) -> tuple[int, bytes, bytes]:
    """Run ``git ... NAME`` in the work tree; its whole process group is killed when the budget runs out."""
    return wait_git(start_git(git, repo, name, args, budget, overrides), name, budget)


def first_line(err: bytes) -> str:
    lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    return plain(lines[0]) if lines else ""
