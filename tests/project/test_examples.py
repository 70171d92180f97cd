"""The four examples of the context-merging reference, each a fixture project run through the CLI."""

from __future__ import annotations

import json

from tests.project.helpers import example, run


def latest(root):
    return json.loads((root / ".nia/logs/transactions/latest.json").read_text())


def labels(prompt: str) -> list[str]:
    return [line.split("File: ", 1)[1] for line in prompt.splitlines() if line.lstrip("#").startswith(" File: ")]


def section(prompt: str, heading: str) -> str:
    """The ``---``-separated section of ``prompt`` that starts with ``heading``."""
    return next(part for part in prompt.split("\n\n---\n\n") if part.startswith(heading))


def test_example_1_simple_merge(tmp_path):
    root = example("simple_merge", tmp_path)
    result = run(root, "code", "create", "--context-file", "docs/example.md", "--print-prompt")
    assert result.exit_code == 0, result.output
    prompt = result.stdout
    assert labels(section(prompt, "# Project")) == ["docs/arch.md"]
    assert labels(section(prompt, "# Context")) == ["docs/patterns.md", "docs/example.md"]
    sources = latest(root)["context_sources"]
    assert [(s["category"], s["path"], s["origin"]) for s in sources] == [
        ("project", "docs/arch.md", "project.toml [[project.context]][0]"),
        ("context", "docs/patterns.md", "commands.toml [[workflows]][0].context[0]"),
        ("context", "docs/example.md", "--context-file"),
    ]


def test_example_2_deduplication_keeps_the_first_occurrence(tmp_path):
    root = example("deduplication", tmp_path)
    result = run(root, "code", "create", "--print-prompt")
    assert result.exit_code == 0, result.output
    context = section(result.stdout, "# Context")
    assert labels(context) == ["docs/api.md"]
    assert context.count("GET /items") == 1
    assert "API reference (target)" in context and "API reference (operation)" not in context
    log = latest(root)
    assert [s["origin"] for s in log["context_sources"]] == ["commands.toml [[workflows]][0].context[0]"]
    assert log["skipped"] == [
        {
            "category": "context",
            "original_path": "docs/api.md",
            "canonical_path": str(root / "docs/api.md"),
            "origin": "commands.toml [[workflows]][0].operations[0].context[0]",
            "size": len("# API\n\nGET /items\n"),
            "reason": "duplicate of commands.toml [[workflows]][0].context[0]",
        }
    ]


def test_example_3_cross_category_duplication_is_kept_in_both_sections(tmp_path):
    root = example("cross_category", tmp_path)
    result = run(root, "code", "create", "--print-prompt")
    assert result.exit_code == 0, result.output
    prompt = result.stdout
    assert labels(section(prompt, "# Project")) == ["docs/arch.md"]
    assert labels(section(prompt, "# Context")) == ["docs/arch.md"]
    assert prompt.count("Hexagonal.") == 2
    categories = [(s["category"], s["path"]) for s in latest(root)["context_sources"]]
    assert categories == [("project", "docs/arch.md"), ("context", "docs/arch.md")]


def test_example_4_directory_expansion_gives_three_separate_files(tmp_path):
    root = example("directory_expansion", tmp_path)
    result = run(root, "code", "create", "--print-prompt")
    assert result.exit_code == 0, result.output
    context = section(result.stdout, "# Context")
    # Sorted by name: the reference lists the folder's own (unstable) order.
    assert labels(context) == ["docs/patterns/factory.md", "docs/patterns/observer.md", "docs/patterns/singleton.md"]
    assert context.count("Description: Design patterns (from directory)") == 3
    sources = latest(root)["context_sources"]
    assert [s["original_path"] for s in sources] == [
        "docs/patterns/factory.md",
        "docs/patterns/observer.md",
        "docs/patterns/singleton.md",
    ]
    assert {s["description"] for s in sources} == {"Design patterns (from directory)"}
    assert {s["directory"] for s in sources} == {"docs/patterns/"}
    assert len({s["key"] for s in sources}) == 3
