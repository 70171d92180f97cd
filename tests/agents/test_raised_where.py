"""The agent hook names a raising loader's and renderer's own ``file:line`` (tests/cli/test_plugin_raised_where.py
says why), answered in-process and by a resident process."""

from __future__ import annotations

import pytest

from tests.agents.test_hook_answer import Host
from tests.cli.test_plugin_raised_where import LOADER_SAID, RAISING, RENDERER_SAID, project  # noqa: F401 - a fixture


@pytest.fixture(autouse=True)
def generous_deadline(monkeypatch):
    monkeypatch.setenv("NIA_HOOK_DEADLINE", "600")  # in-process runs: the watchdog must never end pytest


def test_the_agent_hook_names_the_plugins_own_line_of_a_raising_loader_and_renderer(project):  # noqa: F811
    host = Host("claude-code", project)
    _, said = host.hook("SessionStart", "startup")
    assert said.count(LOADER_SAID) == 1, said
    assert "Traceback" not in said and "json/decoder.py" not in said
    (project / ".nia" / "plugins" / "x.py").write_text(RAISING.replace('parse("not json")', "1"))
    _, said = host.hook("UserPromptSubmit")
    assert said.count(RENDERER_SAID) == 1, said
