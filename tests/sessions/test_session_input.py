"""Bad input is refused before it is stored; no stored state makes a session unsendable (issue #14 item 8)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from nia_core.providers.anthropic_messages import AnthropicMessagesProvider
from nia_core.providers.lowering import check_history
from nia_core.sessions import Message, RefusedInput, Replied, Store, ToolCall, run_turn

from .session_checks import problems
from .session_doubles import RecordingProvider
from .session_tamper import count_rows, tamper
from .session_world import World

P = "/p"


@pytest.fixture
def world() -> World:
    w = World()
    w.set(P, "acme/a", 1)
    return w


def sendable(request: Any) -> None:
    """What a provider checks before sending: results answer their calls, user text is not empty."""
    check_history(request.messages)
    AnthropicMessagesProvider().lower(request)


@pytest.mark.parametrize("text", ["", "   ", "\n\t \r\n", "\u3000"])
def test_whitespace_only_input_is_refused_before_it_is_stored(
    store: Store, store_url: str, world: World, text: str
) -> None:
    provider = RecordingProvider([])
    session_id = store.create_session(P, "echo/echo").id
    run_turn(store, session_id, world.context_for, lambda _m: provider, text="hello")
    before = count_rows(store_url)
    with pytest.raises(RefusedInput, match=f"^session {session_id}: the input is empty .*the input was not stored$"):
        run_turn(store, session_id, world.context_for, lambda _m: provider, text=text)
    with pytest.raises(RefusedInput):  # the store itself refuses it too
        store.enqueue(session_id, Message("user", text))
    assert count_rows(store_url) == before and len(provider.requests) == 1
    result = run_turn(store, session_id, world.context_for, lambda _m: provider, text="still works")
    assert isinstance(result, Replied)
    sendable(result.boundary.request)


def test_input_sent_while_tool_results_are_pending_is_not_stored(store: Store, store_url: str, world: World) -> None:
    provider = RecordingProvider([])
    session_id = store.create_session(P, "echo/echo").id
    provider.calls = (ToolCall("c1", "read", {"path": "x"}), ToolCall("c2", "read", {"path": "y"}))
    run_turn(store, session_id, world.context_for, lambda _m: provider, text="read x and y")
    store.enqueue(session_id, Message("tool_result", "x says hi", tool_call_id="c1"))
    before = count_rows(store_url)
    with pytest.raises(RefusedInput, match=r"waiting for tool results \(c2\).*the input was not stored"):
        run_turn(store, session_id, world.context_for, lambda _m: provider, text="what now?")
    assert count_rows(store_url) == before
    assert [m.kind for m in store.state(session_id).pending] == ["tool_result"]
    store.enqueue(session_id, Message("tool_result", "y says hi", tool_call_id="c2"))
    result = run_turn(store, session_id, world.context_for, lambda _m: provider, text="what now?")
    assert isinstance(result, Replied)
    sendable(result.boundary.request)
    tail = [(m.kind, m.tool_call_id) for m in result.boundary.request.messages[-4:]]
    assert tail == [("assistant", None), ("tool_result", "c1"), ("tool_result", "c2"), ("user", None)]
    assert problems(store, session_id) == []


def test_the_cli_refuses_whitespace_only_input_with_one_line(
    tmp_path: Path, cli_env: dict[str, str], sqlite_path: Path
) -> None:
    (tmp_path / "AGENTS.md").write_text("Rule one.\n")
    runner = CliRunner()
    session_id = runner.invoke(cli, ["session", "new", "--location", str(tmp_path)]).output.strip()
    assert runner.invoke(cli, ["session", "send", session_id, "hello"]).exit_code == 0
    before = count_rows(f"sqlite:///{sqlite_path}")
    for text in ("   ", "\n\n"):
        result = runner.invoke(cli, ["session", "send", session_id, text])
        assert result.exit_code == 2
        assert result.output == (
            f"Error: session {session_id}: the input is empty (only whitespace); the input was not stored\n"
        )
    result = runner.invoke(cli, ["session", "send", session_id, "-"], input="  \n")
    assert result.exit_code == 2 and "the input is empty" in result.output
    assert count_rows(f"sqlite:///{sqlite_path}") == before
    assert runner.invoke(cli, ["session", "send", session_id, "again"]).exit_code == 0
    assert runner.invoke(cli, ["db", "check"]).exit_code == 0


# -- states an older nia could store: still sendable, and reported by nia db check ---------------


def legacy_states(store: Store, store_url: str, world: World, provider: RecordingProvider) -> dict[str, str]:
    """Sessions holding what the old input path stored: empty input, input between calls and results."""
    empty = store.create_session(P, "echo/echo", session_id="empty-input").id
    run_turn(store, empty, world.context_for, lambda _m: provider, text="hello")
    tamper(
        store_url,
        "INSERT INTO pending (session_id, kind, body, created) "
        """VALUES ('empty-input', 'user', '{"text": "   "}', '2026-01-01T00:00:00+00:00')""",
    )
    between = store.create_session(P, "echo/echo", session_id="input-between").id
    provider.calls = (ToolCall("c1", "read", {}),)
    run_turn(store, between, world.context_for, lambda _m: provider, text="read it")
    store.enqueue(between, Message("user", "stored while the tool ran"))  # what run_turn no longer lets through
    store.enqueue(between, Message("tool_result", "the file", tool_call_id="c1"))
    return {"empty": empty, "between": between}


def test_a_stored_empty_input_or_input_before_tool_results_does_not_make_a_session_unsendable(
    store: Store, store_url: str, world: World
) -> None:
    provider = RecordingProvider([])
    ids = legacy_states(store, store_url, world, provider)

    # Only empty input pending: nothing to send (not a request ending with the model's own reply).
    result = run_turn(store, ids["empty"], world.context_for, lambda _m: provider)
    assert type(result).__name__ == "Idle"
    result = run_turn(store, ids["empty"], world.context_for, lambda _m: provider, text="real input")
    assert isinstance(result, Replied)
    sendable(result.boundary.request)
    assert all(m.text.strip() for m in result.boundary.request.messages if m.kind == "user")

    result = run_turn(store, ids["between"], world.context_for, lambda _m: provider)
    assert isinstance(result, Replied)
    sendable(result.boundary.request)
    kinds = [(m.kind, m.text) for m in result.boundary.request.messages[-3:]]
    assert kinds == [("assistant", kinds[0][1]), ("tool_result", "the file"), ("user", "stored while the tool ran")]
    again = run_turn(store, ids["between"], world.context_for, lambda _m: provider, text="and then?")
    assert isinstance(again, Replied)
    sendable(again.boundary.request)


def test_db_check_reports_a_session_holding_such_input(
    store: Store, store_url: str, world: World, cli_env: dict[str, str], reopen: Callable[[], Store]
) -> None:
    provider = RecordingProvider([])
    ids = legacy_states(store, store_url, world, provider)
    run_turn(store, ids["between"], world.context_for, lambda _m: provider)  # promoted into the history
    fine = store.create_session(P, "echo/echo", session_id="fine").id
    run_turn(store, fine, world.context_for, lambda _m: provider, text="hi")
    checked = CliRunner().invoke(cli, ["db", "check"], env={**cli_env, "NIA_DB": store_url})
    assert checked.exit_code == 1
    assert "session empty-input: pending input with no text (it is never sent)" in checked.output
    assert "session input-between: message #3: input stored while tool results were pending" in checked.output
    assert "session fine:" not in checked.output
    assert "2 of 3 sessions have problems" in checked.output


def test_stored_tool_results_no_call_awaits_are_left_out_of_requests(
    store: Store, store_url: str, world: World, cli_env: dict[str, str]
) -> None:
    provider = RecordingProvider([])
    session_id = store.create_session(P, "echo/echo", session_id="odd-results").id
    provider.calls = (ToolCall("c1", "read", {}),)
    run_turn(store, session_id, world.context_for, lambda _m: provider, text="read it")
    store.enqueue(session_id, Message("tool_result", "the file", tool_call_id="c1"))
    store.enqueue(session_id, Message("tool_result", "the file again", tool_call_id="c1"))  # a second result
    store.enqueue(session_id, Message("tool_result", "who asked?", tool_call_id="c9"))  # a result for no call
    result = run_turn(store, session_id, world.context_for, lambda _m: provider)
    assert isinstance(result, Replied)
    sendable(result.boundary.request)
    results = [m.text for m in result.boundary.request.messages if m.kind == "tool_result"]
    assert results == ["the file"]
    again = run_turn(store, session_id, world.context_for, lambda _m: provider, text="next")
    assert isinstance(again, Replied)
    sendable(again.boundary.request)
    checked = CliRunner().invoke(cli, ["db", "check"], env={**cli_env, "NIA_DB": store_url})
    assert checked.exit_code == 1
    assert "session odd-results: message #5: a result for no pending tool call" in checked.output
    assert "session odd-results: message #4: a second result for tool call c1" in checked.output
