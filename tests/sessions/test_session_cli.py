"""``nia session`` through click's CliRunner, with the real plugin host."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nia_core.cli import cli
from nia_core.sessions import open_store

FLAKY = """
from pathlib import Path
from nia_core import UNAVAILABLE, ContextSource, hookimpl

NIA_NAMESPACE = "acme"


@hookimpl
def nia_context_sources(location):
    status = Path(location.root) / "status.txt"

    def load():
        try:
            return status.read_text()
        except FileNotFoundError:
            return UNAVAILABLE

    return [ContextSource(key="acme/status", load=load, baseline=lambda v: f"Build status: {v}")]
"""

SUMMARIZER = """
from nia_core import hookimpl


@hookimpl
def nia_summarize(messages):
    users = [m.text for m in messages if m.kind == "user"]
    return "The user said: " + "; ".join(users)
"""


def nia(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, cli_env: dict[str, str]) -> Path:
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Be brief.\n")
    return root


def new_session(project: Path, *extra: str) -> str:
    result = nia("session", "new", "--location", str(project), *extra)
    assert result.exit_code == 0, result.output
    return result.output.strip()


def test_a_conversation_from_the_command_line(project: Path) -> None:
    session_id = new_session(project)
    first = nia("session", "send", session_id[:6], "hello")
    assert first.exit_code == 0, first.output
    assert "[echo/echo] baseline" in first.output and "you said: hello" in first.output
    (project / "AGENTS.md").write_text("Be thorough.\n")
    second = nia("session", "send", session_id, "-", input="what changed?")
    assert "latest system update: The AGENTS.md instructions changed" in second.output
    assert first.output.splitlines()[0] == second.output.splitlines()[0]  # same baseline bytes and hash

    durable = json.loads(nia("session", "show", session_id, "--json").output)
    assert [m["kind"] for m in durable["messages"]] == ["user", "assistant", "user", "system_update", "assistant"]
    assert durable["messages"][3]["snapshot"] and durable["session"]["location"] == str(project)
    assert durable["epochs"][0]["reason"] == f"initialized at {project}"

    view = json.loads(nia("session", "show", session_id, "--model-view", "--json").output)
    assert "Be brief." in view["system"] and "Be thorough." not in view["system"]
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "user", "system", "assistant"]
    assert "Be thorough." in view["messages"][3]["content"]

    text = nia("session", "show", session_id).output
    assert "--- context epoch 1: initialized at" in text and "#4 system update:" in text
    model_text = nia("session", "show", session_id, "--model-view").output
    assert model_text.startswith("=== baseline (epoch 1, echo/echo) ===\n") and "Be brief." in model_text

    listed = json.loads(nia("session", "list", "--json").output)
    assert [s["id"] for s in listed] == [session_id] and listed[0]["epoch"] == 1
    assert session_id in nia("session", "list").output


def test_compact_switch_and_move(project: Path, tmp_path: Path) -> None:
    session_id = new_session(project)
    nia("session", "send", session_id, "hello")
    compacted = nia("session", "compact", session_id)
    assert compacted.exit_code == 0 and "new context epoch started" in compacted.output
    switched = nia("session", "switch-model", session_id, "echo/other")
    assert switched.exit_code == 0 and "now uses echo/other" in switched.output
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = nia("session", "move", session_id, str(elsewhere))
    assert moved.exit_code == 0 and str(elsewhere) in moved.output
    reply = nia("session", "send", session_id, "where am I?")
    assert reply.output.startswith("[echo/other] baseline")
    view = json.loads(nia("session", "show", session_id, "--model-view", "--json").output)
    assert f"Working directory: {elsewhere}" in view["system"] and "Be brief." not in view["system"]
    assert view["messages"][0]["content"].startswith("Summary of the earlier conversation:\nSummary of")
    durable = json.loads(nia("session", "show", session_id, "--json").output)
    assert [(e["number"], e["reason"].split(" ")[0]) for e in durable["epochs"]] == [
        (1, "initialized"),
        (2, "compaction"),
        (3, "model"),
        (4, "initialized"),
    ]


def test_a_plugin_summarizer_writes_the_compaction_summary(project: Path) -> None:
    (project / ".nia" / "plugins").mkdir()
    (project / ".nia" / "plugins" / "brief.py").write_text(SUMMARIZER)
    session_id = new_session(project)
    nia("session", "send", session_id, "alpha")
    nia("session", "send", session_id, "beta")
    assert nia("session", "compact", session_id).exit_code == 0
    view = json.loads(nia("session", "show", session_id, "--model-view", "--json").output)
    assert view["messages"] == [
        {"role": "system", "content": "Summary of the earlier conversation:\nThe user said: alpha; beta"}
    ]


def test_unavailable_context_blocks_the_send_and_keeps_the_input(project: Path) -> None:
    (project / ".nia" / "plugins").mkdir()
    (project / ".nia" / "plugins" / "flaky.py").write_text(FLAKY)
    session_id = new_session(project)
    blocked = nia("session", "send", session_id, "deploy it")
    assert blocked.exit_code == 3
    assert blocked.output == (
        f"Error: session {session_id}: the initial context is blocked on: acme/status; "
        f"the input is kept pending, retry with: nia session send {session_id}\n"
    )
    assert "(pending) user:\n  deploy it" in nia("session", "show", session_id).output
    assert nia("session", "show", session_id, "--model-view").exit_code == 2
    (project / "status.txt").write_text("green")
    retried = nia("session", "send", session_id)
    assert retried.exit_code == 0 and "you said: deploy it" in retried.output
    view = json.loads(nia("session", "show", session_id, "--model-view", "--json").output)
    assert "Build status: green" in view["system"]
    (project / "status.txt").unlink()  # admitted, then unavailable: stale value kept, no update, no error
    later = nia("session", "send", session_id, "and now?")
    assert later.exit_code == 0
    pending = nia("session", "compact", session_id)
    assert pending.exit_code == 0 and pending.stdout == f"Compacted session {session_id} (pending)\n"
    assert pending.stderr == (
        f"Warning: session {session_id}: the fresh baseline for the compaction is blocked on: acme/status; "
        "the current baseline stays in force and the next send retries\n"
    )


def test_bad_input_gets_one_line_errors(project: Path) -> None:
    bad_model = nia("session", "new", "--model", "nope/x")
    assert bad_model.exit_code == 2 and "unknown provider 'nope' in model 'nope/x'" in bad_model.output
    no_slash = nia("session", "new", "--model", "echo")
    assert no_slash.exit_code == 2 and "model must be PROVIDER/MODEL" in no_slash.output
    unknown = nia("session", "send", "zzz", "hi")
    assert unknown.exit_code == 2 and unknown.output.startswith("Error: no session 'zzz' in ")
    session_id = new_session(project)
    idle = nia("session", "send", session_id)
    assert idle.exit_code == 2 and idle.output == f"Error: session {session_id}: nothing to send (no pending input)\n"
    nothing = nia("session", "compact", session_id)
    assert nothing.exit_code == 2 and "nothing to compact yet" in nothing.output
    assert nia("session", "switch-model", session_id, "zzz/y").exit_code == 2


def test_a_vanished_location_is_reported_with_the_session(project: Path, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    session_id = new_session(gone)
    gone.rmdir()
    result = nia("session", "send", session_id, "hello?")
    assert result.exit_code == 2
    assert result.output == f"Error: session {session_id}: location not found: {gone}\n"


def test_the_database_is_created_in_the_user_data_folder_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: Path
) -> None:
    monkeypatch.delenv("NIA_DB")
    session_id = new_session(project)
    default = tmp_path / "data" / "nia" / "nia.db"
    assert default.is_file()
    with open_store(f"sqlite:///{default}") as store:
        assert store.session(session_id).location == str(project)


SHOUT = """
from nia_core import hookimpl
from nia_core.sessions.messages import Reply


class ShoutProvider:
    name = "shout"

    def lower(self, request):
        return {"said": [m.text for m in request.messages if m.kind == "user"]}

    def send(self, request, *, stream=None):
        return Reply(text=self.lower(request)["said"][-1].upper())


@hookimpl
def nia_providers():
    return [ShoutProvider()]
"""


def test_a_send_whose_provider_has_gone_stores_nothing(tmp_path: Path) -> None:
    plugin = tmp_path / ".nia" / "plugins" / "shout.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(SHOUT)
    runner = CliRunner()
    session_id = runner.invoke(cli, ["session", "new", "--location", str(tmp_path), "--model", "shout/loud"]).stdout
    session_id = session_id.strip()
    first = runner.invoke(cli, ["session", "send", session_id, "hello"])
    assert first.exit_code == 0 and first.stdout.strip() == "HELLO"
    plugin.unlink()
    gone = runner.invoke(cli, ["session", "send", session_id, "again"])
    assert gone.exit_code == 2
    assert "unknown provider 'shout'" in gone.stderr
    with open_store() as store:
        assert store.state(session_id).pending == ()
        assert [h.message.text for h in store.history(session_id)] == ["hello", "HELLO"]
