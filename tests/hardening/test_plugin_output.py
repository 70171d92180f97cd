"""#11.8: whatever a plugin prints, nia's machine-readable stdout stays parseable."""

from __future__ import annotations

import json

from click.testing import CliRunner

from nia_core.cli import cli
from tests.hardening.helpers import nia, project

CHATTY = """
import os, sys, threading
from nia_core import ContextSource, hookimpl

print("NOISE at import")
sys.stdout.write("NOISE via sys.stdout\\n")
os.write(1, b"NOISE via fd 1\\n")
threading.Thread(target=lambda: print("NOISE from a thread")).start()

@hookimpl
def nia_location_opened(location, context):
    print("NOISE in nia_location_opened")

@hookimpl
def nia_register_commands(cli):
    print("NOISE in nia_register_commands")

@hookimpl
def nia_context_sources(location):
    print("NOISE in the hook")

    def load():
        print("NOISE in the loader")
        os.write(1, b"NOISE via fd 1 in the loader\\n")
        return "value"

    def render(value):
        print("NOISE in the renderer")
        return "Chatty says " + value

    return [ContextSource("chatty/a", load, render)]
"""


def _no_noise(text: str) -> None:
    assert "NOISE" not in text, text


def test_json_outputs_stay_parseable_in_a_real_process(tmp_path):
    root = project(tmp_path, {"chatty": CHATTY})
    shown = nia(root, "context", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    _no_noise(shown.stdout)
    payload = json.loads(shown.stdout)
    assert "Chatty says value" in payload["baseline"]
    assert "NOISE at import" in shown.stderr and "NOISE via fd 1 in the loader" in shown.stderr

    listed = nia(root, "plugins", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    _no_noise(listed.stdout)
    assert any(p["name"] == "chatty" for p in json.loads(listed.stdout))

    env = {"NIA_DB": str(tmp_path / "sessions.db")}
    created = nia(root, "session", "new", "--location", str(root), "--model", "echo/echo", env=env)
    session_id = created.stdout.strip()
    _no_noise(session_id)
    assert nia(root, "session", "send", session_id, "hi", env=env).returncode == 0
    shown_session = nia(root, "session", "show", session_id, "--json", "--model-view", env=env)
    assert shown_session.returncode == 0, shown_session.stderr
    _no_noise(shown_session.stdout)
    assert "Chatty says value" in json.dumps(json.loads(shown_session.stdout))


def test_plain_output_is_free_of_plugin_prints_too(tmp_path):
    root = project(tmp_path, {"chatty": CHATTY})
    shown = nia(root, "context", "show")
    assert shown.returncode == 0
    _no_noise(shown.stdout)
    assert "Chatty says value" in shown.stdout


def test_in_process_runs_route_plugin_prints_to_stderr(tmp_path):
    root = project(tmp_path, {"chatty": CHATTY.replace('os.write(1, b"NOISE via fd 1\\\\n")', "")})
    result = CliRunner().invoke(cli, ["context", "show", "--json", "--location", str(root)])
    assert result.exit_code == 0, result.output
    _no_noise(result.stdout)
    assert json.loads(result.stdout)["sources"]
    assert "NOISE in the renderer" in result.stderr and "NOISE in the hook" in result.stderr


def test_a_plugin_command_still_prints_to_stdout(tmp_path):
    root = project(
        tmp_path,
        {
            "hello": """
                import click
                from nia_core import hookimpl

                @hookimpl
                def nia_register_commands(cli):
                    @cli.command()
                    def hello():
                        click.echo("hello from the plugin")
            """
        },
    )
    result = nia(root, "hello")
    assert result.returncode == 0 and result.stdout == "hello from the plugin\n"
