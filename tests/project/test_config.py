"""project.toml and commands.toml: values, defaults, and errors that name file, line and key path."""

from __future__ import annotations

import pytest

from nia_core.errors import UsageError
from nia_core.project.commands_config import load_commands_config
from nia_core.project.config import CommitConfig, ContextEntry, load_project_config
from nia_core.project.keypath import KeyLines, KeyPath
from nia_core.project.toml import ConfigError
from tests.project.helpers import project, run

COMMANDS = """\
[[workflows]]
target = "issue"
description = "Issues"
role_prompt = "You triage issues."
task_prompt = "Work on an issue."

[[workflows.context]]
type = "file"
path = "docs/issues.md"

[[workflows.operations]]
name = "draft"
user_input = true

[[workflows]]
target = "code"

[[workflows.operations]]
name = "create"
commit = true

[[workflows.operations.context]]
type = "file"
path = "a.md"

[[workflows.operations.context]]
type = "directory"
path = "docs/"

[[workflows.operations.context]]
type = "file"
path = 42
"""


@pytest.fixture(autouse=True)
def in_the_project(tmp_path, monkeypatch):
    """Messages name files relative to the working directory: these tests run where a user would, at the root."""
    monkeypatch.chdir(tmp_path)


def test_a_file_is_named_relative_to_the_working_directory_or_absolute_when_far(tmp_path, monkeypatch):
    root = project(tmp_path, project_toml="[project]\nname = 3\n")
    (root / "src" / "deep").mkdir(parents=True)
    expected = "[project].name must be a string, not an integer"
    for where, shown in (
        (root, ".nia/project.toml"),
        (root / "src", "../.nia/project.toml"),
        (root / "src" / "deep", "../../.nia/project.toml"),
    ):
        monkeypatch.chdir(where)
        with pytest.raises(ConfigError) as caught:
            load_project_config(root)
        assert str(caught.value) == f"{shown}:2: {expected}"
    far = root / "a" / "b" / "c"
    far.mkdir(parents=True)
    monkeypatch.chdir(far)
    with pytest.raises(ConfigError) as caught:
        load_project_config(root)
    assert str(caught.value) == f"{root / '.nia' / 'project.toml'}:2: {expected}"


def test_project_toml_values_and_defaults(tmp_path):
    root = project(
        tmp_path,
        project_toml="""\
        [project]
        name = "acme"
        description = "A shop."
        role_prompt = "Be careful."
        prompt_format = "xml"

        [[project.context]]
        type = "directory"
        path = "docs/"
        description = "Docs"

        [commit]
        conventions = "Conventional Commits."
        types = ["feat", "fix"]
        max_subject_length = 72
        sign_off = true

        [[services]]
        name = "api"
        path = "services/api"
        config = "Python 3.12, FastAPI."

        [logs]
        keep_transactions = 3

        [plugins]
        disabled = []
        """,
    )
    config = load_project_config(root)
    assert config.exists
    assert (config.project.name, config.project.prompt_format) == ("acme", "xml")
    assert config.context == (ContextEntry("directory", "docs/", "Docs", "project.toml [[project.context]][0]"),)
    assert config.commit == CommitConfig("Conventional Commits.", ("feat", "fix"), (), 72, True)
    assert [(s.name, s.path, s.origin) for s in config.services] == [
        ("api", "services/api", "project.toml [[services]][0]")
    ]
    assert config.keep_transactions == 3


def test_missing_files_mean_empty_configs(tmp_path):
    assert not load_project_config(tmp_path).exists
    assert load_project_config(tmp_path).keep_transactions == 50
    assert load_commands_config(tmp_path).targets == ()


