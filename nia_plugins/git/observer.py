"""The loader of a ``nia/git`` source: runs git only when something git keeps moved.

Observation is cheap when nothing changed: a dozen ``stat`` calls on the
files git itself updates (``HEAD``, the ref it points to, the index,
``packed-refs``, ...); ``git status`` runs only when one of them moved, or when
the working tree may have changed (an edit does not touch ``.git/``). In a
process that observes more than once, the tree is watched
(:mod:`nia_plugins.git.watch`) and git runs again only after an event; a hook
answered in its own process observes once, and looks at the tree again after
the refresh interval.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from nia_core import GENERATED_NAMES, UNAVAILABLE
from nia_plugins.git.escape import quoted
from nia_plugins.git.gitdir import (
    WATCHED_IN_COMMONDIR,
    WATCHED_IN_GITDIR,
    file_signature,
    operations_in_progress,
    ref_file,
    stash_count,
)
from nia_plugins.git.ignored import ignored_folders
from nia_plugins.git.outside import reaches_outside, ref_leaves_repository
from nia_plugins.git.porcelain import COMMIT_LOG, commit_fields, parse_status
from nia_plugins.git.process import Budget, Started
from nia_plugins.git.programs import CONFIG_LISTING, read_configuration
from nia_plugins.git.repository import Repository, read_small, untrusted
from nia_plugins.git.running import (
    GitFailed,
    GitProgram,
    GitTimedOut,
    first_line,
    git_program,
    run_git,
    start_git,
    stop_git,
    wait_git,
)
from nia_plugins.git.settings import Settings
from nia_plugins.git.value import KEY, GitStatus

if TYPE_CHECKING:
    from nia_plugins.git.watch import TreeWatcher

log = logging.getLogger("nia.plugins.git")

WATCH_RETRY = 60.0
"""Seconds after which a tree that could not be watched is tried again, when git looks at it anyway."""


class Observer:
    """The loader of one ``nia/git`` source: runs git only when something git keeps moved."""

    def __init__(self, repo: Repository, root: str, settings: Settings) -> None:
        self.repo = repo
        self.root = root
        self.settings = settings
        self._fixed = (
            repo.dotgit,
            *(os.path.join(repo.gitdir, name) for name in WATCHED_IN_GITDIR),
            *(os.path.join(repo.commondir, name) for name in WATCHED_IN_COMMONDIR),
        )
        self._refs: tuple[str, ...] = ()
        """The files of the ref HEAD points to and of the upstream, as of the last status."""
        self._signature: tuple[Any, ...] | None = None
        self._checked = 0.0
        self._value: GitStatus | None = None
        self._commits: dict[str, tuple[str, tuple[str, ...], str]] = {}
        self._reported = ""
        self._lock = threading.Lock()
        self._scope, self._strip, self._prepend = self._scoping()
        self._watcher: TreeWatcher | None = None
        self._answered = True
        """False after git timed out: events were read from the queue that no status has answered yet."""
        self._unwatched = ""
        """Why the tree is not watched (said once in the log), once watching was tried; tried again after
        :data:`WATCH_RETRY` seconds (a busy machine, a tree that shrank, a slot another tree left)."""
        self._unwatched_at = 0.0
        moving: tuple[str, ...] = (repo.dotgit, os.path.join(repo.gitdir, "HEAD"))
        moving += tuple(os.path.join(repo.commondir, name) for name in ("packed-refs", "reftable/tables.list"))
        self._moving = tuple(self._fixed.index(path) for path in moving)
        """Where in the signature the files that say which commit HEAD is are (the ref files follow ``_fixed``)."""

    def _scoping(self) -> tuple[list[str], str, str]:
        """A pathspec limiting the status to the project, and how a repository path becomes project-relative.

        Returns ``(pathspec, strip, prepend)``: a project inside a larger
        repository sees only its own changes, its paths without its folder; a
        repository inside the project gets its folder in front. What nia
        itself generates in the project's ``.nia/`` is left out, whatever the
        ignore files say: it is never a change of the project's.
        """
        worktree, root = os.path.realpath(self.repo.worktree), os.path.realpath(self.root)
        if root == worktree:
            return ["--", *(f":(top,literal,exclude).nia/{name}" for name in GENERATED_NAMES)], "", ""
        inside = os.path.relpath(root, worktree).replace(os.sep, "/")
        if inside != ".." and not inside.startswith("../"):
            own = [f":(top,literal,exclude){inside}/.nia/{name}" for name in GENERATED_NAMES]
            return ["--", f":(top,literal){inside}", *own], inside + "/", ""
        holder = os.path.relpath(worktree, root).replace(os.sep, "/")
        return [], "", "" if holder == ".." or holder.startswith("../") else holder + "/"

    def _relative(self, path: str) -> str:
        if self._strip and path.startswith(self._strip):
            path = path[len(self._strip) :] or "./"  # the project folder itself, untracked as a whole
        return quoted(self._prepend + path)

    def signature(self) -> tuple[Any, ...]:
        return tuple(file_signature(path) for path in (*self._fixed, *self._refs))

    def __call__(self) -> Any:
        if not self._lock.acquire(timeout=self.settings.timeout + 1):
            return UNAVAILABLE  # another observation of the same repository is stuck; it has its own timeout
        try:
            return self._observe()
        finally:
            self._lock.release()

    def _observe(self) -> Any:
        now = time.monotonic()
        signature = self.signature()
        watcher = self._watcher
        seen = watcher.seen() if watcher is not None else None
        if watcher is not None and not watcher.watching:
            # Another tree took its place (a process watches a few): by time for a while, not a tug of war;
            # what happened since it was dropped is unknown, so git looks now.
            self._watcher = watcher = None
            self._unwatch("another tree this process watches took its place", now)
            self._answered = False
        if self._value is not None and signature == self._signature and self._answered:
            if watcher is None:
                # The second observation sets the watches however soon after the first it comes (a
                # resident's next hook may come within the refresh interval: an edit before it waited for
                # the interval); once watching was tried and failed, the tree is looked at by time.
                untried = self.settings.refresh > 0 and not self._unwatched
                fresh = now - self._checked < self.settings.refresh and not untried
            else:
                # A watch vouches for the tree, not for git: a failed observation is retried after `refresh`.
                limit = self.settings.refresh if self._value.error else max(self.settings.refresh, watcher.refresh)
                fresh = seen == "nothing" and now - self._checked < limit
            if fresh:
                return self._value
        # Watch from the second observation on (a hook in its own process observes once), and set the
        # watches again when folders or ignore rules may have changed, before git looks at the tree.
        retry = not self._unwatched or now - self._unwatched_at >= WATCH_RETRY
        watch = self._value is not None and self.settings.refresh > 0 and retry
        watch = watch and (watcher is None or seen != "files" or signature != self._signature)
        refs = self._refs
        try:
            value = self._status(self._head_may_have_moved(signature), watch)
        except GitTimedOut as exc:
            self._report(str(exc))
            self._answered = False  # what the queue held is read: git must look at the next boundary
            if self._value is not None and not self._value.error:
                return UNAVAILABLE  # the model keeps what it was told; the next boundary tries again
            return GitStatus(error=str(exc))  # never block a session on a slow repository; retried next time
        except GitFailed as exc:
            self._report(str(exc))
            value = GitStatus(error=str(exc))
        else:
            self._report("")
        self._answered = True
        if self._refs != refs:  # HEAD now points elsewhere: watch the new ref from here on
            signature = signature[: len(self._fixed)] + tuple(file_signature(path) for path in self._refs)
        self._signature, self._checked = signature, now
        if value == self._value:
            return self._value  # the very same object: compared by identity, encoded once
        self._value = value
        return value

    def _head_may_have_moved(self, signature: tuple[Any, ...]) -> bool:
        """Whether HEAD's commit may differ from the last observation's (always, at the first)."""
        old = self._signature
        if old is None or len(old) != len(signature):
            return True
        return any(old[i] != signature[i] for i in (*self._moving, *range(len(self._fixed), len(signature))))

    def _report(self, reason: str) -> None:
        """One warning line per new reason, not one per boundary."""
        if reason and reason != self._reported:
            log.warning("%s: %s (in %s)", KEY, reason, self.repo.worktree)
        self._reported = reason

    def _status(self, speculate: bool, watch: bool = False) -> GitStatus:
        """One observation: ``speculate`` starts ``git log -1 HEAD`` beside the config call (see :meth:`_commit`).

        While git lists the configuration, the git directory is checked for
        anything leading outside the project (:func:`reaches_outside`); what
        git read by then is thrown away if it does.
        """
        repo, settings = self.repo, self.settings
        refused = untrusted(repo, self.root)
        if refused is not None:
            raise GitFailed(refused)
        if ref_leaves_repository(repo):
            raise GitFailed("a ref of this repository is a symlink to a file outside it, which nia does not follow")
        git = git_program(repo, self.root)
        if isinstance(git, str):
            raise GitFailed(git)
        budget = Budget.of(settings.timeout)
        head = start_git(git, repo, "log", [*COMMIT_LOG, "HEAD", "--"], budget) if speculate else None
        config: Started | None = None
        try:
            config = start_git(git, repo, "config", CONFIG_LISTING, budget)
            outside = reaches_outside(repo, self.root)
            if outside is not None:
                raise GitFailed(outside)
            overrides = read_configuration(config, budget)  # before `git status`, always: it needs them
            if watch:
                self._watch(git, overrides, budget)
            return self._described(git, budget, head, overrides)
        finally:
            for started in (head, config):
                if started is not None:
                    stop_git(started)  # done, not needed, or the observation failed: killed if still running, reaped

    def _watch(self, git: GitProgram, overrides: tuple[tuple[str, str], ...], budget: Budget) -> None:
        """Set a watch on every folder of the tree git does not ignore, before ``git status`` looks at it.

        Anything that changes after the watches are set is in the next
        observation's queue; anything before, git is about to see. Folders an
        ignore rule names are left out (:func:`ignored_folders`, within the
        observation's ``budget`` and a third of it at most): a change there is
        no change of the status.
        """
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        share = Budget(budget.seconds, min(budget.deadline, time.monotonic() + self.settings.timeout / 3))
        ignored = ignored_folders(git, self.repo, self._scope, overrides, share)
        if ignored is None:
            self._unwatch("git could not list the folders it ignores", time.monotonic())
            return
        from nia_plugins.git.watch import TreeWatcher  # only a process that observes twice watches

        top = self.root if self._strip else self.repo.worktree
        skipped = {
            os.fsdecode(path[len(self._strip) :]) for path in ignored if path.startswith(os.fsencode(self._strip))
        }
        own = os.path.relpath(os.path.join(self.root, ".nia"), top).replace(os.sep, "/")
        skipped.update(f"{own}/{name}" for name in GENERATED_NAMES)
        parts = self._strip.rstrip("/").split("/")[:-1] if self._strip else None
        above = (
            () if parts is None else tuple(os.path.join(self.repo.worktree, *parts[:n]) for n in range(len(parts) + 1))
        )
        watcher = TreeWatcher.start(
            top, skipped, {own: frozenset(GENERATED_NAMES) - {".gitignore"}}, share.deadline, above
        )
        if isinstance(watcher, str):
            self._unwatch(watcher, time.monotonic())
        else:
            self._watcher, self._unwatched = watcher, ""

    def _unwatch(self, why: str, now: float) -> None:
        if why != self._unwatched:
            log.debug("%s: the working tree is not watched: %s", KEY, why)
        self._unwatched, self._unwatched_at = why, now

    def _described(
        self, git: GitProgram, budget: Budget, head: Started | None, overrides: tuple[tuple[str, str], ...]
    ) -> GitStatus:
        """The observation proper, once the repository is known to be readable and git is found."""
        repo, settings = self.repo, self.settings
        args = ["--work-tree", repo.worktree, "status", "--porcelain=v2", "--branch", "-z"]
        args += ["--no-renames", "--ignore-submodules=dirty", "--ignored=no", "--ahead-behind"]
        args += ["--untracked-files=normal" if settings.untracked else "--untracked-files=no", *self._scope]
        code, out, err = run_git(git, repo, "status", args, budget, overrides)
        if code != 0:
            detail = first_line(err)
            if detail:
                log.warning("%s: git status said: %s", KEY, detail)
            if "dubious ownership" in detail:
                raise GitFailed("git refuses to read this repository: it belongs to another user (see safe.directory)")
            if "not a git repository" in detail:
                raise GitFailed("git does not recognise the `.git` here as a repository")
            raise GitFailed(f"`git status` failed with exit status {code}")
        parsed = parse_status(out, self._relative)
        head_text = (read_small(os.path.join(repo.gitdir, "HEAD"), repo.gitdir) or "").strip()
        symbolic = head_text.startswith("ref:")
        detached = parsed.head == "(detached)" and not symbolic
        refs = []
        if symbolic:
            refs.append(ref_file(repo, head_text[4:].strip()))
        if parsed.upstream:
            refs.append(ref_file(repo, "refs/remotes/" + parsed.upstream))
            refs.append(ref_file(repo, "refs/heads/" + parsed.upstream))
        self._refs = tuple(ref for ref in refs if ref)
        short, parents, subject = self._commit(git, parsed.oid, budget, head) if parsed.oid else ("", (), "")
        operations, rebased = operations_in_progress(repo)
        entries = [*parsed.conflicts, *parsed.tracked, *parsed.new]
        named = tuple(entries[: settings.paths])
        return GitStatus(
            branch="" if detached else quoted(parsed.head),
            detached=detached,
            oid=parsed.oid,
            head=short,
            subject=subject,
            parents=parents,
            upstream=quoted(parsed.upstream) if parsed.upstream else "",
            ahead=parsed.ahead,
            behind=parsed.behind,
            operations=operations,
            rebasing=quoted(rebased) if rebased else "",
            stashes=stash_count(repo),
            staged=parsed.staged,
            modified=parsed.modified,
            untracked=parsed.untracked if settings.untracked else None,
            conflicted=parsed.conflicted,
            entries=named,
            more=len(entries) - len(named),
        )

    def _commit(
        self, git: GitProgram, oid: str, budget: Budget, head: Started | None
    ) -> tuple[str, tuple[str, ...], str]:
        """HEAD's short id, parents and subject; asked of git once per commit.

        ``head``, when given, is a ``git log -1 HEAD`` started beside the config
        call (it reads no work-tree file, so no filter driver can run): one git
        process less on the critical path. Its answer counts only when it names
        ``oid``, the commit ``git status`` saw; HEAD may have moved between the
        two, and then ``oid`` is asked for by id.
        """
        known = self._commits.get(oid)
        if known is None and head is not None:
            code, out, _err = wait_git(head, "log", budget)
            if code == 0:
                full, known = commit_fields(out)
                known = known if full == oid else None
        if known is None:
            code, out, _err = run_git(git, self.repo, "log", [*COMMIT_LOG, oid, "--"], budget)
            if code != 0:
                return oid[:7], (), ""
            known = commit_fields(out)[1]
        if len(self._commits) > 64:
            self._commits.clear()
        self._commits[oid] = known
        return known
