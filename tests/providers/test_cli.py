"""``nia session`` with real HTTP providers (against the fake API) and a plugin's provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nia_core.cli import cli
from tests.providers.fakeserver import API_KEY, FakeProviderServer

CLAUDE = "anthropic-messages/claude-sonnet-4-5"

SHOUT_PLUGIN = """
from nia_core import hookimpl
from nia_core.sessions.messages import Reply


class Shout:
    name = "shout"

    def lower(self, request):
        return {"said": [m.text for m in request.messages if m.kind == "user"]}

    def send(self, request, *, stream=None):
        text = self.lower(request)["said"][-1].upper()
        for word in text.split(" "):
            if stream is not None:
                stream(word + " ")
        return Reply(text=text)


@hookimpl
def nia_providers():
    return [Shout()]
"""


def nia(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FakeProviderServer) -> Path:
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Be brief.\n" + "Prefer small, typed, documented modules. " * 150)
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.chdir(root)
    return root


def new_session(*extra: str) -> str:
    result = nia("session", "new", *extra)
    assert result.exit_code == 0, result.output
    return result.output.strip()


def test_a_session_streams_replies_and_tells_the_model_what_changed(project, server):
    session = new_session("--model", CLAUDE)
    first = nia("session", "send", session, "hello")
    assert first.exit_code == 0, first.output
    assert first.output == "Hello! How can I help?\n"

    (project / "AGENTS.md").write_text("Be very brief.\n")
    second = nia("session", "send", session, "again")
    assert second.exit_code == 0, second.output

    one, two = server.received
    assert server.problems == []
    assert one.body["stream"] is True
    assert json.dumps(two.body["system"]) == json.dumps(one.body["system"]), "the baseline never changes in an epoch"
    last = two.body["messages"][-1]["content"]
    assert last[0]["text"] == "again"
    assert last[1]["text"].startswith("<system-update>\nThe AGENTS.md instructions changed.")
    assert "Be very brief." in last[1]["text"]
    assert two.usage is not None and two.usage["cache_read_input_tokens"] > 0


def test_model_view_json_is_the_lowered_request(project, server):
    session = new_session("--model", CLAUDE)
    assert nia("session", "send", session, "hello").exit_code == 0
    shown = nia("session", "show", session, "--model-view", "--json")
    body = json.loads(shown.output)
    assert body["model"] == "claude-sonnet-4-5"
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]


def test_project_config_points_a_provider_elsewhere(project, server, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("MY_KEY", API_KEY)
    (project / ".nia" / "project.toml").write_text(
        f'[providers.anthropic-messages]\nbase_url = "{server.url}"\napi_key_env = "MY_KEY"\n'
    )
    session = new_session("--model", CLAUDE)
    assert nia("session", "send", session, "hi").output == "Hello! How can I help?\n"


def test_an_unknown_provider_is_refused_with_the_known_ones(project):
    result = nia("session", "new", "--model", "nope/x")
    assert result.exit_code == 2
    assert result.output.startswith("Error: unknown provider 'nope' in model 'nope/x' (known providers: ")
    assert "Traceback" not in result.output


def test_a_plugins_provider_serves_a_session(project):
    (project / ".nia" / "plugins").mkdir()
    (project / ".nia" / "plugins" / "shout.py").write_text(SHOUT_PLUGIN)
    session = new_session("--model", "shout/loud")
    result = nia("session", "send", session, "make it loud")
    assert result.exit_code == 0, result.output
    assert result.output == "MAKE IT LOUD \n"
    switched = nia("session", "switch-model", session, "nope/y")
    assert switched.exit_code == 2
    assert "unknown provider 'nope'" in switched.output


def test_a_failed_call_is_one_line_and_the_retry_sends_the_same_request(project, server):
    session = new_session("--model", CLAUDE)
    server.fail(401, body=b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}')
    failed = nia("session", "send", session, "hello")
    assert failed.exit_code == 1
    assert failed.output.count("\n") == 1
    assert "HTTP 401" in failed.output and "check ANTHROPIC_API_KEY" in failed.output
    assert "Traceback" not in failed.output
    retried = nia("session", "send", session)
    assert retried.exit_code == 0, retried.output
    assert server.received[0].raw == server.received[1].raw
