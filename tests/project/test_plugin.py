"""The nia-project plugin: category 1 in every session at a Location with a .nia/project.toml."""

from __future__ import annotations

import json
import os

import nia_plugins
from nia_core.context import Updated, initialize, reconcile
from nia_core.plugin_host import load_host
from nia_core.project import locate
from nia_core.project.prompt import PROJECT, PROJECT_FILES, SERVICE, file_key
from tests.project.helpers import project, run

PROJECT_TOML = """\
[project]
name = "acme"
description = "A shop."

[[project.context]]
type = "directory"
path = "docs"
description = "Docs"

[[services]]
name = "api"
path = "services/api"
config = "FastAPI."
"""


def make(tmp_path):
    return project(
        tmp_path,
        project_toml=PROJECT_TOML,
        files={"docs/a.md": "alpha\n", "docs/b.md": "beta\n", "services/api/main.py": "app = 1\n"},
    )


def assemble(where):
    location = locate(where)
    host = load_host(location)
    return host, host.open(location)


def test_is_a_builtin():
    assert nia_plugins.BUILTINS["nia-project"] == "nia_plugins.project"


def test_context_show_includes_project_config_and_files(tmp_path):
    root = make(tmp_path)
    result = run(root, "context", "show", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    by_key = {s["key"]: s["plugin"] for s in data["sources"]}
    assert by_key[PROJECT] == "nia-project"
    assert by_key[file_key(PROJECT_FILES, "docs/a.md")] == "nia-project"
    assert SERVICE not in by_key
    assert "# Project: acme\n\nA shop.\n\n## Project context" in data["baseline"]
    assert "### File: docs/b.md\nDescription: Docs (from directory)\n\n```md\nbeta\n```" in data["baseline"]


def test_the_service_applies_where_the_working_directory_is(tmp_path):
    root = make(tmp_path)
    result = run(root / "services/api", "context", "show")
    assert "---\n\n# Service: api (services/api)\n\nFastAPI." in result.stdout


def test_no_project_toml_no_sources(tmp_path):
    data = json.loads(run(tmp_path, "context", "show", "--json").stdout)
    assert not [s for s in data["sources"] if s["key"].startswith("nia/project.")]


def test_a_session_sees_one_update_per_edited_file_and_a_removal_per_vanished_one(tmp_path):
    root = make(tmp_path)
    host, view = assemble(root)
    generation = initialize(host.assemble(view).context)
    (root / "docs/a.md").write_text("alpha, revised\n")
    result = reconcile(host.assemble(view).context, generation.snapshot)
    assert isinstance(result, Updated)
    assert [(c.key, c.kind) for c in result.changes] == [(file_key(PROJECT_FILES, "docs/a.md"), "updated")]
    assert "alpha, revised" in result.text and "beta" not in result.text
    os.remove(root / "docs/b.md")
    after = reconcile(host.assemble(view).context, result.snapshot)
    assert isinstance(after, Updated)
    assert [(c.key, c.kind) for c in after.changes] == [(file_key(PROJECT_FILES, "docs/b.md"), "removed")]
    assert after.text == "The file docs/b.md is no longer part of the project context; disregard its earlier content."


def test_project_description_edits_are_updates(tmp_path):
    root = make(tmp_path)
    host, view = assemble(root)
    generation = initialize(host.assemble(view).context)
    toml = root / ".nia/project.toml"
    toml.write_text(toml.read_text().replace("A shop.", "A bigger shop."))
    result = reconcile(host.assemble(view).context, generation.snapshot)
    assert isinstance(result, Updated)
    assert [(c.key, c.kind) for c in result.changes] == [(PROJECT, "updated")]
    assert result.text.startswith(
        "The project configuration changed. It now reads:\n\n# Project: acme\n\nA bigger shop."
    )


def test_a_missing_entry_is_a_warning_and_the_rest_still_loads(tmp_path):
    root = make(tmp_path)
    toml = root / ".nia/project.toml"
    toml.write_text(toml.read_text() + '\n[[project.context]]\ntype = "file"\npath = "docs/gone-for-the-plugin.md"\n')
    result = run(root, "context", "show")
    assert result.exit_code == 0
    assert "Context file not found: docs/gone-for-the-plugin.md" in result.stderr
    assert "### File: docs/a.md" in result.stdout


def test_prompt_format_xml_applies_to_the_plugin_too(tmp_path):
    root = make(tmp_path)
    toml = root / ".nia/project.toml"
    toml.write_text(toml.read_text().replace('name = "acme"', 'name = "acme"\nprompt_format = "xml"'))
    assert '<project_file path="docs/a.md" description="Docs (from directory)">' in run(root, "context", "show").stdout


def test_switching_the_plugin_off_removes_it_from_sessions_but_not_from_workflows(tmp_path):
    root = make(tmp_path)
    (root / ".nia/commands.toml").write_text(
        '[[workflows]]\ntarget = "code"\n[[workflows.operations]]\nname = "create"\n'
    )
    shown = run(root, "-p", "no:nia-project", "context", "show")
    assert "# Project: acme" not in shown.stdout
    printed = run(root, "-p", "no:nia-project", "code", "create", "--print-prompt")
    assert printed.exit_code == 0 and printed.stdout.startswith("# Project: acme")


def test_a_project_toml_broken_mid_session_keeps_the_last_valid_one(tmp_path):
    root = make(tmp_path)
    host, view = assemble(root)
    generation = initialize(host.assemble(view).context)
    toml = root / ".nia/project.toml"
    toml.write_text(toml.read_text().replace('name = "acme"', "name = 42"))
    assert not isinstance(reconcile(host.assemble(view).context, generation.snapshot), Updated)
    toml.write_text(toml.read_text().replace("name = 42", 'name = "acme2"'))
    result = reconcile(host.assemble(view).context, generation.snapshot)
    assert isinstance(result, Updated) and [(c.key, c.kind) for c in result.changes] == [(PROJECT, "updated")]


def test_an_invalid_project_toml_on_first_load_is_reported(tmp_path):
    root = make(tmp_path / "fresh")
    (root / ".nia/project.toml").write_text("[project]\nname = 42\n")
    result = run(root, "context", "show")
    assert result.exit_code == 2  # a configuration error, as a syntax error is (issue 27.4), not a plugin's failure
    assert result.stderr == "Error: .nia/project.toml:2: [project].name must be a string, not an integer\n"
