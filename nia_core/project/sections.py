"""Category 1, the project's own context: project config, project context files, service config.

Shared by the ``nia-project`` plugin (every session at a Location with a
``.nia/project.toml``) and by workflows, which render it in their own format
and place it after the role prompt.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nia_core.context import ContextSource, Location
from nia_core.notices import warn_once
from nia_core.project.config import ProjectConfig, PromptFormat, Service, load_project_config
from nia_core.project.paths import ContextPathError, canonical, check_kind, inside
from nia_core.project.toml import ConfigError

if TYPE_CHECKING:  # merged and rendered on use: a Location without a project.toml needs neither
    from nia_core.project.merge import ContextFile, Merged

Section = tuple[Callable[[str], ContextSource], tuple[ContextSource, ...]]
"""A prompt section: a builder for its first source (given its separator prefix), then the rest."""


@dataclass(frozen=True)
class ProjectContext:
    """What category 1 holds at one Location, with what was skipped on the way."""

    config: ProjectConfig
    merged: Merged
    service: Service | None
    service_path: str | None = None
    warnings: tuple[str, ...] = ()


def active_service(
    root: Path, location_path: Path, config: ProjectConfig, *, strict: bool
) -> tuple[Service | None, str | None, list[str]]:
    """The service whose folder holds the working directory (the deepest, when nested)."""
    best: tuple[Service, str] | None = None
    warnings: list[str] = []
    here = str(location_path)
    for service in config.services:
        try:
            real = canonical(root, service.path, service.origin, kind="directory")
            check_kind(real, "directory", service.path, service.origin)
        except ContextPathError as error:
            if strict:
                raise
            warnings.append(str(error))
            continue
        if inside(here, real) and (best is None or len(real) > len(best[1])):
            best = (service, real)
    if best is None:
        return None, None, warnings
    return best[0], os.path.relpath(best[1], root).replace(os.sep, "/"), warnings


def project_context(location: Location, config: ProjectConfig | None = None, *, strict: bool) -> ProjectContext:
    """Resolve category 1 at ``location``; ``strict`` raises path errors instead of warning."""
    from nia_core.project.merge import merge

    config = config if config is not None else load_project_config(location.root)
    merged = merge(location.root, config.context, strict=strict)
    service, service_path, warnings = active_service(location.root, location.path, config, strict=strict)
    return ProjectContext(config, merged, service, service_path, (*merged.warnings, *warnings))


_file_sources: dict[tuple[str, str, str, str], tuple[Sequence[ContextFile], tuple[ContextSource, ...]]] = {}


def file_sources(
    files: Sequence[ContextFile], prefix: str, fmt: PromptFormat, element: str, root: Path
) -> tuple[ContextSource, ...]:
    """One source per file; the very same tuple again for the very same ``files`` (an unchanged merge's)."""
    from nia_core.project.prompt import file_key, file_source

    base = str(root)
    memo_key = (prefix, fmt, element, base)
    last = _file_sources.get(memo_key)
    if last is not None and last[0] is files:
        return last[1]
    sources = tuple(
        file_source(file_key(prefix, f.path), f.canonical, f.path, f.description, fmt, element, base) for f in files
    )
    if len(_file_sources) >= 1024:
        _file_sources.clear()
    _file_sources[memo_key] = (files, sources)
    return sources


def project_sections(context: ProjectContext, fmt: PromptFormat, root: Path) -> list[Section]:
    """The project config section (with its files) and the service section, each when it has content."""
    from nia_core.project.prompt import PROJECT_FILES, project_source, service_source

    sections: list[Section] = []
    info = context.config.project
    files = context.merged.files
    if info.name or info.description or files:
        has_files = bool(files)

        def project(prefix: str) -> ContextSource:
            return project_source(info.name, info.description, fmt, has_files, prefix)

        sections.append((project, file_sources(files, PROJECT_FILES, fmt, "project_file", root)))
    service, path = context.service, context.service_path
    if service is not None and path is not None:

        def service_config(prefix: str) -> ContextSource:
            return service_source(service.name, path, service.config, fmt, prefix)

        sections.append((service_config, ()))
    return sections


def flatten(sections: Sequence[Section], *, first: bool = True) -> list[ContextSource]:
    """The sources of ``sections`` in order, each section after the first starting with ``---``."""
    from nia_core.project.prompt import SEPARATOR

    sources: list[ContextSource] = []
    for index, (head, rest) in enumerate(sections):
        sources.append(head("" if first and index == 0 else SEPARATOR))
        sources.extend(rest)
    return sources


_last_good: dict[Path, ProjectConfig] = {}


def project_context_sources(location: Location) -> list[ContextSource]:
    """Category 1 at ``location`` as context sources, for the ``nia-project`` plugin.

    Lenient: an entry that is missing or refused is left out with a warning
    (a file that vanishes mid-session becomes a removal note, not a failure),
    and a project.toml that stops being valid mid-session is replaced by the
    last valid one until it is fixed, rather than removing the whole category.
    """
    try:
        config = load_project_config(location.root)
    except ConfigError as error:
        last = _last_good.get(location.root)
        if last is None:
            raise
        warn_once(f"{error} (keeping the last valid project.toml)", location.root)
        config = last
    _last_good[location.root] = config
    if not config.exists:
        return []
    context = project_context(location, config, strict=False)
    for message in context.warnings:
        warn_once(message, location.root)
    return flatten(project_sections(context, config.project.prompt_format or "md", location.root))
