"""Prompt sections as context sources, rendered as Markdown or XML.

Each section of the reference prompt structure is one source with its own key
(``nia/workflow.role``, ``nia/project.config``, ...), and each context file is
a source of its own inside its section (``nia/project.file.<hash>``,
``nia/workflow.file.<hash>``, the hash taken from its canonical path relative
to the root), so an edited file produces an update carrying that file only and
a vanished file a removal note. Sources are cached, so an unchanged file keeps
the same source and the same value object, and costs one ``stat``.

The engine joins sources with a blank line; a section that follows another
starts with ``---``, so the baseline reads as the reference shows.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from nia_core.context import UNAVAILABLE, ContextSource, DataclassCodec
from nia_core.context.source import Constant, bounded_by_nia
from nia_core.files import Content, Refused
from nia_core.project.config import CommitConfig, PromptFormat
from nia_core.project.merge import FILES, MAX_FILE_BYTES, content_problem
from nia_core.project.paths import escape_name

log = logging.getLogger("nia.project")

SEPARATOR = "---\n\n"

ROLE = "nia/workflow.role"
PROJECT = "nia/project.config"
PROJECT_FILES = "nia/project.file."
SERVICE = "nia/project.service"
TASK = "nia/workflow.task"
CONTEXT = "nia/workflow.context"
CONTEXT_FILES = "nia/workflow.file."
INPUT = "nia/workflow.input"
COMMIT = "nia/workflow.commit"

CACHE_SIZE = 65536


def file_key(prefix: str, path: str) -> str:
    """A stable, lowercase key for the file at ``path`` (canonical, relative to the root)."""
    return prefix + hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:16]


# -- text helpers --------------------------------------------------------------------------


def xml_attr(value: str) -> str:
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return '"' + escaped.replace("\n", "&#10;") + '"'


def label(path: str) -> str:
    """A file's path as its label in the prompt: one line, nothing invisible (see :func:`escape_name`)."""
    return escape_name(path)


def xml_text(value: str) -> str:
    """Text as XML element content: verbatim when safe, else in CDATA (so code stays readable)."""
    if "<" not in value and "&" not in value and "]]>" not in value:
        return value
    return "<![CDATA[" + value.replace("]]>", "]]]]><![CDATA[>") + "]]>"


def _element(tag: str, body: str, **attributes: str) -> str:
    attrs = "".join(f" {key}={xml_attr(value)}" for key, value in attributes.items() if value)
    return f"<{tag}{attrs}>\n{xml_text(body)}\n</{tag}>" if body else f"<{tag}{attrs}/>"


