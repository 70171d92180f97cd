"""``nia/project.*``: the project's own context, at every Location with a ``.nia/project.toml``.

Category 1 of the context-merging rules: the ``[project]`` description with
the files of ``[[project.context]]`` (one source each, so an edited file updates
alone), and the ``[[services]]`` entry whose folder holds the working
directory. Rendered as ``[project] prompt_format`` says (Markdown by default).
Workflows (``nia TARGET OPERATION``) render this category themselves, in
their own format and place.
"""

from __future__ import annotations

from nia_core import ContextSource, Location, hookimpl, project_context_sources

NIA_NAMESPACE = "nia"


@hookimpl
def nia_context_sources(location: Location) -> list[ContextSource]:
    return project_context_sources(location)
