"""The workflow commands: listing, dynamic commands, input, flags, exit codes."""

from __future__ import annotations

import json

from tests.project.helpers import project, run

COMMANDS = """\
[[workflows]]
target = "issue"
description = "Work with issues"

[[workflows.operations]]
name = "draft"
description = "Draft an issue"
task_prompt = "Draft an issue from the user's notes."
user_input = true

[[workflows.operations]]
name = "triage"

[[workflows]]
target = "code"

[[workflows.operations]]
name = "create"
description = "Create code"
commit = true

[[workflows]]
target = "context"
description = "Shadowed by the built-in"
"""


def make(tmp_path, **files):
    return project(tmp_path, commands_toml=COMMANDS, files={"docs/a.md": "alpha\n", **files})


def test_workflows_list(tmp_path):
    result = run(make(tmp_path), "workflows", "list")
    assert result.exit_code == 0
    assert result.stdout == (
        "issue: Work with issues\n"
        "  nia issue draft   Draft an issue [takes input]\n"
        "  nia issue triage\n"
        "code\n"
        "  nia code create  Create code [commit conventions]\n"
        "context: Shadowed by the built-in  (hidden by the built-in command 'nia context')\n"
        "  (no operations)\n"
    )


def test_workflows_list_json(tmp_path):
    data = json.loads(run(make(tmp_path), "workflows", "list", "--json").stdout)
    assert [(w["target"], w["hidden_by_builtin"]) for w in data["workflows"]] == [
        ("issue", False),
        ("code", False),
        ("context", True),
    ]
    assert data["workflows"][0]["operations"][0] == {
        "name": "draft",
        "description": "Draft an issue",
        "user_input": True,
        "commit": False,
    }


def test_workflows_list_without_commands_toml(tmp_path):
    result = run(tmp_path, "workflows", "list")
    assert result.exit_code == 0 and "No workflows" in result.stdout


def test_targets_and_operations_are_commands_with_help(tmp_path):
    root = make(tmp_path)
    top = run(root, "--help").stdout
    assert "issue" in top and "Work with issues" in top and "code" in top
    group = run(root, "issue", "--help").stdout
    assert "draft" in group and "triage" in group
    command = run(root, "issue", "draft", "--help").stdout
    for flag in ("--context-file", "--context-dir", "--print-prompt", "--format", "--verbose"):
        assert flag in command
    assert "[USER_INPUT]..." in command
    assert "  Draft an issue\n\n  The user input comes from the arguments, else from stdin.\n" in command
    assert "[USER_INPUT]" not in run(root, "issue", "triage", "--help").stdout


def test_a_builtin_command_wins_over_a_target_of_the_same_name(tmp_path):
    result = run(make(tmp_path), "context", "show", "--json")
    assert result.exit_code == 0 and "baseline" in json.loads(result.stdout)


def test_user_input_from_the_argument_or_stdin(tmp_path):
    root = make(tmp_path)
    argument = run(root, "issue", "draft", "--print-prompt", "Login", "is", "slow")
    assert argument.exit_code == 0, argument.output
    assert "# User input\n\nLogin is slow\n\n---" in argument.stdout
    piped = run(root, "issue", "draft", "--print-prompt", input="Login is slow\nsince Monday\n")
    assert piped.exit_code == 0, piped.output
    assert "# User input\n\nLogin is slow\nsince Monday\n\n---" in piped.stdout


def test_missing_or_unexpected_input_is_a_usage_error(tmp_path):
    root = make(tmp_path)
    missing = run(root, "issue", "draft", "--print-prompt", input="")
    assert missing.exit_code == 2
    assert missing.stderr == "Error: nia issue draft needs user input: pass it as an argument or on stdin\n"
    extra = run(root, "issue", "triage", "unexpected")
    assert extra.exit_code == 2 and "unexpected extra argument" in extra.stderr


def test_running_a_workflow_opens_a_session_whose_baseline_is_the_printed_prompt(tmp_path):
    root = make(tmp_path)
    printed = run(root, "code", "create", "--print-prompt").stdout
    result = run(root, "code", "create")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("[echo/echo] baseline ")
    assert result.stdout.endswith("you said: Carry out the task described in the system context.\n")
    session_id = result.stderr.splitlines()[0].removeprefix("session ")
    log = json.loads((root / ".nia/logs/transactions/latest.json").read_text())
    assert log["status"] == "assembled"
    view = json.loads(run(root, "session", "show", session_id, "--model-view", "--json").stdout)
    assert view["system"] + "\n" == printed
    assert view["messages"][0] == {"role": "user", "content": "Carry out the task described in the system context."}


def test_a_workflow_session_continues_with_session_and_reports_changes_once(tmp_path):
    root = make(tmp_path)
    first = run(root, "issue", "draft", "Login is slow")
    session_id = first.stderr.splitlines()[0].removeprefix("session ")
    again = run(root, "issue", "draft", "--session", session_id[:8], "It is the cache")
    assert again.exit_code == 0, again.stderr
    view = json.loads(run(root, "session", "show", session_id, "--model-view", "--json").stdout)
    roles = [m["role"] for m in view["messages"]]
    assert roles == ["user", "assistant", "user", "system", "assistant"]
    update = view["messages"][3]["content"]
    assert update == "The user input changed. It now reads:\n\n# User input\n\nIt is the cache"
    assert view["messages"][2]["content"] == "It is the cache"


