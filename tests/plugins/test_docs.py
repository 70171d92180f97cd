"""The plugin examples in docs/plugin_hooks.md and docs/plugins.md load and do what the text says."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import run

DOCS = Path(__file__).resolve().parents[2] / "docs"


def plugin_examples(name: str) -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), re.S)
    return [b for b in blocks if "@hookimpl" in b and "from nia_core import" in b and "import nia_jira" not in b]


@pytest.fixture
def examples(tmp_path, project):
    folder = tmp_path / "examples"
    folder.mkdir()
    found = {}
    for doc in ("plugin_hooks.md", "plugins.md"):
        for index, code in enumerate(plugin_examples(doc)):
            name = f"{doc.split('.')[0]}_{index}"
            (folder / f"{name}.py").write_text(code)
            found[name] = code
    return folder, found


def test_every_example_plugin_loads_cleanly(examples, project):
    folder, found = examples
    assert len(found) == 7

    result = run("--strict", "--plugins-dir", str(folder), "plugins", "list", "--json", "--location", str(project))

    assert result.exit_code == 0, result.output
    plugins = {p["name"]: p for p in json.loads(result.stdout)}
    assert {name: plugins[name]["status"] for name in found} == dict.fromkeys(found, "enabled")
    assert plugins["plugins_0"]["source_keys"] == ["hello/greeting"]
    assert plugins["plugins_1"]["hooks"] == [
        "nia_context_sources",
        "nia_location_opened",
        "nia_providers",
        "nia_register_commands",
        "nia_summarize",
    ]


def test_the_examples_do_what_the_text_says(examples, project):
    folder, _ = examples
    nia = ("--plugins-dir", str(folder))
    (project / "SCRATCH.md").write_text("Remember the milk.")

    shown = run(*nia, "context", "show", "--location", str(project)).stdout

    assert "Greet the user as Ada." in shown
    assert "This project belongs to the platform team." in shown
    assert "Scratch notes:\nRemember the milk." in shown
    assert run(*nia, "hello", "Ada").stdout == "Hello, Ada!\n"
