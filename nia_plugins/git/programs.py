"""The programs a repository's git configuration names, and how each is kept from running.

Judged by the key's name alone, so no name can slip through: a filter
driver is switched off by its exact name (through the environment, never
``-c``), a key git's ``status``, ``log`` and ``config`` cannot run a program
from is left alone, and any other key naming a program refuses the repository.
"""

from __future__ import annotations

import logging

from nia_plugins.git.escape import quoted
from nia_plugins.git.process import Budget, Started
from nia_plugins.git.running import GitFailed, first_line, wait_git
from nia_plugins.git.value import KEY

CONFIG_LISTING = ["config", "--list", "--null", "--name-only", "--show-scope"]
"""Every key git sees, with where it comes from (``--show-scope``: git 2.26; includes count as their includer)."""

log = logging.getLogger("nia.plugins.git")


TRUSTED_SCOPES = (b"system", b"global")
"""The user's own configuration: what it names runs as in the user's own ``git status``."""


SWITCHED_OFF_KEYS = (
    "core.fsmonitor", "core.hookspath", "core.pager", "pager.*", "status.submodulesummary",
    "log.showsignature", "gpg.*", "filter.*", "protocol.*", "core.worktree",
)  # fmt: skip
"""Keys naming what ``git status``/``git log -1``/``git config`` could run: each is overridden on every call
(``filter.NAME.*`` per name, below; ``core.worktree`` by ``--work-tree``; pagers by ``--no-pager``)."""


TRANSPORT_KEYS = (
    "core.sshcommand", "core.gitproxy", "core.askpass", "ssh.*", "credential.*", "remote.*", "url.*", "http.*",
)  # fmt: skip
"""Keys only a fetch or push runs a program from: no transport can start (``GIT_ALLOW_PROTOCOL`` names none)."""


NEVER_RUN_KEYS = (
    "core.editor", "sequence.editor", "core.alternaterefscommand", "diff.*", "merge.*", "difftool.*",
    "mergetool.*", "interactive.*", "web.*", "help.*", "browser.*", "man.*", "instaweb.*", "guitool.*",
    "gui.*", "alias.*", "sendemail.*", "imap.*", "submodule.*", "trailer.*", "uploadpack.*", "receive.*",
    "tar.*", "column.*",
)  # fmt: skip
"""Keys only other git commands run a program from (editors, diff and merge drivers, textconv, tools,
aliases, browsers, mail, submodule updates, servers, archives): nia runs ``status``, ``log``, ``config``
and ``ls-files``."""


PROGRAM_WORDS = (
    "command", "cmd", "program", "helper", "driver", "textconv", "process", "clean", "smudge", "filter",
    "hookspath", "hook", "fsmonitor", "editor", "pager", "askpass", "proxy", "uploadpack", "receivepack",
    "browser", "viewer", "tool", "external", "httpd", "exec",
)  # fmt: skip
"""How a key that names a program ends: such a key outside the lists above is one nia cannot switch off."""


MAX_FILTERS = 64
"""Filter drivers of the repository's own that nia overrides; more is refused (each costs four variables)."""


def _known(pattern: str, section: str, variable: str) -> bool:
    wanted_section, _, wanted_variable = pattern.partition(".")
    return section == wanted_section and wanted_variable in ("*", variable)


def repository_overrides(listing: bytes) -> tuple[tuple[str, str], ...]:
    """What to override so that git runs nothing the repository's config names; :class:`GitFailed` if it cannot.

    ``listing`` is :data:`CONFIG_LISTING`'s answer, run with
    :func:`~nia_plugins.git.running.git_environment`. Keys of the user's global and system config are
    trusted. Every other key (the repository's ``config``, ``config.worktree``
    and whatever they include, from anywhere) is judged by name alone, so no
    name can slip through: a filter driver is switched off by its exact name,
    a known key is covered by the lists above, and any other key that names a
    program is refused.
    """
    fields = listing.split(b"\0")
    pairs = list(zip(fields[0::2], fields[1::2], strict=False))
    if (b"command", b"core.fsmonitor") not in pairs:  # GIT_CONFIG_COUNT (git 2.31) was not understood
        raise GitFailed("the `git` found is too old to be run safely here (nia needs git 2.31 or later)")
    filters: dict[str, None] = {}
    for scope, raw in pairs:
        if scope in TRUSTED_SCOPES or scope == b"command" or not raw:
            continue
        name = raw.decode("utf-8", "surrogateescape")
        section, _, rest = name.partition(".")
        subsection, dot, variable = rest.rpartition(".")
        if section == "filter" and dot:
            filters[subsection] = None
            continue
        if any(_known(p, section, variable) for p in (*SWITCHED_OFF_KEYS, *TRANSPORT_KEYS, *NEVER_RUN_KEYS)):
            continue
        if variable.endswith(PROGRAM_WORDS):
            key = quoted(name, 80)
            raise GitFailed(f"its git configuration names a program in `{key}`, which nia cannot switch off")
    if len(filters) > MAX_FILTERS:
        raise GitFailed(f"its git configuration defines {len(filters)} filter drivers, more than nia switches off")
    return tuple(
        (f"filter.{name}.{key}", value)
        for name in filters
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
    )


def read_configuration(proc: Started, budget: Budget) -> tuple[tuple[str, str], ...]:
    """Collect a started :data:`CONFIG_LISTING` and judge it; a listing git could not give refuses the repository."""
    code, out, err = wait_git(proc, "config", budget)
    if code not in (0, 1):  # 1: no key at all
        detail = first_line(err)
        if detail:
            log.warning("%s: git config said: %s", KEY, detail)
        if code == 129:  # an option this git does not know (--show-scope, git 2.26)
            raise GitFailed("the `git` found is too old to be run safely here (nia needs git 2.31 or later)")
        raise GitFailed("git cannot read this repository's configuration")
    return repository_overrides(out)
