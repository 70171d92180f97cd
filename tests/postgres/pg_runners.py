"""Runners for the concurrency and fault tests: real processes driving real boundaries.

A Location is a directory whose ``value.json`` a runner may rewrite; its
context has two sources (the value, and where it is), so a change becomes a
mid-conversation system message and a move needs a fresh baseline. A runner
logs every fenced write that succeeded (epoch starts, admissions, promotions,
moves) so the test can check them against the database afterwards.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nia_core import UNAVAILABLE, ContextSource
from nia_core.context import Snapshot, SystemContext, initialize
from nia_core.errors import UsageError
from nia_core.providers.echo import EchoProvider
from nia_core.sessions import (
    Contexts,
    Message,
    RevisionConflict,
    Store,
    compact,
    open_store,
    run_turn,
    switch_model,
)
from nia_core.sessions.serialize import content_id

VALUE_FILE = "value.json"


def _sources(location: str, load_value: Callable[[], Any], load_where: Callable[[], Any]) -> list[ContextSource]:
    return [
        ContextSource("test/where", load=load_where, baseline=lambda where: f"You work in {where}."),
        ContextSource(
            "test/value",
            load=load_value,
            baseline=lambda value: f"The value is {value}.",
            update=lambda old, new: f"The value changed from {old} to {new}.",
        ),
    ]


def context_for(location: str) -> SystemContext:
    """The context at ``location``: its ``value.json`` (unavailable while missing) and its path."""

    def load_value() -> Any:
        try:
            return json.loads((Path(location) / VALUE_FILE).read_text())
        except (OSError, ValueError):
            return UNAVAILABLE

    return SystemContext(_sources(location, load_value, lambda: location))


def context_of(snapshot: Snapshot) -> SystemContext:
    """The context whose observation is exactly ``snapshot`` (to re-render a stored epoch's baseline)."""
    values = {key: json.loads(entry.value) for key, entry in snapshot.items()}
    sources = _sources("", lambda: values.get("test/value", UNAVAILABLE), lambda: values.get("test/where"))
    return SystemContext([s for s in sources if s.key in values])


def baseline_matches(store: Store, session_id: str, baseline_id: str, snapshot_id: str) -> bool:
    """Whether the stored baseline is exactly what its snapshot renders to."""
    snapshot = store.snapshot(session_id, snapshot_id)
    generation = initialize(context_of(snapshot))
    return generation.snapshot == snapshot and content_id(generation.baseline) == baseline_id


def set_value(location: str | Path, value: Any) -> None:
    """Rewrite a Location's value atomically (readers never see half a file)."""
    path = Path(location) / VALUE_FILE
    tmp = path.with_name(f".{VALUE_FILE}.{os.getpid()}")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)


def provider_for(_model: str) -> EchoProvider:
    return EchoProvider()


class LoggingStore:
    """Delegates to a store and logs each fenced write that succeeded (for the checks after the run)."""

    def __init__(self, store: Store, log: list[dict[str, Any]]) -> None:
        self._store = store
        self._log = log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _conflict(self, op: str, session_id: str, exc: RevisionConflict) -> None:
        self._log.append({"op": "conflict", "of": op, "session": session_id, "why": exc.why})

    def start_epoch(self, session_id: str, **kwargs: Any) -> Any:
        try:
            record = self._store.start_epoch(session_id, **kwargs)
        except RevisionConflict as exc:
            self._conflict("start_epoch", session_id, exc)
            raise
        self._log.append(
            {
                "op": "start_epoch",
                "session": session_id,
                "expected": kwargs["expected_revision"],
                "location": kwargs["location"],
                "epoch": record.epoch,
                "compaction": kwargs.get("compaction") is not None,
            }
        )
        return record

    def admit_update(self, session_id: str, **kwargs: Any) -> Message:
        try:
            message = self._store.admit_update(session_id, **kwargs)
        except RevisionConflict as exc:
            self._conflict("admit", session_id, exc)
            raise
        self._log.append(
            {
                "op": "admit",
                "session": session_id,
                "expected": kwargs["expected_revision"],
                "epoch": kwargs["epoch"],
                "seq": message.seq,
                "text": message.text,
            }
        )
        return message

    def promote(self, session_id: str, *, location: str) -> list[Message]:
        try:
            promoted = self._store.promote(session_id, location=location)
        except RevisionConflict as exc:
            self._conflict("promote", session_id, exc)
            raise
        if promoted:
            self._log.append(
                {
                    "op": "promote",
                    "session": session_id,
                    "location": location,
                    "seqs": [m.seq for m in promoted],
                    "epochs": [m.epoch for m in promoted],
                    "texts": [m.text for m in promoted],
                }
            )
        return promoted

    def enqueue(self, session_id: str, message: Message) -> None:
        self._store.enqueue(session_id, message)
        self._log.append({"op": "enqueue", "session": session_id, "text": message.text})

    def move(self, session_id: str, location: str) -> Any:
        record = self._store.move(session_id, location)
        self._log.append({"op": "move", "session": session_id, "location": location, "revision": record.revision})
        return record


