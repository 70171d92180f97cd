"""The plugin examples in docs/plugin_hooks.md and docs/plugins.md load and do what the text says."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nia_core.plugin_host import PluginHost

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


def test_every_example_plugin_loads_cleanly(examples, project, tmp_path):
    folder, found = examples
    assert len(found) == 11  # every fenced plugin of plugin_hooks.md and plugins.md
    # The live-reload walkthrough's hello.py is the ten-line plugin grown up: same key, so it loads on its own.
    walkthrough = tmp_path / "walkthrough"
    walkthrough.mkdir()
    (name,) = [name for name, code in found.items() if "# .nia/plugins/hello.py" in code]
    (folder / f"{name}.py").rename(walkthrough / f"{name}.py")
    assert 'NAME = "world"' in found.pop(name)
    (project / "NOTES.md").write_text("Ship on Fridays.\n")  # the StatCache example reads it
    (project / "TEAM.md").write_text("Reviews within a day.\n")  # and the safe file-backed one this
    (safe,) = [name for name, code in found.items() if '"acme/team-notes"' in code]

    result = run("--strict", "--plugins-dir", str(folder), "plugins", "list", "--json", "--location", str(project))
    alone = run("--strict", "--plugins-dir", str(walkthrough), "context", "show", "--location", str(project))

    assert result.exit_code == 0, result.output
    plugins = {p["name"]: p for p in json.loads(result.stdout)}
    assert {name: plugins[name]["status"] for name in found} == dict.fromkeys(found, "enabled")
    assert alone.exit_code == 0 and "Greet the user as world." in alone.stdout
    assert plugins["plugins_0"]["source_keys"] == ["hello/greeting"]
    assert plugins[safe]["source_keys"] == ["acme/team-notes"]
    assert plugins["plugins_1"]["hooks"] == host_hooks()  # the full example implements every hook the host has


def host_hooks() -> list[str]:
    """The hooks a real host declares, from its plugin manager (not a list kept by hand)."""
    host = PluginHost()
    return sorted(name for name, caller in vars(host.pm.hook).items() if caller.spec is not None)


def test_every_hook_of_the_host_is_documented():
    text = (DOCS / "plugin_hooks.md").read_text()
    hooks = host_hooks()
    assert "nia_context_sources" in hooks and len(hooks) >= 5
    assert [hook for hook in hooks if not re.search(rf"^## {hook}\(", text, re.M)] == []


def test_the_examples_do_what_the_text_says(examples, project):
    folder, _ = examples
    nia = ("--plugins-dir", str(folder))
    (project / "SCRATCH.md").write_text("Remember the milk.")

    shown = run(*nia, "context", "show", "--location", str(project)).stdout

    assert "Greet the user as Ada." in shown
    assert "This project belongs to the platform team." in shown
    assert "Scratch notes:\nRemember the milk." in shown
    assert run(*nia, "hello", "Ada").stdout == "Hello, Ada!\n"


def test_the_location_hook_example_works_under_its_natural_name(project):
    """Saved as .nia/plugins/scratch.py, as the text suggests, its contribution key must not clash."""
    [example] = [code for code in plugin_examples("plugin_hooks.md") if "def nia_location_opened" in code]
    (project / ".nia" / "plugins").mkdir(parents=True, exist_ok=True)
    (project / ".nia" / "plugins" / "scratch.py").write_text(example)
    (project / "SCRATCH.md").write_text("Remember the milk.")

    result = run("--strict", "context", "show", "--location", str(project))

    assert result.exit_code == 0, result.output
    assert "Scratch notes:\nRemember the milk." in result.stdout


def test_the_stat_cache_example_reads_the_project_root_from_any_folder(examples, project):
    """From a subfolder, a path relative to the working directory would miss the file and block a session."""
    folder, found = examples
    (name,) = [name for name, code in found.items() if "StatCache()" in code and "NOTES.md" in code]
    for other in set(found) - {name}:
        (folder / f"{other}.py").unlink()
    (project / "NOTES.md").write_text("Ship on Fridays.\n")
    below = project / "src" / "deep"
    below.mkdir(parents=True)
    shown = run("--strict", "--plugins-dir", str(folder), "context", "show", "--location", str(below))
    assert shown.exit_code == 0, shown.output
    assert "Team notes:\nShip on Fridays." in shown.stdout
