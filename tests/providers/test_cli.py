"""``nia session`` with real HTTP providers (against the fake API) and a plugin's provider."""

from __future__ import annotations

import itertools
import json
import sqlite3
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
    assert first.stdout == "Hello! How can I help?\n"
    usage = server.last().usage
    assert usage is not None
    total = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    written = usage["cache_creation_input_tokens"]
    assert first.stderr == f"{total:,} in · 0 cached (0%) · {written:,} written · 15 out\n", "one usage line"

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
    assert nia("session", "send", session, "hi").stdout == "Hello! How can I help?\n"


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


def test_usage_is_shown_after_each_reply_per_reply_in_show_and_in_json(project, server):
    session = new_session("--model", CLAUDE)
    assert nia("session", "send", session, "hello").exit_code == 0
    second = nia("session", "send", session, "again")
    usage = server.last().usage
    assert usage is not None
    read, written = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
    total = usage["input_tokens"] + read + written
    share = f"{read / total:.0%}"
    line = f"{total:,} in · {read:,} cached ({share}) · {written:,} written · 15 out"
    assert second.stderr.splitlines() == [line]
    shown = nia("session", "show", session)
    assert f"  [{CLAUDE}: {line}]" in shown.stdout.splitlines()
    replies = [m for m in json.loads(nia("session", "show", session, "--json").stdout)["messages"] if "reply" in m]
    assert len(replies) == 2
    assert replies[1]["reply"] == {
        "model": CLAUDE,
        "usage": {
            "input_tokens": total,
            "cached_input_tokens": read,
            "cache_write_tokens": written,
            "output_tokens": 15,
        },
        "stop_reason": "end_turn",
        "refusal": False,
        "left_out": False,
    }


def test_send_json_carries_the_replys_usage_and_nothing_else_reaches_stdout(project, server):
    session = new_session("--model", CLAUDE)
    assert nia("session", "send", session, "hello").exit_code == 0

    sent = nia("session", "send", session, "again", "--json")

    assert sent.exit_code == 0, sent.output
    assert sent.stderr == ""  # the usage line is in the object, not on stderr
    turn = json.loads(sent.stdout)
    usage = server.last().usage
    read, written = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
    assert turn["usage"] == {
        "input_tokens": usage["input_tokens"] + read + written,
        "cached_input_tokens": read,
        "cache_write_tokens": written,
        "output_tokens": 15,
    }
    assert turn["stop_reason"] == "end_turn" and turn["new_epoch"] is False


def test_stats_sum_the_turns_and_price_them_beside_the_cost_with_no_cache_hits(project, server):
    session = new_session("--model", CLAUDE)
    for text in ("hello", "again", "and again"):
        assert nia("session", "send", session, text).exit_code == 0
    usages = [r.usage for r in server.received]
    assert all(u is not None for u in usages)
    read = sum(u["cache_read_input_tokens"] for u in usages if u)
    written = sum(u["cache_creation_input_tokens"] for u in usages if u)
    total = read + written + sum(u["input_tokens"] for u in usages if u)
    data = json.loads(nia("session", "stats", session, "--json").stdout)
    assert data["turns"] == data["turns_with_usage"] == 3
    assert (data["input_tokens"], data["cached_input_tokens"], data["cache_write_tokens"]) == (total, read, written)
    assert data["output_tokens"] == 45
    assert data["cache_read_share"] == pytest.approx(read / total)
    uncached = total - read - written
    expected = (uncached * 3.0 + read * 0.3 + written * 3.75 + 45 * 15.0) / 1e6
    assert data["cost"]["estimated"] == pytest.approx(expected, abs=1e-6)
    assert data["cost"]["without_cache_hits"] == pytest.approx((total * 3.0 + 45 * 15.0) / 1e6, abs=1e-6)
    assert data["cost"]["prices"][CLAUDE]["source"].startswith("built-in prices of 20")
    text = nia("session", "stats", session).stdout
    assert "turns: 3" in text and f"cache-read share: {read / total:.1%} of input tokens" in text
    assert "estimated cost: $" in text and "with no cache hits: $" in text


def test_stats_use_the_projects_prices_and_name_models_without_one(project, server):
    (project / ".nia" / "project.toml").write_text(
        '[providers.anthropic-messages.prices."claude-sonnet-4-5"]\n'
        "input = 1.0\ncache_read = 0.0\ncache_write = 0.0\noutput = 0.0\n"
    )
    session = new_session("--model", CLAUDE)
    assert nia("session", "send", session, "hello").exit_code == 0
    data = json.loads(nia("session", "stats", session, "--json").stdout)
    usage = server.last().usage
    assert usage is not None
    assert data["cost"]["estimated"] == pytest.approx(usage["input_tokens"] / 1e6)
    assert "project.toml" in data["cost"]["prices"][CLAUDE]["source"]
    (project / ".nia" / "project.toml").write_text('[providers.anthropic-messages.prices."claude-*"]\ninput = -1\n')
    bad = nia("session", "stats", session)
    assert bad.exit_code == 2 and "providers.anthropic-messages.prices" in bad.output and bad.output[-1] == "\n"
    (project / ".nia" / "project.toml").write_text(
        '[providers.anthropic-messages.prices."claude-opus-*"]\n'
        + ("input = 1.0\ncache_read = 0.0\ncache_write = 0.0\noutput = 0.0\n")
    )
    assert nia("session", "switch-model", session, "anthropic-messages/claude-unpriced-1").exit_code == 0
    server.fail(404)
    assert nia("session", "send", session, "x").exit_code == 1  # a failed call stores no usage
    assert nia("session", "stats", session, "--json").exit_code == 0


