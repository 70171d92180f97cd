"""The prompt: sections in the reference order, separated by ---, as context sources."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import pytest

from nia_core import ContextSource
from nia_core.context import SystemContext, Updated, initialize, reconcile
from nia_core.errors import UsageError
from nia_core.plugin_host import load_host
from nia_core.project import locate
from nia_core.project.prompt import (
    COMMIT,
    CONTEXT,
    CONTEXT_FILES,
    INPUT,
    PROJECT,
    PROJECT_FILES,
    ROLE,
    SERVICE,
    TASK,
    file_key,
    xml_text,
)
from nia_core.project.workflow import assemble_workflow
from tests.project.helpers import project, run

PROJECT_TOML = """\
[project]
name = "acme"
description = "A shop."
role_prompt = "You are the project's engineer."

[[project.context]]
type = "file"
path = "docs/arch.md"
description = "Architecture"

[commit]
conventions = "Conventional Commits."
types = ["feat", "fix"]

[[services]]
name = "api"
path = "services/api"
config = "FastAPI service."
"""

COMMANDS_TOML = """\
[[workflows]]
target = "code"
role_prompt = "You write code."
task_prompt = "Write good code."

[[workflows.context]]
type = "file"
path = "docs/style.md"
description = "Style"

[[workflows.operations]]
name = "create"
task_prompt = "Create it."
user_input = true
commit = true

[[workflows.operations]]
name = "review"

[[workflows]]
target = "bare"

[[workflows.operations]]
name = "task"
task_prompt = "Only a task."
"""

MD = """\
You write code.

---

# Project: acme

A shop.

## Project context

The files that follow describe the project.

### File: docs/arch.md
Description: Architecture

```md
Layers.
```

---

# Service: api (services/api)

FastAPI service.

---

# Task

Write good code.

Create it.

---

# Context

Reference files for `code create` follow, each labelled with its path in the repository.

## File: docs/style.md
Description: Style

```md
Tabs & <spaces>.
```

---

# User input

Add a cart.

---

# Commit conventions

Conventional Commits.

- Types: feat, fix"""

XML = """\
<role>
You write code.
</role>

---

<project name="acme">
<description>
A shop.
</description>
<project_context>The project_file elements that follow describe the project.</project_context>
</project>

<project_file path="docs/arch.md" description="Architecture">
Layers.
</project_file>

---

<service name="api" path="services/api">
FastAPI service.
</service>

---

<task>
Write good code.

Create it.
</task>

---

<context target="code" operation="create">Reference files for this task follow as context_file elements.</context>

<context_file path="docs/style.md" description="Style">
<![CDATA[Tabs & <spaces>.]]>
</context_file>

---

<user_input>
Add a cart.
</user_input>

---

