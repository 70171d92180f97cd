"""Compaction: a summary replaces earlier history and a fresh epoch begins.

The summary is computed once, from what the model sees now, and stored as a
pending request before the fresh baseline is attempted; if an admitted source
is unavailable, the old baseline and its updates stay in force and the next
boundary retries the replacement with the same summary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nia_core.context import LOADER_TIMEOUT
from nia_core.errors import UsageError
from nia_core.message import Message
from nia_core.sessions.epochs import Contexts
from nia_core.sessions.projection import project
from nia_core.sessions.replacement import ReplaceOutcome, replace_now
from nia_core.sessions.store import PendingCompaction, Store

Summarizer = Callable[[Sequence[Message]], str]
"""Projected messages in, summary text out. Plugins provide one through the ``nia_summarize`` hook."""

LINE_CHARS = 160
MAX_LINES = 40
LABELS = {"user": "User", "assistant": "Assistant", "tool_result": "Tool result", "summary": "Earlier summary"}


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= LINE_CHARS else flat[: LINE_CHARS - 1] + "…"


def default_summary(messages: Sequence[Message]) -> str:
    """An offline, deterministic summary: one line per message, the most recent ones kept.

    Mid-conversation system messages are left out: the fresh baseline that
    follows a compaction states the current context anyway.
    """
    lines = []
    for message in messages:
        if message.kind == "system_update":
            continue
        text = message.text
        if message.kind == "assistant" and message.tool_calls:
            text = (text + " " if text else "") + "[called " + ", ".join(c.name for c in message.tool_calls) + "]"
        lines.append(f"- {LABELS[message.kind]}: {_line(text) or '(empty)'}")
    omitted = max(0, len(lines) - MAX_LINES)
    kept = lines[omitted:]
    head = f"Summary of the conversation so far ({len(lines)} messages"
    head += f", the first {omitted} not listed):" if omitted else "):"
    return "\n".join([head, *kept])


def compact(
    store: Store,
    session_id: str,
    contexts: Contexts,
    summarize: Summarizer = default_summary,
    *,
    timeout: float = LOADER_TIMEOUT,
) -> ReplaceOutcome:
    """Summarize the projected history up to the last plain reply; start a fresh epoch that opens with the summary."""
    state = store.state(session_id)
    history = [entry.message for entry in store.history(session_id)]
    projected = project(state.session, state.epoch.number if state.epoch else None, history)
    # Cut after the last reply that asked for no tools: input the model has not
    # answered yet, and a tool call together with its results, stay verbatim
    # after the summary (a result without its call is not a valid request).
    answered = [i for i, m in enumerate(projected) if m.kind == "assistant" and not m.tool_calls]
    if not answered:
        raise UsageError(f"session {session_id}: nothing to compact yet")
    covered = projected[: answered[-1] + 1]
    summary = summarize(covered)
    if not isinstance(summary, str) or not summary.strip():
        raise UsageError(f"session {session_id}: the summarizer returned no summary")
    covers_upto = covered[-1].seq or 0
    store.request_compaction(session_id, PendingCompaction(summary, covers_upto))
    return replace_now(store, session_id, contexts, timeout=timeout)
