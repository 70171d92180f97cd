"""``nia session``: durable conversations whose context survives restarts byte for byte.

The database is ``NIA_DB`` (a path or ``sqlite:///path``), else ``nia.db`` in
the user data folder. Session ids may be abbreviated to any unique prefix.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from nia_core.cli.app import App
from nia_core.cli.textin import check_text, read_stdin
from nia_core.cli.turn import BLOCKED_EXIT, SessionBlocked, send_turn, stop_notes
from nia_core.errors import NiaError, UsageError
from nia_core.model import message_content
from nia_core.providers.names import canonical_model
from nia_core.providers.pricing import PriceTable, prices_at
from nia_core.runtime.usage import session_totals, totals_json, totals_text, usage_json, usage_line
from nia_core.sessions import (
    Blocked,
    Contexts,
    Deferred,
    EpochRecord,
    HistoryEntry,
    Message,
    SessionRecord,
    Store,
    StoreError,
    build_request,
    compact,
    move,
    open_store,
    switch_model,
)
from nia_core.sessions.listing import SessionActivity
from nia_core.sessions.replacement import ReplaceOutcome
from nia_core.sessions.replies import ReplyRecord

__all__ = ["BLOCKED_EXIT", "SessionBlocked", "SessionError", "opened", "session"]


class ReportedDamage(NiaError):
    """Some sessions are damaged; they were named one per line and the rest was shown."""


class SessionError(NiaError):
    """Any other error met while working on a session, with the session named."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@contextlib.contextmanager
def opened(ctx: click.Context, prefix: str | None = None, *, create: bool = True) -> Iterator[tuple[Store, str]]:
    """The store and the full session id; every store error names the session.

    Commands that only read pass ``create=False``: they never create the database, its folder or its tables.
    """
    if prefix:
        check_text(prefix, "the session id")
    try:
        store = open_store(create=create)
    except StoreError as exc:
        raise exc.about(prefix) if prefix else exc from None
    try:
        session_id = store.resolve(prefix) if prefix else ""
        try:
            yield store, session_id
        except StoreError as exc:
            raise exc.about(session_id) from None
        except NiaError as exc:
            if not session_id or str(exc).startswith(f"session {session_id}"):
                raise
            raise SessionError(f"session {session_id}: {exc}", exc.exit_code) from None
    finally:
        store.close()


@click.group()
def session() -> None:
    """Durable sessions: a stable baseline per context epoch, one system message per change.

    The database is NIA_DB (a path or sqlite:///path), by default
    $XDG_DATA_HOME/nia/nia.db. Ids may be abbreviated to a unique prefix.
    """


@session.command("new")
@click.option(
    "--location", type=click.Path(exists=True, file_okay=False), default=None, help="Working directory (default: .)."
)
@click.option(
    "--model",
    default=None,
    help="PROVIDER/MODEL (aliases: openai/…, anthropic/…). Default: NIA_MODEL, else [session] model, else echo/echo.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the new session as JSON.")
@click.pass_context
def new(ctx: click.Context, location: str | None, model: str | None, as_json: bool) -> None:
    """Create a session and print its id. Its context is first observed at the first send."""
    runtime = App.of(ctx).runtime
    where = runtime.locate(location)
    model = canonical_model(model) if model else runtime.default_model(where)
    providers = runtime.providers(where)
    providers.check(model)
    for warning in runtime.model_warnings(providers, model):
        click.echo(f"Warning: {warning}", err=True)
    with opened(ctx) as (store, _):
        record = runtime.create_session(store, where, model)
    click.echo(json.dumps(_session_json(record), indent=2) if as_json else record.id)


