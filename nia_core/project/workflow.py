"""A workflow (``nia TARGET OPERATION``): both context categories, the prompt, the user input.

:func:`assemble_workflow` reads the configuration, checks every entry strictly
(a missing file or an escaping path fails here, naming the entry) and returns
a :class:`Workflow`. Its :meth:`Workflow.sources` are the workflow's prompt
sections in the reference order; each call re-resolves the entries (leniently:
a vanished file leaves with a removal note), so a session calls it at every
safe boundary. :meth:`Workflow.compose` puts them in front of the other
plugins' sources; that composition is what ``--print-prompt`` renders and what
a session sends.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nia_core.context import ContextSource, Location, SystemContext
from nia_core.errors import UsageError
from nia_core.notices import warn_once
from nia_core.project.commands_config import CommandsConfig, Operation, Target, load_commands_config
from nia_core.project.config import ContextEntry, ProjectConfig, PromptFormat, load_project_config
from nia_core.project.merge import Merged, merge
from nia_core.project.prompt import (
    CONTEXT_FILES,
    INPUT,
    ROLE,
    SEPARATOR,
    TASK,
    commit_source,
    context_header_source,
    text_source,
)
from nia_core.project.sections import (
    ProjectContext,
    Section,
    file_sources,
    flatten,
    project_context,
    project_sections,
)
from nia_core.project.toml import ConfigError

PROJECT_NAMESPACE = "nia/project."


class WorkflowNotFound(UsageError):
    """No such target or operation in ``.nia/commands.toml``."""


@dataclass
class Workflow:
    """One target-operation with its resolved context, ready to compose."""

    location: Location
    project: ProjectConfig
    target: Target
    operation: Operation
    format: PromptFormat
    user_input: str | None
    context_entries: tuple[ContextEntry, ...]
    """Category 2, in merge order: target, operation, ``--context-file``, ``--context-dir``."""
    category1: ProjectContext
    category2: Merged
    _fresh: bool = field(default=True, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        return f"{self.target.name} {self.operation.name}"

    @property
    def role_prompt(self) -> str:
        """The target's role prompt, else the project's."""
        return (self.target.role_prompt or self.project.project.role_prompt).strip()

    @property
    def task_prompt(self) -> str:
        """The target's task prompt, then the operation's."""
        parts = (self.target.task_prompt.strip(), self.operation.task_prompt.strip())
        return "\n\n".join(p for p in parts if p)

    @property
    def warnings(self) -> tuple[str, ...]:
        return (*self.category1.warnings, *self.category2.warnings)

    def refresh(self) -> None:
        """Re-resolve both categories now (leniently), as the next safe boundary would.

        project.toml is read again (an invalid one keeps the last valid
        config); the workflow's own definition stays as it was assembled.
        """
        root = self.location.root
        try:
            self.project = load_project_config(root)
        except ConfigError as error:
            warn_once(f"{error} (keeping the last valid project.toml)", root)
        category1 = project_context(self.location, self.project, strict=False)
        category2 = merge(root, self.context_entries, strict=False)
        for message in (*category1.warnings, *category2.warnings):
            warn_once(message, root)
        self.category1, self.category2 = category1, category2

    def sections(self) -> list[Section]:
        fmt = self.format
        sections: list[Section] = []
        role = self.role_prompt
        if role:
            sections.append((lambda prefix: text_source(ROLE, role, fmt, prefix), ()))
        sections.extend(project_sections(self.category1, fmt, self.location.root))
        task = self.task_prompt
        if task:
            sections.append((lambda prefix: text_source(TASK, task, fmt, prefix), ()))
        files = self.category2.files
        if files:
            target, operation = self.target.name, self.operation.name
            sections.append(
                (
                    lambda prefix: context_header_source(target, operation, fmt, prefix),
                    file_sources(files, CONTEXT_FILES, fmt, "context_file", self.location.root),
                )
            )
        if self.operation.user_input and self.user_input is not None and self.user_input.strip():
            text = self.user_input
            sections.append((lambda prefix: text_source(INPUT, text, fmt, prefix), ()))
        commit = self.project.commit
        if self.operation.commit and not commit.empty:
            sections.append((lambda prefix: commit_source(commit, fmt, prefix), ()))
        return sections

    def sources(self) -> list[ContextSource]:
        """The workflow's own sources in prompt order; re-resolved at every call but the first."""
        with self._lock:
            if self._fresh:
                self._fresh = False  # the strict first resolution serves the first call
            else:
                self.refresh()
            return flatten(self.sections())

    def system_context(self) -> SystemContext:
        return SystemContext(self.sources())

    def compose(self, others: SystemContext | Iterable[ContextSource] = ()) -> SystemContext:
        """The workflow's sources, then every other source (another ``---`` before the first of them).

        The ``nia-project`` plugin's sources are dropped: the workflow renders
        category 1 itself, in its format and in its place.
        """
        own = self.sources()
        keys = {source.key for source in own}
        rest = [s for s in others if not s.key.startswith(PROJECT_NAMESPACE) and s.key not in keys]
        if own and rest:
            rest[0] = separated(rest[0])
        handler = others.on_render_error if isinstance(others, SystemContext) else None
        return SystemContext([*own, *rest], on_render_error=handler)

    def context_for(self, assemble: Callable[[str], SystemContext]) -> Callable[[str], SystemContext]:
        """Wrap a session's ``context_for(path)`` so each boundary composes this workflow in front.

        ``assemble`` is what a plain session uses (the plugin host's assembly at
        a Location); the result fits ``nia_core.sessions.ContextFor``.
        """

        def context_for(path: str) -> SystemContext:
            return self.compose(assemble(path))

        return context_for


