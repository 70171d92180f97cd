"""A plugin's loader or renderer that raises is one warning line naming the plugin's own ``file:line``.

The line is where the plugin's code raised, not inside nia or a library it
called (``json.loads``), the file named as nia names plugin files elsewhere
(relative to the working directory); the traceback only with ``--debug``.
Checked here through ``nia context show``; tests/agents/test_raised_where.py checks the agent hook.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from tests.plugins.conftest import Site

RAISING = """\
import json

from nia_core import ContextSource, hookimpl


def parse(text):
    return json.loads(text)


def load():
    return parse("not json")


def render(value):
    raise RuntimeError("render broke")


@hookimpl
def nia_context_sources(location):
    return [
        ContextSource(key="x/loader", load=load, baseline=lambda v: "X"),
        ContextSource(key="x/renderer", load=lambda: 1, baseline=render),
    ]
"""
LOADER_LINE = 7
"""``return json.loads(text)``: the deepest line of the plugin's own code; json raised below it."""
RENDERER_LINE = 15

LOADER_SAID = (
    "plugin 'x': context source 'x/loader': loader raised JSONDecodeError: Expecting value: line 1 column 1 "
    f"(char 0) (.nia/plugins/x.py:{LOADER_LINE})"
)
RENDERER_SAID = (
    f"plugin 'x': context source 'x/renderer': baseline renderer raised RuntimeError: render broke "
    f"(.nia/plugins/x.py:{RENDERER_LINE})"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / ".nia" / "plugins" / "x.py").write_text(RAISING)
    monkeypatch.chdir(root)
    return root


def test_context_show_names_the_plugins_own_line_of_a_raising_loader_and_renderer(project):
    plain = CliRunner().invoke(cli, ["context", "show"])
    assert plain.exit_code == 0, plain.output
    assert f"Warning: {LOADER_SAID}; counted unavailable\n" in plain.stderr
    assert f"Warning: {RENDERER_SAID} (left out until it renders)\n" in plain.stderr
    assert "Traceback" not in plain.stderr and "json/decoder.py" not in plain.stderr
    debug = CliRunner().invoke(cli, ["--debug", "context", "show"])
    traceback = rf'Traceback \(most recent call last\):\n(?:  .*\n)*  File ".*x\.py", line {LOADER_LINE}'
    assert re.search(traceback, debug.stderr), debug.stderr


def test_a_hook_that_raises_inside_a_library_is_named_at_its_own_line(project):
    (project / ".nia" / "plugins" / "x.py").write_text(
        "import json\n\nfrom nia_core import hookimpl\n\n\n@hookimpl\ndef nia_context_sources(location):\n"
        "    return json.loads('{')\n"
    )
    result = CliRunner().invoke(cli, ["context", "show"])
    assert result.exit_code == 0, result.output
    assert "Warning: plugin 'x': raised JSONDecodeError: " in result.stderr
    assert result.stderr.count("(.nia/plugins/x.py:8)\n") == 1 and "json/decoder.py" not in result.stderr


def test_an_installed_packs_file_outside_the_project_is_named_escaped_on_one_line(project, tmp_path, monkeypatch):
    site = Site(tmp_path / "site\x1b[31m\npackages")
    site.root.mkdir()
    monkeypatch.syspath_prepend(str(site.root))
    site.plugin("acme", RAISING.replace('"x/', '"acme/'))
    try:
        result = CliRunner().invoke(cli, ["context", "show"])
    finally:
        for name in [name for name, module in sys.modules.items() if name == "acme"]:
            del sys.modules[name]
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stderr.splitlines() if "'acme/loader'" in line)
    assert line.endswith(f"site\\x1b[31m\\x0apackages/acme.py:{LOADER_LINE}); counted unavailable"), line
    assert "\x1b" not in result.stderr


@pytest.mark.parametrize("raised", ["SystemExit(3)", "KeyboardInterrupt()", "GeneratorExit()"])
def test_a_loader_error_whose_message_raises_a_base_exception_is_reported_at_once(project, raised):
    """Its ``__str__`` is the plugin's code, worded on the loader's worker: a ``SystemExit`` from it ended the
    worker, so the boundary waited out the loader's timeout and reported a timeout instead of what it raised."""
    (project / ".nia" / "plugins" / "x.py").write_text(
        "from nia_core import ContextSource, hookimpl\n\n\nclass Odd(Exception):\n    def __str__(self):\n"
        f"        raise {raised}\n\n\ndef load():\n    raise Odd()\n\n\n@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='x/odd', load=load, baseline=lambda v: 'X', timeout=30)]\n"
    )
    result = CliRunner().invoke(cli, ["context", "show"])
    assert result.exit_code == 0, result.output
    name = raised.split("(")[0]
    said = f"context source 'x/odd': loader raised Odd: (its message raised {name}) (.nia/plugins/x.py:10)"
    assert said in result.stderr, result.stderr
