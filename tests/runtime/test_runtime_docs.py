"""The runtime examples in docs/sessions.md run and print what the text says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "sessions.md"


def runtime_examples() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    return [b for b in blocks if "runtime." in b]


def test_the_library_examples_run(tmp_path, monkeypatch, capsys):
    project = tmp_path / "shop"
    (project / ".nia").mkdir(parents=True)
    (project / "AGENTS.md").write_text("Use tabs.\n")
    monkeypatch.chdir(project)
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    examples = runtime_examples()
    assert len(examples) == 2

    namespace: dict[str, object] = {}
    for code in examples:
        exec(compile(code, str(DOC), "exec"), namespace)  # the doc's own example

    lines = capsys.readouterr().out.splitlines()
    assert "you said: Tidy up cart.py" in lines
    assert "()" in lines  # no warnings
    assert any(line.startswith("initialized ") for line in lines) and "Use tabs." in lines
    assert "unchanged None" in lines
    assert lines[-1] == "2 ()"


@pytest.mark.parametrize("doc", ["sessions.md", "project.md"])
def test_no_doc_teaches_the_cli_wiring(doc):
    text = (DOC.parent / doc).read_text()
    assert "host_context" not in text and "get_provider" not in text