@session.command("send")
@click.argument("session_id", metavar="ID")
@click.argument("text", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the reply, the admitted system message and usage as JSON.")
@click.pass_context
def send(ctx: click.Context, session_id: str, text: str | None, as_json: bool) -> None:
    """Send TEXT (or '-' for stdin) and print the reply: one safe boundary and one provider call.

    Without TEXT, retries input still pending (after a blocked or failed send).
    """
    app = App.of(ctx)
    text = read_stdin() if text == "-" else None if text is None else check_text(text, "the argument TEXT")
    with opened(ctx, session_id) as (store, full_id):
        send_turn(app, store, full_id, text, retry=f"nia session send {full_id}", as_json=as_json)


def _message_json(message: Message, snapshot_id: str | None = None, created: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"seq": message.seq, "epoch": message.epoch, "kind": message.kind}
    item.update(message_content(message))
    if snapshot_id is not None:
        item["snapshot"] = snapshot_id
    if created is not None:
        item["created"] = created
    return item


def _entry_json(entry: HistoryEntry) -> dict[str, Any]:
    item = _message_json(entry.message, entry.snapshot_id, entry.created)
    if entry.reply is not None:
        item["reply"] = {
            "model": entry.reply.model,
            "usage": usage_json(entry.reply.usage) if entry.reply.usage is not None else None,
            "stop_reason": entry.reply.stop_reason,
            "refusal": entry.reply.refusal,
            "left_out": entry.message.refused,
        }
        if entry.reply.undeclared_calls:
            item["reply"]["undeclared_calls"] = list(entry.reply.undeclared_calls)
        if entry.reply.cut_calls:
            item["reply"]["cut_calls"] = list(entry.reply.cut_calls)
    return item


def _reply_text(reply: ReplyRecord, message: Message) -> str:
    """``[model: 12,345 in · …]`` under a reply, then how it ended: a refusal, a filter, a cut, tool calls."""
    usage = usage_line(reply.usage) if reply.usage is not None else "no usage reported (unpriced)"
    parts = [f"[{reply.model}: {usage}"]
    if reply.resets_turn:
        parts.append("; refused: this turn is left out of later requests")
    elif reply.refusal:
        parts.append("; refused")
    notes = stop_notes(reply.model, reply.stop_reason, message.tool_calls, reply.undeclared_calls, reply.cut_calls)
    return "".join(parts) + "]" + "".join(f"\n  ({note})" for note in notes)


LABELS = {
    "user": "user",
    "assistant": "assistant",
    "tool_result": "tool result",
    "system_update": "system update",
    "summary": "summary",
}


def _message_text(message: Message) -> str:
    label = LABELS[message.kind]
    text = message.text
    if message.tool_calls:
        text += "".join(f"\n  -> {c.name}({json.dumps(c.arguments)}) [{c.id}]" for c in message.tool_calls)
    if message.tool_call_id:
        label += f" [{message.tool_call_id}]"
    return f"{label}:\n" + "\n".join("  " + line for line in text.splitlines() or [""])


@session.command("show")
@click.argument("session_id", metavar="ID")
@click.option("--model-view", is_flag=True, help="Exactly what the model sees: baseline, then projected history.")
@click.option("--json", "as_json", is_flag=True, help="As JSON (with --model-view: the provider's request body).")
@click.pass_context
def show(ctx: click.Context, session_id: str, model_view: bool, as_json: bool) -> None:
    """Print the durable history (every message, every epoch), or with --model-view what the model sees."""
    with opened(ctx, session_id, create=False) as (store, full_id):
        state = store.state(full_id)
        history = store.history(full_id)
        record = state.session
        if model_view:
            if state.epoch is None:
                raise UsageError(f"session {full_id}: no context epoch yet; the next send initializes one")
            request = build_request(record, state.epoch, [entry.message for entry in history])
            if as_json:
                body = App.of(ctx).runtime.providers(record.location)(record.model).lower(request)
                click.echo(json.dumps(body, indent=2, ensure_ascii=False))
                return
            click.echo(f"=== baseline (epoch {state.epoch.number}, {record.model}) ===")
            click.echo(request.baseline)
            for message in request.messages:
                click.echo(f"=== #{message.seq} " + _message_text(message))
            return
        epochs = store.epochs(full_id)
        if as_json:
            payload = {
                "session": _session_json(record),
                "epochs": [
                    {
                        "number": e.number,
                        "reason": e.reason,
                        "start_seq": e.start_seq,
                        "model": e.model,
                        "location": e.location,
                        "baseline": e.baseline_id,
                        "snapshot": e.snapshot_id,
                        "created": e.created,
                    }
                    for e in epochs
                ],
                "messages": [_entry_json(h) for h in history],
                "pending": [_message_json(m) for m in state.pending],
            }
            click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
            return
        click.echo(f"session {record.id}  {record.model}  {record.location}")
        waiting = list(epochs)
        for entry in history:
            seq = entry.message.seq or 0
            while waiting and waiting[0].start_seq <= seq:
                _epoch_line(waiting.pop(0))
            click.echo(f"#{seq} " + _message_text(entry.message))
            if entry.reply is not None:
                click.echo("  " + _reply_text(entry.reply, entry.message))
        for epoch in waiting:
            _epoch_line(epoch)
        if record.epoch is None and epochs:
            click.echo(f"--- no active context epoch (at {record.location}); the next send initializes one ---")
        for message in state.pending:
            click.echo("(pending) " + _message_text(message))
        if record.compaction is not None:
            click.echo("(a compaction is pending; it applies at the next send)")


def _epoch_line(epoch: EpochRecord) -> None:
    click.echo(f"--- context epoch {epoch.number}: {epoch.reason} ({epoch.model}, at {epoch.location}) ---")


def _session_json(record: SessionRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "location": record.location,
        "model": record.model,
        "created": record.created,
        "epoch": record.epoch,
        "revision": record.revision,
        "compaction_pending": record.compaction is not None,
    }


def _report(outcome: ReplaceOutcome, done: str) -> None:
    if isinstance(outcome, Blocked):
        click.echo(f"Warning: {outcome}; the current baseline stays in force and the next send retries", err=True)
        click.echo(f"{done} (pending)")
    elif isinstance(outcome, Deferred):
        click.echo(f"{done} ({outcome.reason})")
    else:
        click.echo(f"{done}; new context epoch started")


@session.command("compact")
@click.argument("session_id", metavar="ID")
@click.pass_context
def compact_command(ctx: click.Context, session_id: str) -> None:
    """Replace the history so far with a summary and start a fresh context epoch."""
    runtime = App.of(ctx).runtime
    with opened(ctx, session_id) as (store, full_id):
        location = store.session(full_id).location
        outcome = compact(store, full_id, Contexts(runtime.context_for), runtime.summarizer(location))
        _report(outcome, f"Compacted session {full_id}")


@session.command("switch-model")
@click.argument("session_id", metavar="ID")
@click.argument("model")
@click.pass_context
def switch_model_command(ctx: click.Context, session_id: str, model: str) -> None:
    """Switch to MODEL (PROVIDER/MODEL); the conversation stays, a fresh context epoch starts."""
    runtime = App.of(ctx).runtime
    model = canonical_model(model)
    with opened(ctx, session_id) as (store, full_id):
        location = store.state(full_id).session.location
        providers = runtime.providers(location)
        providers.check(model)
        for warning in runtime.model_warnings(providers, model):
            click.echo(f"Warning: {warning}", err=True)
        outcome = switch_model(store, full_id, model, Contexts(runtime.context_for))
        _report(outcome, f"Session {full_id} now uses {model}")


@session.command("move")
@click.argument("session_id", metavar="ID")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.pass_context
def move_command(ctx: click.Context, session_id: str, directory: str) -> None:
    """Move the session to DIRECTORY; its context is rebuilt there at the next send."""
    location = str(App.of(ctx).locate(directory).path)
    with opened(ctx, session_id) as (store, full_id):
        move(store, full_id, location)
    click.echo(f"Moved session {full_id} to {location}; its context is rebuilt there at the next send")


@session.command("list")
@click.option(
    "--location",
    type=click.Path(file_okay=False),
    default=None,
    help="Only sessions at DIR or in a folder below it.",
)
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@click.pass_context
def list_command(ctx: click.Context, location: str | None, as_json: bool) -> None:
    """List the sessions, oldest first: messages, last activity, model, epoch and Location."""
    within = _absolute(location) if location is not None else None
    with opened(ctx, create=False) as (store, _):
        listing = store.list_sessions()
        activity = store.activity()
    records = [r for r in listing.sessions if within is None or _is_within(r.location, within)]
    if as_json:
        rows = [_session_json(r) | _activity_json(activity.get(r.id)) for r in records]
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    elif records:
        table: list[tuple[str, ...]] = [("ID", "LAST ACTIVITY", "MESSAGES", "MODEL", "EPOCH", "LOCATION")]
        for r in records:
            epoch = f"epoch {r.epoch}" if r.epoch is not None else "no epoch"
            seen = activity.get(r.id)
            count = f"{seen.messages} msg" if seen is not None else "? msg"
            last = _when(seen.last_activity if seen is not None else r.created)
            table.append((r.id, last, count, r.model, epoch, str(r.location)))
        widths = [max(len(row[i]) for row in table) for i in range(5)]
        for row in table:  # the message count right-aligned, the Location last and unpadded
            cells = [row[i].rjust(widths[i]) if i == 2 else row[i].ljust(widths[i]) for i in range(5)]
            click.echo("  ".join([*cells, row[5]]))
    if listing.damaged:  # the others are listed above; each damaged row is named, then the exit status says so
        for error in listing.damaged:
            click.echo(f"Error: {error}", err=True)
        raise ReportedDamage(f"{len(listing.damaged)} session(s) could not be read; see: nia db check")


@session.command("delete")
@click.argument("session_ids", metavar="ID...", nargs=-1, required=True)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete_command(ctx: click.Context, session_ids: tuple[str, ...], yes: bool) -> None:
    """Delete sessions for good: their history, epochs and pending input."""
    with opened(ctx, create=False) as (store, _):
        full_ids = [store.resolve(prefix) for prefix in session_ids]
        if not yes:
            click.confirm(f"Delete {len(full_ids)} session(s) ({', '.join(full_ids)}) for good?", abort=True, err=True)
        _delete(store, full_ids)


@session.command("prune")
@click.option(
    "--older-than",
    "age",
    required=True,
    metavar="AGE",
    help="Delete sessions with no activity for AGE: a number and a unit, e.g. 30d, 12h, 2w, 90m.",
)
@click.option("--location", type=click.Path(file_okay=False), default=None, help="Only sessions at or below DIR.")
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def prune_command(ctx: click.Context, age: str, location: str | None, dry_run: bool, yes: bool) -> None:
    """Delete the sessions whose last activity is older than AGE."""
    cutoff = (datetime.now(UTC) - _parse_age(age)).isoformat(timespec="milliseconds")
    within = _absolute(location) if location is not None else None
    with opened(ctx, create=False) as (store, _):
        listing = store.list_sessions()
        activity = store.activity()
        stale = [
            r.id
            for r in listing.sessions
            if (within is None or _is_within(r.location, within))
            and (activity[r.id].last_activity if r.id in activity else r.created) < cutoff
        ]
        if not stale:
            click.echo(f"No session has been idle for {age}.")
            return
        if dry_run:
            for session_id in stale:
                click.echo(f"Would delete session {session_id}")
            return
        if not yes:
            click.confirm(f"Delete {len(stale)} session(s) idle for {age} for good?", abort=True, err=True)
        _delete(store, stale)


def _delete(store: Store, session_ids: list[str]) -> None:
    for session_id in session_ids:
        try:
            store.delete_session(session_id)
        except StoreError as exc:
            raise exc.about(session_id) from None
        click.echo(f"Deleted session {session_id}")


_AGE_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def _parse_age(age: str) -> timedelta:
    match = re.fullmatch(r"\s*(\d+)\s*([mhdw])\s*", age)
    if match is None:
        raise UsageError(f"--older-than {age!r}: give a whole number and a unit (m, h, d, w), e.g. 30d")
    return timedelta(seconds=int(match.group(1)) * _AGE_UNITS[match.group(2)])


def _absolute(directory: str) -> str:
    return os.path.realpath(os.path.expanduser(directory))  # as Locations are stored: symlinks resolved


def _is_within(location: str, folder: str) -> bool:
    return location == folder or location.startswith(folder.rstrip(os.sep) + os.sep)


def _when(stamp: str) -> str:
    return stamp[:19].replace("T", " ") if stamp else "?"


def _activity_json(seen: SessionActivity | None) -> dict[str, Any]:
    if seen is None:
        return {"messages": None, "last_activity": None}
    return {"messages": seen.messages, "last_activity": seen.last_activity}


@session.command("stats")
@click.argument("session_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@click.pass_context
def stats_command(ctx: click.Context, session_id: str, as_json: bool) -> None:
    """Turns, tokens, cache-read share and estimated cost (beside the cost with no cache hits)."""
    with opened(ctx, session_id, create=False) as (store, full_id):
        record = store.session(full_id)
        history = store.history(full_id)
        table = _prices(App.of(ctx), record.location)
        totals = session_totals(history, table)
    if as_json:
        click.echo(json.dumps({"session": full_id, "model": record.model, **totals_json(totals)}, indent=2))
        return
    click.echo(f"session {full_id}  {record.model}")
    for line in totals_text(totals):
        click.echo(line)


def _prices(app: App, location: str) -> PriceTable:
    """The project's price table; the built-in one when the session's folder is gone."""
    try:
        where = app.runtime.locate(location)
    except (NiaError, OSError):
        return PriceTable()
    return prices_at(where.nia_dir / "project.toml")