_separated: weakref.WeakKeyDictionary[ContextSource, ContextSource] = weakref.WeakKeyDictionary()


def separated(source: ContextSource) -> ContextSource:
    """``source`` with ``---`` before its baseline text (cached, so its identity and memo last)."""
    wrapped = _separated.get(source)
    if wrapped is None:
        baseline = source.baseline

        def with_separator(value: Any) -> str:
            return SEPARATOR + baseline(value)

        wrapped = dataclasses.replace(source, baseline=with_separator)
        _separated[source] = wrapped
    return wrapped


def find_workflow(commands: CommandsConfig, target: str, operation: str) -> tuple[Target, Operation]:
    if not commands.exists:
        raise WorkflowNotFound("no workflows are defined: .nia/commands.toml not found")
    found = commands.target(target)
    if found is None:
        known = ", ".join(t.name for t in commands.targets) or "none"
        raise WorkflowNotFound(f"unknown workflow target {target!r} (defined: {known})")
    op = found.operation(operation)
    if op is None:
        known = ", ".join(o.name for o in found.operations) or "none"
        raise WorkflowNotFound(f"unknown operation {operation!r} for target {target!r} (defined: {known})")
    return found, op


def flag_entries(location: Location, files: Sequence[str], dirs: Sequence[str]) -> list[ContextEntry]:
    """``--context-file`` then ``--context-dir`` entries; relative paths start at the working directory."""
    base = str(location.path)
    entries = [ContextEntry("file", path, "", "--context-file", base) for path in files]
    entries += [ContextEntry("directory", path, "", "--context-dir", base) for path in dirs]
    return entries


def assemble_workflow(
    location: Location,
    target: str,
    operation: str,
    *,
    context_files: Sequence[str] = (),
    context_dirs: Sequence[str] = (),
    user_input: str | None = None,
    prompt_format: PromptFormat | None = None,
) -> Workflow:
    """Read and check everything ``nia TARGET OPERATION`` needs; raise a :class:`UsageError` naming the culprit."""
    root = location.root
    project = load_project_config(root)
    found, op = find_workflow(load_commands_config(root), target, operation)
    name = f"nia {target} {operation}"
    if op.user_input and (user_input is None or not user_input.strip()):
        raise UsageError(f"{name} needs user input: pass it as an argument or on stdin")
    if not op.user_input and user_input is not None:
        raise UsageError(f"{name} takes no user input")
    entries = (*found.context, *op.context, *flag_entries(location, context_files, context_dirs))
    category1 = project_context(location, project, strict=True)
    category2 = merge(root, entries, strict=True)
    fmt: PromptFormat = prompt_format or project.project.prompt_format or "md"
    return Workflow(location, project, found, op, fmt, user_input, tuple(entries), category1, category2)