def test_replies_stored_before_usage_was_kept_count_as_turns_without_usage(project, server, tmp_path):
    session = new_session("--model", CLAUDE)
    assert nia("session", "send", session, "hello").exit_code == 0
    conn = sqlite3.connect(tmp_path / "nia.db")
    conn.execute("UPDATE messages SET reply = NULL")
    conn.commit()
    conn.close()
    data = json.loads(nia("session", "stats", session, "--json").stdout)
    assert data["turns"] == 1 and data["turns_with_usage"] == 0
    assert data["input_tokens"] == 0 and data["cache_read_share"] is None and data["cost"]["estimated"] is None
    text = nia("session", "stats", session).stdout
    assert "turns: 1 (1 without usage, left out of tokens and cost: the provider reported none)" in text


def test_a_model_without_a_price_is_named_and_left_out_of_the_cost(project, server):
    session = new_session("--model", CLAUDE)
    assert nia("session", "send", session, "hello").exit_code == 0
    assert nia("session", "switch-model", session, "anthropic-messages/claude-opus-4-8").exit_code == 0
    assert nia("session", "send", session, "again").exit_code == 0
    data = json.loads(nia("session", "stats", session, "--json").stdout)
    assert data["turns"] == 2 and data["cost"]["priced_turns"] == 1
    assert data["cost"]["unpriced_models"] == ["anthropic-messages/claude-opus-4-8"]
    text = nia("session", "stats", session).stdout
    assert "no price for anthropic-messages/claude-opus-4-8 (1 turns left out of the cost)" in text


REFUSAL_STREAM = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_r","type":"message","role":"assistant",'
    b'"content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":40,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"I won"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null},'
    b'"usage":{"output_tokens":2}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


def test_an_anthropic_refusal_is_told_stored_and_not_replayed(project, server):
    session = new_session("--model", CLAUDE)
    assert nia("session", "send", session, "hello").exit_code == 0
    server.garbage(REFUSAL_STREAM, content_type="text/event-stream")
    refused = nia("session", "send", session, "something refused")
    assert refused.exit_code == 0
    assert refused.stdout == "I won\n"
    assert "the model refused (stop_reason refusal)" in refused.stderr
    assert nia("session", "send", session).exit_code == 2, "nothing is pending: the refused input is not re-sent"
    assert nia("session", "send", session, "something else").exit_code == 0
    texts = [block["text"] for turn in server.last().body["messages"] for block in turn["content"]]
    assert "something refused" not in texts and "I won" not in texts
    assert texts[-1] == "something else"
    assert server.problems == []
    shown = nia("session", "show", session).stdout
    assert "something refused" in shown and "refused: this turn is left out of later requests" in shown
    view = nia("session", "show", session, "--model-view").stdout
    assert "something refused" not in view


def test_with_a_native_system_role_a_failed_send_then_another_change_sends_one_system_turn(
    project, server, monkeypatch
):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    session = new_session("--model", "openai-chat/gpt-4.1")
    assert nia("session", "send", session, "hello").exit_code == 0
    (project / "AGENTS.md").write_text("First change.\n")
    server.fail(400)
    assert nia("session", "send", session, "again").exit_code == 1
    failed = server.last().body
    retried = nia("session", "send", session)
    assert retried.exit_code == 0, retried.output
    assert server.last().body == failed, "nothing changed in between: the retry is the same request"
    (project / "AGENTS.md").write_text("Second change.\n")
    server.fail(400)
    assert nia("session", "send", session, "third").exit_code == 1
    (project / "AGENTS.md").write_text("Third change.\n")
    assert nia("session", "send", session).exit_code == 0
    roles = [m["role"] for m in server.last().body["messages"]]
    assert all(not (a == b == "system") for a, b in itertools.pairwise(roles)), roles
    assert roles[-2:] == ["user", "system"]
    last = server.last().body["messages"][-1]["content"]
    assert "Second change." in last and "Third change." in last
    assert server.problems == []


def test_debug_logs_the_boundary_decision_store_transactions_and_http_attempts(project, server):
    session = new_session("--model", CLAUDE)

    first = nia("--debug", "session", "send", session, "hello")

    assert first.exit_code == 0, first.output
    log = first.stderr
    assert f"DEBUG nia.sessions: session {session}: boundary: initialized epoch 1" in log
    assert f"DEBUG nia.store: sqlite: promote the input (session {session}): committed in " in log
    assert f"DEBUG nia.http: POST {server.url}/v1/messages: HTTP 200 in " in log
    assert "DEBUG nia.host: plugin 'nia-date' (built-in, nia_plugins.date): imported and registered in " in log
    assert "DEBUG nia.host: entry points: " in log
    assert "DEBUG nia.context: context source nia/instructions: observed in " in log
    assert API_KEY not in log

    (project / "AGENTS.md").write_text("Be thorough.\n")
    second = nia("--debug", "session", "send", session, "again").stderr
    assert f"session {session}: boundary: epoch 1: admitted one system message (updated nia/instructions)" in second
    third = nia("--debug", "session", "send", session, "more").stderr
    assert f"session {session}: boundary: epoch 1: nothing changed" in third
    assert "DEBUG" not in nia("session", "send", session, "quiet").stderr