def test_continuing_a_session_from_another_location_is_refused(tmp_path):
    root = make(tmp_path / "one")
    other = make(tmp_path / "two")
    session_id = run(root, "code", "create").stderr.splitlines()[0].removeprefix("session ")
    result = run(other, "code", "create", "--session", session_id)
    assert result.exit_code == 2
    assert f"session {session_id} is at {root.resolve()}" in result.stderr


def test_missing_context_file_error_and_exit_status(tmp_path):
    root = project(
        tmp_path,
        project_toml='[[project.context]]\ntype = "file"\npath = "docs/missing.md"\n',
        commands_toml=COMMANDS,
    )
    result = run(root, "code", "create", "--print-prompt")
    assert result.exit_code == 2
    assert (
        result.stderr
        == "Error: Context file not found: docs/missing.md\n  Source: project.toml [[project.context]][0]\n"
    )
    flag = run(make(tmp_path / "other"), "issue", "triage", "--context-dir", "nope/")
    assert flag.exit_code == 2
    assert flag.stderr == "Error: Context directory not found: nope/\n  Source: --context-dir\n"


def test_verbose_lists_included_and_skipped_files_and_warnings_always_show(tmp_path):
    files = {f"many/f{i:03d}.md": "x" for i in range(101)}
    root = make(tmp_path, **{"docs/diagram.png": b"\x89PNG\r\n\x1a\n", **files})
    quiet = run(root, "code", "create", "--print-prompt", "--context-dir", "docs", "--context-dir", "many")
    assert quiet.exit_code == 0
    assert "Skipped:" not in quiet.stderr
    assert "Warning: Maximum file limit (100) reached for directory many/\n  Skipped remaining files\n" in quiet.stderr
    loud = run(root, "code", "create", "--print-prompt", "-v", "--context-dir", "docs")
    assert "Skipped: docs/diagram.png (binary)" in loud.stderr
    assert "Included: docs/a.md (task context, 6 bytes, from --context-dir)" in loud.stderr
    assert "Transaction log: .nia/logs/transactions/" in loud.stderr


def test_flag_paths_are_relative_to_the_working_directory(tmp_path):
    root = make(tmp_path, **{"pkg/notes.md": "pkg notes\n"})
    result = run(
        root / "pkg", "code", "create", "--print-prompt", "--context-file", "notes.md", "--context-file", "../docs/a.md"
    )
    assert result.exit_code == 0, result.output
    assert "## File: pkg/notes.md" in result.stdout and "## File: docs/a.md" in result.stdout


def test_no_workflow_commands_outside_a_project(tmp_path):
    result = run(tmp_path, "issue", "draft")
    assert result.exit_code == 2 and "No such command 'issue'" in result.stderr


STATUS_PLUGIN = """\
from nia_core import UNAVAILABLE, ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    path = location.root / "status.txt"

    def load():
        return path.read_text().strip() if path.exists() else UNAVAILABLE

    return [ContextSource(key="acme/status", load=load, baseline=lambda v: f"Status: {v}")]
"""


def test_a_blocked_context_keeps_a_new_workflow_sessions_input_pending(tmp_path):
    root = make(tmp_path, **{".nia/plugins/status.py": STATUS_PLUGIN})

    blocked = run(root, "issue", "draft", "Login is slow")

    assert blocked.exit_code == 3, blocked.stderr
    session_id = blocked.stderr.splitlines()[0].removeprefix("session ")
    assert blocked.stderr.splitlines()[-1] == (
        f"Error: session {session_id}: the initial context is blocked on: acme/status; "
        f"the input is kept pending, retry with: nia issue draft --session {session_id}"
    )
    log = json.loads((root / ".nia/logs/transactions/latest.json").read_text())
    assert log["status"] == "blocked" and log["error"] == "context blocked on: acme/status"
    pending = json.loads(run(root, "session", "show", session_id, "--json").stdout)["pending"]
    assert [m["text"] for m in pending] == ["Carry out the task described in the system context."]

    (root / "status.txt").write_text("green\n")
    again = run(root, "session", "send", session_id)
    assert again.exit_code == 0, again.stderr
    assert "you said: Carry out the task described in the system context." in again.stdout


def test_a_continued_workflow_session_keeps_an_admitted_source_that_is_unavailable_now(tmp_path):
    root = make(tmp_path, **{".nia/plugins/status.py": STATUS_PLUGIN, "status.txt": "green\n"})
    first = run(root, "issue", "draft", "Login is slow")
    session_id = first.stderr.splitlines()[0].removeprefix("session ")
    (root / "status.txt").unlink()  # the tracker is down for a moment

    again = run(root, "issue", "draft", "--session", session_id, "It is the cache")

    assert again.exit_code == 0, again.stderr
    view = json.loads(run(root, "session", "show", session_id, "--model-view", "--json").stdout)
    assert "Status: green" in view["system"]  # stale-while-revalidate: the admitted value stays
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "user", "system", "assistant"]
    assert "acme/status" not in view["messages"][3]["content"] and "Status" not in view["messages"][3]["content"]


def test_print_prompt_with_a_blocked_context_fails_naming_the_source(tmp_path):
    root = make(tmp_path, **{".nia/plugins/status.py": STATUS_PLUGIN})

    result = run(root, "issue", "draft", "--print-prompt", "Login is slow")

    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == "Error: context blocked on: acme/status\n"