<commit_conventions>
<conventions>
Conventional Commits.
</conventions>
<types>
feat, fix
</types>
</commit_conventions>"""


@pytest.fixture
def root(tmp_path):
    return project(
        tmp_path / "shop",
        project_toml=PROJECT_TOML,
        commands_toml=COMMANDS_TOML,
        files={"docs/arch.md": "Layers.\n", "docs/style.md": "Tabs & <spaces>.\n", "services/api/sub/x.py": "x = 1\n"},
    )


def workflow(root, where=".", target="code", operation="create", **options):
    if operation == "create":
        options.setdefault("user_input", "Add a cart.")
    return assemble_workflow(locate(root / where), target, operation, **options)


def test_markdown_prompt_has_every_section_in_the_reference_order(root):
    generation = initialize(workflow(root, "services/api").system_context())
    assert generation.baseline == MD
    assert [key for key, _ in generation.parts] == [
        ROLE,
        PROJECT,
        file_key(PROJECT_FILES, "docs/arch.md"),
        SERVICE,
        TASK,
        CONTEXT,
        file_key(CONTEXT_FILES, "docs/style.md"),
        INPUT,
        COMMIT,
    ]


def test_xml_prompt_has_the_same_sections_and_each_part_is_well_formed(root):
    generation = initialize(workflow(root, "services/api", prompt_format="xml").system_context())
    assert generation.baseline == XML
    for _, text in generation.parts:
        ET.fromstring(text.removeprefix("---\n\n"))


def test_prompt_format_comes_from_project_toml_unless_the_flag_says_otherwise(root):
    toml = root / ".nia/project.toml"
    toml.write_text(toml.read_text().replace('name = "acme"', 'name = "acme"\nprompt_format = "xml"'))
    assert workflow(root).format == "xml"
    assert workflow(root, prompt_format="md").format == "md"
    result = run(root, "code", "create", "--print-prompt", "x")
    assert "<role>" in result.stdout
    result = run(root, "code", "create", "--print-prompt", "--format", "md", "x")
    assert "<role>" not in result.stdout and "# Task" in result.stdout


def test_sections_without_content_are_absent_and_separators_never_double(root):
    (root / ".nia/project.toml").write_text("")
    baseline = initialize(workflow(root, target="bare", operation="task").system_context()).baseline
    assert baseline == "# Task\n\nOnly a task."
    review = initialize(workflow(root, operation="review").system_context()).baseline
    assert review.startswith("You write code.\n\n---\n\n# Task\n\nWrite good code.\n\n---\n\n# Context")
    assert "---\n\n---" not in review and not review.endswith("---")
    assert "Commit conventions" not in review and "User input" not in review and "Project" not in review


def test_role_falls_back_to_the_project_role(root):
    commands = root / ".nia/commands.toml"
    commands.write_text(commands.read_text().replace('role_prompt = "You write code."\n', ""))
    assert workflow(root).role_prompt == "You are the project's engineer."


def test_commit_conventions_only_for_operations_that_ask(root):
    assert COMMIT in workflow(root).system_context().keys
    assert COMMIT not in workflow(root, operation="review").system_context().keys


def test_service_is_the_deepest_one_holding_the_working_directory(root):
    toml = root / ".nia/project.toml"
    toml.write_text(toml.read_text() + '\n[[services]]\nname = "all"\npath = "services"\nconfig = "Monorepo."\n')
    assert workflow(root).category1.service is None
    assert workflow(root, "services").category1.service.name == "all"
    assert workflow(root, "services/api/sub").category1.service.name == "api"


def test_user_input_is_required_or_refused(root):
    with pytest.raises(UsageError, match="needs user input"):
        workflow(root, user_input="   ")
    with pytest.raises(UsageError, match="takes no user input"):
        workflow(root, operation="review", user_input="x")
    with pytest.raises(UsageError, match="unknown operation 'nope' for target 'code' \\(defined: create, review\\)"):
        workflow(root, operation="nope")
    with pytest.raises(UsageError, match="unknown workflow target 'nope' \\(defined: code, bare\\)"):
        workflow(root, target="nope")


def test_print_prompt_is_exactly_the_baseline_the_engine_would_send(root):
    where = root / "services/api"
    result = run(where, "code", "create", "--print-prompt", "Add", "a", "cart.")
    assert result.exit_code == 0, result.output
    location = locate(where)
    host = load_host(location)
    view = host.open(location)
    composed = workflow(root, "services/api").compose(host.assemble(view).context)
    assert result.stdout == initialize(composed).baseline + "\n"
    assert result.stdout.startswith(MD + "\n\n---\n\nEnvironment:")


def test_compose_drops_the_plugin_copy_of_category_1_and_separates_the_rest(root):
    other = ContextSource(key="acme/other", load=lambda: 1, baseline=lambda v: "Other context.")
    plugin_copy = ContextSource(key=PROJECT, load=lambda: 1, baseline=lambda v: "plugin rendering")
    composed = workflow(root).compose(SystemContext([plugin_copy, other]))
    baseline = initialize(composed).baseline
    assert "plugin rendering" not in baseline
    assert baseline.endswith("- Types: feat, fix\n\n---\n\nOther context.")
    assert composed.sources[-1] is workflow(root).compose(SystemContext([other])).sources[-1]


def test_editing_one_file_updates_that_file_only(root):
    wf = workflow(root)
    generation = initialize(wf.system_context())
    (root / "docs/style.md").write_text("Four spaces, never tabs.\n")
    result = reconcile(wf.system_context(), generation.snapshot)
    assert isinstance(result, Updated)
    assert [(c.key, c.kind) for c in result.changes] == [(file_key(CONTEXT_FILES, "docs/style.md"), "updated")]
    assert result.text == (
        "The file docs/style.md (task context) changed. Its current content replaces the earlier one:\n\n"
        "## File: docs/style.md\nDescription: Style\n\n```md\nFour spaces, never tabs.\n```"
    )


def test_a_vanished_file_produces_a_removal_note(root):
    wf = workflow(root)
    generation = initialize(wf.system_context())
    os.remove(root / "docs/arch.md")
    result = reconcile(wf.system_context(), generation.snapshot)
    assert isinstance(result, Updated)
    assert [(c.key, c.kind) for c in result.changes] == [(file_key(PROJECT_FILES, "docs/arch.md"), "removed")]
    assert result.text == (
        "The file docs/arch.md is no longer part of the project context; disregard its earlier content."
    )


def test_a_file_that_turns_binary_leaves_and_a_new_file_in_a_folder_arrives(root):
    commands = root / ".nia/commands.toml"
    commands.write_text(
        commands.read_text().replace('type = "file"\npath = "docs/style.md"', 'type = "directory"\npath = "docs/"', 1)
    )
    wf = workflow(root)
    generation = initialize(wf.system_context())
    (root / "docs/style.md").write_bytes(b"\x89PNG\r\n\x1a\n....")
    (root / "docs/new.md").write_text("New.\n")
    result = reconcile(wf.system_context(), generation.snapshot)
    assert isinstance(result, Updated)
    assert sorted((c.key, c.kind) for c in result.changes) == sorted(
        [(file_key(CONTEXT_FILES, "docs/new.md"), "added"), (file_key(CONTEXT_FILES, "docs/style.md"), "removed")]
    )


def test_xml_text_uses_cdata_only_when_needed():
    assert xml_text("plain") == "plain"
    assert xml_text("a < b") == "<![CDATA[a < b]]>"
    tricky = "x ]]> y <z>"
    wrapped = ET.fromstring(f"<t>{xml_text(tricky)}</t>")
    assert wrapped.text == tricky


def test_markdown_fence_is_longer_than_any_fence_in_the_file(root):
    (root / "docs/style.md").write_text("Use\n```python\ncode\n```\nand ````four````.\n")
    baseline = initialize(workflow(root).system_context()).baseline
    assert "`````md\nUse\n```python\ncode\n```\nand ````four````.\n`````" in baseline


def test_a_workflow_session_follows_project_toml_edits(root):
    wf = workflow(root)
    generation = initialize(wf.system_context())
    toml = root / ".nia/project.toml"
    toml.write_text(toml.read_text().replace('types = ["feat", "fix"]', 'types = ["feat", "fix", "docs"]'))
    result = reconcile(wf.system_context(), generation.snapshot)
    assert isinstance(result, Updated)
    assert [(c.key, c.kind) for c in result.changes] == [(COMMIT, "updated")]
    assert "- Types: feat, fix, docs" in result.text


def test_context_for_composes_the_workflow_in_front_of_what_a_session_assembles(root):
    other = ContextSource(key="acme/other", load=lambda: 1, baseline=lambda v: "Other context.")
    seen = []

    def assemble(path):
        seen.append(path)
        return SystemContext([other])

    context_for = workflow(root).context_for(assemble)
    composed = context_for(str(root))
    assert seen == [str(root)]
    assert composed.keys[0] == ROLE and composed.keys[-1] == "acme/other"
