"""Transaction logs: one per run, latest.json replaced atomically, old ones pruned."""

from __future__ import annotations

import datetime as dt
import json
import os

from nia_core.project import locate, translog
from nia_core.project.workflow import assemble_workflow
from tests.project.helpers import project, run

COMMANDS = """\
[[workflows]]
target = "code"

[[workflows.context]]
type = "directory"
path = "docs/"
description = "Docs"

[[workflows.operations]]
name = "create"
user_input = true
"""


def logs(root):
    folder = root / ".nia/logs/transactions"
    return sorted(name for name in os.listdir(folder) if name != "latest.json")


def test_a_run_logs_every_source_with_origin_size_and_description(tmp_path):
    root = project(
        tmp_path,
        project_toml='[[project.context]]\ntype = "file"\npath = "README.md"\ndescription = "Readme"\n',
        commands_toml=COMMANDS,
        files={"README.md": "# Shop\n", "docs/a.md": "alpha\n", "docs/pic.png": b"\x89PNG\r\n\x1a\n", "extra.md": "e"},
    )
    with open(root / "docs/dump.sql", "wb") as handle:
        handle.truncate(2 * 1024 * 1024)
    result = run(root, "code", "create", "--context-file", "extra.md", "--print-prompt", "make", "it")
    assert result.exit_code == 0, result.output
    names = logs(root)
    assert len(names) == 1
    latest = (root / ".nia/logs/transactions/latest.json").read_text()
    assert (root / ".nia/logs/transactions" / names[0]).read_text() == latest
    log = json.loads(latest)
    assert log["command"] == "nia code create --context-file extra.md --print-prompt <input>"
    assert (log["target"], log["operation"], log["status"], log["format"]) == ("code", "create", "printed", "md")
    assert log["user_input"] == {"source": "argument", "bytes": len("make it")}
    assert [
        (s["category"], s["original_path"], s["canonical_path"], s["origin"], s["size"], s["description"])
        for s in log["context_sources"]
    ] == [
        ("project", "README.md", str(root / "README.md"), "project.toml [[project.context]][0]", 7, "Readme"),
        (
            "context",
            "docs/a.md",
            str(root / "docs/a.md"),
            "commands.toml [[workflows]][0].context[0]",
            6,
            "Docs (from directory)",
        ),
        ("context", "extra.md", str(root / "extra.md"), "--context-file", 1, ""),
    ]
    assert [(s["original_path"], s["reason"], s["size"]) for s in log["skipped"]] == [
        ("docs/dump.sql", "exceeds 1MB limit", 2 * 1024 * 1024),
        ("docs/pic.png", "binary", 8),
    ]
    assert log["baseline_bytes"] == len(result.stdout.encode()) - 1
    assert [s["key"] for s in log["sections"]][:1] == ["nia/project.config"]
    assert not [n for n in os.listdir(root / ".nia/logs/transactions") if n.startswith(".tmp")]


def test_logs_are_pruned_to_the_configured_count(tmp_path):
    root = project(
        tmp_path, project_toml="[logs]\nkeep_transactions = 2\n", commands_toml=COMMANDS, files={"docs/a.md": "a"}
    )
    for i in range(4):
        assert run(root, "code", "create", "--print-prompt", f"run {i}").exit_code == 0
    names = logs(root)
    assert len(names) == 2
    kept = [json.loads((root / ".nia/logs/transactions" / n).read_text())["user_input"]["bytes"] for n in names]
    assert kept == [len("run 2"), len("run 3")]


def test_a_failed_run_is_logged_with_its_error(tmp_path):
    root = project(tmp_path, commands_toml=COMMANDS, files={"docs/a.md": "a"})
    result = run(root, "code", "create", "--context-file", "docs/missing.md", "x")
    assert result.exit_code == 2
    log = json.loads((root / ".nia/logs/transactions/latest.json").read_text())
    assert log["status"] == "error"
    assert log["error"] == "Context file not found: docs/missing.md\n  Source: --context-file"


def test_two_runs_in_the_same_microsecond_get_two_logs(tmp_path):
    root = project(tmp_path, commands_toml=COMMANDS, files={"docs/a.md": "a"})
    workflow = assemble_workflow(locate(root), "code", "create", user_input="x")
    moment = dt.datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
    first = translog.write(root, translog.record(workflow, command="a", status="printed", now=moment), keep=10)
    second = translog.write(root, translog.record(workflow, command="b", status="printed", now=moment), keep=10)
    assert first.name == "20300102T030405.678901Z.json"
    assert second.name == "20300102T030405.678901Z-1.json"
    assert json.loads(first.read_text())["command"] == "a"
    assert json.loads((root / ".nia/logs/transactions/latest.json").read_text())["command"] == "b"


def test_prune_leaves_other_files_alone(tmp_path):
    folder = tmp_path
    for name in ("20300101T000000.000001Z.json", "20300101T000000.000002Z.json", "notes.txt", "latest.json"):
        (folder / name).write_text("{}")
    removed = translog.prune(folder, keep=1)
    assert [p.name for p in removed] == ["20300101T000000.000001Z.json"]
    assert sorted(os.listdir(folder)) == ["20300101T000000.000002Z.json", "latest.json", "notes.txt"]
