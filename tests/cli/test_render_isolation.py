"""A plugin whose renderer breaks mid-conversation does not stop the session."""

import json

from click.testing import CliRunner

from nia_core.cli import cli

PLUGIN = """
from pathlib import Path
from nia_core import ContextSource, hookimpl

HERE = Path(__file__).resolve().parents[2]

def update(old, new):
    if (HERE / "broken").exists():
        raise RuntimeError("template missing")
    return f"flaky is now {new}"

@hookimpl
def nia_context_sources():
    return [ContextSource(
        key="flaky/v",
        load=lambda: (HERE / "value.txt").read_text().strip(),
        baseline=lambda v: f"flaky is {v}",
        update=update,
        removal=lambda v: "flaky is gone",
    )]
"""


def run(*args):
    return CliRunner().invoke(cli, ["-p", "no:nia-date", *args], catch_exceptions=False)


def model_view(session_id):
    return json.loads(run("session", "show", session_id, "--model-view", "--json").stdout)


def test_a_broken_update_renderer_keeps_the_session_going_and_heals(tmp_path):
    (tmp_path / ".nia" / "plugins").mkdir(parents=True)
    (tmp_path / ".nia" / "plugins" / "flaky.py").write_text(PLUGIN)
    (tmp_path / "value.txt").write_text("1")
    session_id = run("session", "new", "--location", str(tmp_path)).stdout.strip()
    assert run("session", "send", session_id, "one").exit_code == 0
    assert "flaky is 1" in model_view(session_id)["system"]

    (tmp_path / "value.txt").write_text("2")
    (tmp_path / "broken").write_text("")
    second = run("session", "send", session_id, "two")
    assert second.exit_code == 0
    assert "Warning: plugin 'flaky': context source 'flaky/v': update renderer raised RuntimeError" in second.stderr
    assert [m["role"] for m in model_view(session_id)["messages"]] == ["user", "assistant", "user", "assistant"]

    (tmp_path / "broken").unlink()
    third = run("session", "send", session_id, "three")
    assert third.exit_code == 0 and "Warning" not in third.stderr
    messages = model_view(session_id)["messages"]
    assert messages[-2] == {"role": "system", "content": "flaky is now 2"}
