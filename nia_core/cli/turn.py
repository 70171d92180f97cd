"""One turn on the command line: the runtime's turn, its reply streamed to stdout, its outcome as an exit.

``nia session send`` and the workflow commands both send turns; this is
the one place that shows one.
"""

from __future__ import annotations

import click

from nia_core.cli.app import App
from nia_core.errors import NiaError, UsageError
from nia_core.project import Workflow
from nia_core.providers.lookup import ProviderLookup
from nia_core.runtime.usage import reported, usage_line
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
) -> Replied:
    """Send one turn and print the reply; a blocked context exits 3 naming ``retry``, the command that retries."""
    streamed: list[str] = []

    def show_text(piece: str) -> None:
        streamed.append(piece)
        click.echo(piece, nl=False)

    report = app.runtime.turn(store, session_id, text, stream=show_text, workflow=workflow, providers=providers)
    result = report.result
    if isinstance(result, Replied):
        admission = result.boundary.admission
        if admission is not None and admission.outcome == "blocked":
            click.echo(
                f"Warning: session {session_id}: a fresh baseline ({admission.reason}) is blocked on: "
                f"{', '.join(admission.blocked_on)}; the current one stays in force",
                err=True,
            )
        click.echo("" if streamed else result.reply.text)
        reply = result.reply
        if reply.resets_turn:
            click.echo(
                f"Warning: session {session_id}: the model refused (stop_reason {reply.stop_reason}); the refused "
                "input and this reply are left out of later requests, as the provider requires; "
                "rephrase and send again",
                err=True,
            )
        elif reply.refusal:
            click.echo(f"Warning: session {session_id}: the model refused this request", err=True)
        if reported(reply.usage):
            click.echo(usage_line(reply.usage), err=True)
        return result
    if isinstance(result, Blocked):
        raise SessionBlocked(f"{result}; the input is kept pending, retry with: {retry}")
    raise UsageError(str(result))