def test_commands_toml_error_names_file_line_and_nested_key_path(tmp_path):
    root = project(tmp_path, commands_toml=COMMANDS)
    with pytest.raises(ConfigError) as caught:
        load_commands_config(root)
    assert str(caught.value) == (
        ".nia/commands.toml:32: [[workflows]][1].operations[0].context[2].path must be a string, not an integer"
    )
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[project]\nname = 3\n", ".nia/project.toml:2: [project].name must be a string, not an integer"),
        (
            '[project]\nprompt_format = "html"\n',
            '.nia/project.toml:2: [project].prompt_format must be "md" or "xml", not "html"',
        ),
        (
            '[project]\ndescripton = "typo"\n',
            ".nia/project.toml:2: [project].descripton is not a known key "
            "(expected one of: name, description, role_prompt, prompt_format, context)",
        ),
        (
            '[[project.context]]\npath = "a.md"\n',
            '.nia/project.toml:1: [[project.context]][0] needs a \'type\' key ("file" or "directory")',
        ),
        (
            '[[project.context]]\ntype = "file"\npath = "a.md"\n\n[[project.context]]\ntype = "dir"\npath = "b"\n',
            '.nia/project.toml:6: [[project.context]][1].type must be "file" or "directory", not "dir"',
        ),
        (
            '[[project.context]]\ntype = "file"\n',
            ".nia/project.toml:1: [[project.context]][0] needs a 'path' key",
        ),
        (
            '[[project.context]]\ntype = "file"\npath = "  "\n',
            ".nia/project.toml:3: [[project.context]][0].path must not be empty",
        ),
        ('[commit]\ntypes = ["feat", 2]\n', ".nia/project.toml:2: [commit].types[1] must be a string, not an integer"),
        (
            "[commit]\nmax_subject_length = 0\n",
            ".nia/project.toml:2: [commit].max_subject_length must be a positive integer, not 0",
        ),
        ('[commit]\nsign_off = "yes"\n', ".nia/project.toml:2: [commit].sign_off must be a boolean, not a string"),
        ('[[services]]\nname = "api"\n', ".nia/project.toml:1: [[services]][0] needs a 'path' key"),
        ("services = 3\n", ".nia/project.toml:1: services must be an array of tables ([[...]]), not an integer"),
        ("[logs]\nkeep_transactions = 0\n", ".nia/project.toml:2: [logs].keep_transactions must be at least 1, not 0"),
        ("project = 1\n", ".nia/project.toml:1: [project] must be a table, not an integer"),
        (
            "[project\nname = 1\n",
            ".nia/project.toml:1:9: TOML syntax error: Expected ']' at the end of a table declaration",
        ),
    ],
)
def test_project_toml_errors(tmp_path, toml, message):
    root = project(tmp_path, project_toml=toml)
    with pytest.raises(ConfigError) as caught:
        load_project_config(root)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[[workflows]]\ndescription = "x"\n', ".nia/commands.toml:1: [[workflows]][0] needs a 'target' key"),
        (
            '[[workflows]]\ntarget = "Issue Draft"\n',
            '.nia/commands.toml:2: [[workflows]][0].target "Issue Draft" is not a command name: '
            'use lowercase letters, digits, "-" and "_"',
        ),
        (
            '[[workflows]]\ntarget = "a"\n[[workflows]]\ntarget = "a"\n',
            '.nia/commands.toml:4: [[workflows]][1].target "a" is already defined by [[workflows]][0]',
        ),
        (
            '[[workflows]]\ntarget = "a"\n[[workflows.operations]]\nname = "x"\n[[workflows.operations]]\nname = "x"\n',
            '.nia/commands.toml:6: [[workflows]][0].operations[1].name "x" is already defined by '
            "[[workflows]][0].operations[0]",
        ),
        (
            '[[workflows]]\ntarget = "a"\n[[workflows.operations]]\nname = "x"\nuser_input = "yes"\n',
            ".nia/commands.toml:5: [[workflows]][0].operations[0].user_input must be a boolean, not a string",
        ),
        (
            '[[workflow]]\ntarget = "a"\n',
            ".nia/commands.toml:1: workflow is not a known key (expected one of: workflows)",
        ),
        (
            '[[workflows]]\ntarget = "a"\ntask = "typo"\n',
            ".nia/commands.toml:3: [[workflows]][0].task is not a known key (expected one of: target, "
            "description, role_prompt, task_prompt, context, operations)",
        ),
        (
            '[[workflows]]\ntarget = "a"\ncontext = [{type = "file", path = "x", extra = 1}]\n',
            ".nia/commands.toml:3: [[workflows]][0].context[0].extra is not a known key "
            "(expected one of: type, path, description)",
        ),
        (
            '[[workflows]]\ntarget = "a"\ntask_prompt = """\nline\n[not a header]\n"""\nrole_prompt = 5\n',
            ".nia/commands.toml:7: [[workflows]][0].role_prompt must be a string, not an integer",
        ),
    ],
)
def test_commands_toml_errors(tmp_path, toml, message):
    root = project(tmp_path, commands_toml=toml)
    with pytest.raises(ConfigError) as caught:
        load_commands_config(root)
    assert str(caught.value) == message