@dataclass(frozen=True)
class RunnerSpec:
    """What one runner process does: ``turns`` turns on one session, plus its side job."""

    index: int
    session_id: str
    turns: int
    job: str = "turns"
    """``turns`` only, or also ``change`` (rewrite the value), ``compact``, ``switch`` (model) or ``move``."""
    moves: tuple[str, ...] = ()
    """For ``move``: the Locations to move the session to, in order."""
    every: int = 3


def run_runner(url: str, spec: RunnerSpec, out: str) -> None:
    """A runner process's body: log to ``out`` (JSON lines), exit non-zero on any unexpected error."""
    log: list[dict[str, Any]] = []
    code = 0
    try:
        with open_store(url) as raw:
            store = LoggingStore(raw, log)
            moves = list(spec.moves)
            for turn in range(spec.turns):
                side_job(store, spec, turn, moves, log)
                result = run_turn(
                    store,  # type: ignore[arg-type]
                    spec.session_id,
                    context_for,
                    provider_for,
                    text=f"runner {spec.index} turn {turn}",
                )
                log.append({"op": "turn", "result": type(result).__name__})
    except BaseException as exc:
        log.append({"op": "error", "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})
        code = 1
    finally:
        Path(out).write_text("".join(json.dumps(entry) + "\n" for entry in log))
    os._exit(code)


def side_job(store: LoggingStore, spec: RunnerSpec, turn: int, moves: list[str], log: list[dict[str, Any]]) -> None:
    if spec.job == "turns" or turn % spec.every != spec.every - 1:
        return
    if spec.job == "change":
        set_value(store.session(spec.session_id).location, f"v{spec.index}.{turn}")
    elif spec.job == "compact":
        try:
            outcome = compact(store, spec.session_id, Contexts(context_for))  # type: ignore[arg-type]
            log.append({"op": "compact", "session": spec.session_id, "outcome": type(outcome).__name__})
        except UsageError:
            log.append({"op": "compact", "session": spec.session_id, "outcome": "nothing to compact"})
    elif spec.job == "switch":
        model = f"echo/m{spec.index}-{turn}"
        outcome = switch_model(store, spec.session_id, model, Contexts(context_for))  # type: ignore[arg-type]
        log.append({"op": "switch", "session": spec.session_id, "model": model, "outcome": type(outcome).__name__})
    elif spec.job == "move" and moves:
        store.move(spec.session_id, moves.pop(0))


def read_log(path: str | Path) -> list[dict[str, Any]]:
    text = Path(path).read_text() if Path(path).exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def authoritative_location(initial: str, moves: Sequence[dict[str, Any]], revision: int) -> str:
    """Where the session was at ``revision``: the last move at or before it, else where it was created."""
    location = initial
    for move in sorted(moves, key=lambda m: m["revision"]):
        if move["revision"] <= revision:
            location = move["location"]
    return location