def _fence(text: str, path: str) -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=0) if "```" in text else 0
    fence = "`" * max(3, longest + 1)
    extension = path.rsplit(".", 1)[1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    info = extension if extension.isalnum() else ""
    return f"{fence}{info}\n{text}\n{fence}"


# -- values --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileValue:
    """A context file as the model sees it: its label, its description, its text."""

    path: str
    description: str
    text: str


FILE_CODEC: DataclassCodec[FileValue] = DataclassCodec(FileValue)


def render_file(value: FileValue, fmt: PromptFormat, element: str) -> str:
    text = value.text.rstrip("\n")
    path = label(value.path)
    if fmt == "xml":
        return _element(element, text or " ", path=path, description=value.description)
    described = f"\nDescription: {value.description}" if value.description else ""
    heading = "###" if element == "project_file" else "##"  # project files sit under "## Project context"
    return f"{heading} File: {path}{described}\n\n{_fence(text, path)}"


def render_project(value: dict[str, str], fmt: PromptFormat, has_files: bool) -> str:
    name, description = value.get("name", ""), value.get("description", "")
    if fmt == "xml":
        body = _element("description", description) if description else ""
        if has_files:
            intro = "The project_file elements that follow describe the project."
            body += ("\n" if body else "") + f"<project_context>{intro}</project_context>"
        attrs = f" name={xml_attr(name)}" if name else ""
        return f"<project{attrs}>\n{body}\n</project>" if body else f"<project{attrs}/>"
    parts = [f"# Project: {name}" if name else "# Project"]
    if description:
        parts.append(description.strip())
    if has_files:
        parts.append("## Project context\n\nThe files that follow describe the project.")
    return "\n\n".join(parts)


def render_service(value: dict[str, str], fmt: PromptFormat) -> str:
    if fmt == "xml":
        return _element("service", value["config"].strip(), name=value["name"], path=value["path"])
    head = f"# Service: {value['name']} ({value['path']})"
    return f"{head}\n\n{value['config'].strip()}" if value["config"].strip() else head


def render_commit(value: dict[str, Any], fmt: PromptFormat) -> str:
    rules = []
    if value["types"]:
        rules.append(("types", "Types: " + ", ".join(value["types"]), ", ".join(value["types"])))
    if value["scopes"]:
        rules.append(("scopes", "Scopes: " + ", ".join(value["scopes"]), ", ".join(value["scopes"])))
    if value["max_subject_length"]:
        limit = str(value["max_subject_length"])
        rules.append(("max_subject_length", f"Subject line: at most {limit} characters", limit))
    if value["sign_off"] is not None:
        sign = "Sign off every commit (Signed-off-by)." if value["sign_off"] else "Do not add a Signed-off-by line."
        rules.append(("sign_off", sign, "true" if value["sign_off"] else "false"))
    conventions = value["conventions"].strip()
    if fmt == "xml":
        inner = [_element("conventions", conventions)] if conventions else []
        inner += [_element(tag, text) for tag, _, text in rules]
        return "<commit_conventions>\n" + "\n".join(inner) + "\n</commit_conventions>"
    parts = ["# Commit conventions"]
    if conventions:
        parts.append(conventions)
    if rules:
        parts.append("\n".join(f"- {line}" for _, line, _ in rules))
    return "\n\n".join(parts)


def commit_value(commit: CommitConfig) -> dict[str, Any]:
    return {
        "conventions": commit.conventions,
        "types": list(commit.types),
        "scopes": list(commit.scopes),
        "max_subject_length": commit.max_subject_length,
        "sign_off": commit.sign_off,
    }


_TITLES = {ROLE: "role", TASK: "task", INPUT: "user input", COMMIT: "commit conventions"}
_MD_HEADINGS = {TASK: "# Task", INPUT: "# User input"}
_XML_ELEMENTS = {ROLE: "role", TASK: "task", INPUT: "user_input"}


def render_text(key: str, text: str, fmt: PromptFormat) -> str:
    """Role, task and user input: free text under a heading (the role stands alone)."""
    text = text.strip()
    if fmt == "xml":
        return _element(_XML_ELEMENTS[key], text)
    heading = _MD_HEADINGS.get(key)
    return f"{heading}\n\n{text}" if heading else text


def render_context_header(value: dict[str, str], fmt: PromptFormat) -> str:
    what = f"{value['target']} {value['operation']}"
    if fmt == "xml":
        body = "Reference files for this task follow as context_file elements."
        return f"<context target={xml_attr(value['target'])} operation={xml_attr(value['operation'])}>{body}</context>"
    return f"# Context\n\nReference files for `{what}` follow, each labelled with its path in the repository."


# -- sources ---------------------------------------------------------------------------------


def _static(
    key: str,
    value: Any,
    render: Callable[[Any], str],
    prefix: str,
    title: str,
) -> ContextSource:
    return ContextSource(
        key=key,
        load=Constant(value),  # known fast: answered inline, no worker thread for a fixed text
        baseline=lambda current: prefix + render(current),
        update=lambda _old, current: f"The {title} changed. It now reads:\n\n{render(current)}",
        removal=lambda _old: f"The {title} given earlier no longer applies.",
    )


@lru_cache(maxsize=1024)
def text_source(key: str, text: str, fmt: PromptFormat, prefix: str = "") -> ContextSource:
    """The role, the task or the user input."""
    return _static(key, text, lambda t: render_text(key, t, fmt), prefix, _TITLES[key])


@lru_cache(maxsize=1024)
def project_source(name: str, description: str, fmt: PromptFormat, has_files: bool, prefix: str = "") -> ContextSource:
    value = {"name": name, "description": description}
    return _static(PROJECT, value, lambda v: render_project(v, fmt, has_files), prefix, "project configuration")


@lru_cache(maxsize=1024)
def service_source(name: str, path: str, config: str, fmt: PromptFormat, prefix: str = "") -> ContextSource:
    value = {"name": name, "path": path, "config": config}
    return _static(SERVICE, value, lambda v: render_service(v, fmt), prefix, "service configuration")


@lru_cache(maxsize=1024)
def commit_source(commit: CommitConfig, fmt: PromptFormat, prefix: str = "") -> ContextSource:
    return _static(COMMIT, commit_value(commit), lambda v: render_commit(v, fmt), prefix, "commit conventions")


@lru_cache(maxsize=1024)
def context_header_source(target: str, operation: str, fmt: PromptFormat, prefix: str = "") -> ContextSource:
    value = {"target": target, "operation": operation}
    return _static(CONTEXT, value, lambda v: render_context_header(v, fmt), prefix, "task context")


@lru_cache(maxsize=CACHE_SIZE)
def file_source(
    key: str, real: str, path: str, description: str, fmt: PromptFormat, element: str, root: str
) -> ContextSource:
    """One context file; ``element`` is ``project_file`` or ``context_file``.

    Its loader reads through the checked reader, confined to ``root``, and
    checks size and binary content on the bytes it read: a file swapped,
    grown or turned binary since the merge saw it is unavailable, never sent.
    """
    where = "project context" if element == "project_file" else "task context"

    def refused(exc: OSError) -> Any:
        if isinstance(exc, Refused):
            log.warning("Context file %s %s: left out", label(path), exc.problem)
        return UNAVAILABLE  # gone or refused since the producer saw it; the next producer drops it

    def value_of(content: Content) -> Any:
        problem = content_problem(content.data, content.oversize)
        if problem is not None:
            log.warning("Context file %s changed since it was checked (%s): left out", label(path), problem)
            return UNAVAILABLE
        return FileValue(path, description, content.data.decode("utf-8", errors="replace"))

    # A CachedFile: nia knows it is fast, so an unchanged file costs one stat on the caller's thread.
    load = FILES.loader(real, root=root, limit=MAX_FILE_BYTES, derive=value_of, on_error=refused)

    source = ContextSource(
        key=key,
        load=load,
        baseline=lambda value: render_file(value, fmt, element),
        update=lambda _old, value: (
            f"The file {label(value.path)} ({where}) changed. Its current content replaces the earlier one:\n\n"
            + render_file(value, fmt, element)
        ),
        removal=lambda old: (
            f"The file {label(old.path)} is no longer part of the {where}; disregard its earlier content."
        ),
        codec=FILE_CODEC,
    )
    # The file-size cap bounds this value, not NIA_MAX_SOURCE_BYTES: a file the cap admits is never refused
    # for its JSON, in which one byte can take six (a control character is written \u00XX).
    named = len(path.encode("utf-8", "surrogateescape")) + len(description.encode("utf-8", "surrogateescape"))
    return bounded_by_nia(source, JSON_EXPANSION * (MAX_FILE_BYTES + named) + 1024)


JSON_EXPANSION = 6
"""The most bytes of canonical JSON one byte of text can become (``\u0001`` for a control character)."""