def test_config_errors_reach_the_cli_as_one_line_and_exit_2(tmp_path):
    root = project(tmp_path, commands_toml=COMMANDS)
    result = run(root, "workflows", "list")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: .nia/commands.toml:32: [[workflows]][1].operations[0].context[2].path "
        "must be a string, not an integer\n"
    )
    assert "Traceback" not in result.output


def test_a_broken_commands_toml_is_reported_when_a_workflow_is_asked_for(tmp_path):
    root = project(tmp_path, commands_toml=COMMANDS)
    result = run(root, "code", "create")
    assert result.exit_code == 2
    assert ".nia/commands.toml:32: [[workflows]][1].operations[0].context[2].path" in result.stderr


def test_cached_config_is_reread_when_the_file_changes(tmp_path):
    root = project(tmp_path, project_toml='[project]\nname = "one"\n')
    first = load_project_config(root)
    assert load_project_config(root) is first
    (root / ".nia/project.toml").write_text('[project]\nname = "second"\n')
    assert load_project_config(root).project.name == "second"


def test_config_error_is_a_usage_error():
    assert issubclass(ConfigError, UsageError)


def test_key_lines_follow_arrays_of_tables_and_skip_strings_and_arrays():
    text = "\n".join(
        [
            "[[workflows]]",  # 1
            'target = "a"',  # 2
            "types = [",  # 3
            '  ["not", "a header"],',  # 4
            "]",  # 5
            "[[workflows.operations]]",  # 6
            'name = "x"',  # 7
            "[[workflows]]",  # 8
            'task_prompt = """',  # 9
            "[[workflows.operations]]",  # 10 (inside a string)
            '"""',  # 11
            "[[workflows.operations]]",  # 12
            '"quoted key" = 1',  # 13
        ]
    )
    lines = KeyLines(text)
    root = KeyPath()
    assert lines.line_of(root.element("workflows", 0).key("types")) == 3
    assert lines.line_of(root.element("workflows", 0).element("operations", 0).key("name")) == 7
    assert lines.line_of(root.element("workflows", 1)) == 8
    assert lines.line_of(root.element("workflows", 1).element("operations", 0)) == 12
    assert lines.line_of(root.element("workflows", 1).element("operations", 0).key("quoted key")) == 13
    assert lines.line_of(root.element("workflows", 1).element("operations", 0).key("missing")) == 12


def test_key_path_text():
    root = KeyPath()
    assert str(root.table("project").element("context", 0).key("path")) == "[[project.context]][0].path"
    assert str(root.element("workflows", 1).element("operations", 0).element("context", 2).key("path")) == (
        "[[workflows]][1].operations[0].context[2].path"
    )
    assert str(root.table("commit").key("types").item(2)) == "[commit].types[2]"
    assert str(root.key("version")) == "version"


def test_elsewhere_on_the_machine_a_file_is_named_by_its_absolute_path(tmp_path, monkeypatch):
    from nia_core.project.paths import shown_path

    here = tmp_path / "work" / "project"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    elsewhere = tmp_path / "other" / "x" / "y" / "project" / ".nia" / "project.toml"
    assert shown_path(elsewhere) == str(elsewhere)  # one folder up, then five down: not "your" project
    assert shown_path(tmp_path / "work" / "notes" / "a.md") == "../notes/a.md"
    assert shown_path(here / "docs" / "a\nb.md") == "docs/a\\x0ab.md"
