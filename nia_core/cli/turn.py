"""One turn on the command line: the runtime's turn, its reply streamed to stdout, its outcome as an exit.

``nia session send`` and the workflow commands both send turns; this is
the one place that shows one.
"""

from __future__ import annotations

import json
from typing import Any

import click

from nia_core.cli.app import App
from nia_core.errors import NiaError, UsageError
from nia_core.model import ToolCall, message_content, tool_calls_json
from nia_core.project import Workflow
from nia_core.providers.lookup import ProviderLookup
from nia_core.runtime.usage import reported, usage_json, usage_line
from nia_core.sessions import Blocked, Replied, Store

BLOCKED_EXIT = 3
"""Exit status when the context is blocked on unavailable sources (retry later)."""


class SessionBlocked(NiaError):
    """The session's context is blocked on unavailable sources; retry later."""

    exit_code = BLOCKED_EXIT


def send_turn(
    app: App,
    store: Store,
    session_id: str,
    text: str | None,
    *,
    retry: str,
    workflow: Workflow | None = None,
    providers: ProviderLookup | None = None,
    as_json: bool = False,
) -> Replied:
    """Send one turn and print the reply; a blocked context exits 3 naming ``retry``, the command that retries.

    With ``as_json`` nothing is streamed: stdout is one JSON object once the reply is stored.
    """
    streamed: list[str] = []

    def show_text(piece: str) -> None:
        streamed.append(piece)
        if not as_json:
            click.echo(piece, nl=False)

    try:
        report = app.runtime.turn(store, session_id, text, stream=show_text, workflow=workflow, providers=providers)
    except NiaError:
        if streamed and not as_json and not "".join(streamed).endswith("\n"):
            click.echo("")  # the error goes on a line of its own, after the text shown so far
        raise
    result = report.result
    if isinstance(result, Replied):
        admission = result.boundary.admission
        if admission is not None and admission.outcome == "blocked":
            click.echo(
                f"Warning: session {session_id}: a fresh baseline ({admission.reason}) is blocked on: "
                f"{', '.join(admission.blocked_on)}; the current one stays in force",
                err=True,
            )
        reply = result.reply
        if as_json:
            click.echo(json.dumps(turn_json(session_id, result), indent=2, ensure_ascii=False))
        else:
            click.echo("" if streamed else reply.text)
        if reply.resets_turn:
            click.echo(
                f"Warning: session {session_id}: the model refused (stop_reason {reply.stop_reason}); the refused "
                "input and this reply are left out of later requests, as the provider requires; "
                "rephrase and send again",
                err=True,
            )
        elif reply.refusal:
            click.echo(f"Warning: session {session_id}: the model refused this request", err=True)
        model = result.boundary.request.model
        for note in stop_notes(model, reply.stop_reason, reply.tool_calls, reply.undeclared_calls, reply.cut_calls):
            click.echo(f"Warning: session {session_id}: {note}", err=True)
        if result.answered:
            click.echo(
                f"Note: session {session_id}: nia answered {len(result.answered)} tool call(s) as not run; "
                f"`nia session send {session_id}` passes that on to the model, or send your next input",
                err=True,
            )
        if reply.usage is not None and reported(reply.usage) and not as_json:
            click.echo(usage_line(reply.usage), err=True)
        return result
    if isinstance(result, Blocked):
        raise SessionBlocked(f"{result}; the input is kept pending, retry with: {retry}")
    raise UsageError(str(result))


CONTENT_FILTER = "content_filter"
CUT_AT_LIMIT = ("max_tokens", "length")
"""Stop reasons for the output token limit (Anthropic's, OpenAI's)."""


def stop_notes(
    model: str,
    stop_reason: str | None,
    calls: tuple[ToolCall, ...],
    undeclared: tuple[str, ...] = (),
    cut: tuple[str, ...] = (),
) -> list[str]:
    """One line per thing a user should know about how a reply ended: a filter, a cut, tool calls."""
    notes: list[str] = []
    if stop_reason == CONTENT_FILTER:
        notes.append(
            "the provider's content filter stopped this reply (finish_reason content_filter); "
            "what arrived before is kept"
        )
    elif stop_reason in CUT_AT_LIMIT:
        notes.append(
            f"the reply was cut at the output token limit (stop_reason {stop_reason}); raise max_tokens in "
            f"[providers.{model.partition('/')[0]}] of .nia/project.toml, or send again to go on"
        )
    for call in calls:
        if call.id in cut:
            notes.append(
                f"the token limit cut the call to tool {call.name!r} ({call.id}) before its input was complete; "
                "what arrived is kept and nothing was run"
            )
        elif call.id in undeclared:
            notes.append(
                f"the model asked for tool {call.name!r} ({call.id}), which nia did not offer; nothing was run"
            )
        else:
            notes.append(f"the model asked for tool {call.name!r} ({call.id}); its result is awaited")
    return notes


def turn_json(session_id: str, result: Replied) -> dict[str, Any]:
    """A stored turn for machines: the reply, the system message admitted before it (or the new baseline), usage."""
    boundary, reply = result.boundary, result.reply
    admitted = boundary.admission.message if boundary.admission is not None else None
    data: dict[str, Any] = {
        "session": session_id,
        "reply": reply.text,
        "tool_calls": tool_calls_json(reply.tool_calls),
        "system_message": admitted.text if admitted is not None else None,
        "new_epoch": boundary.initialized
        or (boundary.admission is not None and boundary.admission.outcome == "replaced"),
        "usage": usage_json(reply.usage) if reply.usage is not None and reported(reply.usage) else None,
        "stop_reason": reply.stop_reason,
        "refusal": reply.refusal,
    }
    if reply.undeclared_calls:
        data["undeclared_calls"] = list(reply.undeclared_calls)
    if reply.cut_calls:
        data["cut_calls"] = list(reply.cut_calls)
    if result.answered:
        data["answered"] = [message_content(m) for m in result.answered]
    return data
