"""16 runner processes on 4 sessions against one PostgreSQL database.

Each session has four runners: one only takes turns, one also rewrites the
context's value, one compacts, one switches models, and one of them moves the
session through fresh Locations; all for a bounded number of turns. Then,
from the database alone (and the runners' logs of what they wrote): every
history is gap-free, every admitted system message and every input appears
exactly once, every epoch's baseline is what its snapshot renders to, and no
fenced write landed at a Location the session had already left.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nia_core.sessions import Replied, open_store, run_turn
from nia_core.sessions.check import session_problems

from .pg_runners import (
    RunnerSpec,
    authoritative_location,
    baseline_matches,
    context_for,
    provider_for,
    read_log,
    run_runner,
    set_value,
)

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SESSIONS = 4
RUNNERS_PER_SESSION = 4
TURNS = 8
JOBS = ("change", "compact", "switch", "move")
EVERY = {"change": 2, "compact": 3, "switch": 4, "move": 2}
"""A side job runs at every EVERY-th turn of its runner."""


def test_sixteen_runners_on_four_sessions_keep_every_invariant(pg_url: str, tmp_path: Path) -> None:
    url = pg_url + "&pool_size=2"
    locations: dict[str, list[str]] = {}
    with open_store(url) as store:
        for s in range(SESSIONS):
            places = [tmp_path / f"s{s}" / f"place{k}" for k in range(4)]
            for k, place in enumerate(places):
                place.mkdir(parents=True)
                set_value(place, f"initial {s}.{k}")
            session_id = store.create_session(str(places[0]), "echo/echo", session_id=f"sess{s}").id
            locations[session_id] = [str(p) for p in places]

    specs = []
    for s, (session_id, places) in enumerate(locations.items()):
        for k, job in enumerate(JOBS):
            index = s * RUNNERS_PER_SESSION + k
            moves = tuple(places[1:]) if job == "move" else ()
            specs.append(RunnerSpec(index, session_id, TURNS, job, moves, every=EVERY[job]))
    assert len(specs) == 16

    context = multiprocessing.get_context("fork")
    logs = {spec.index: tmp_path / f"runner{spec.index}.jsonl" for spec in specs}
    processes = [
        context.Process(target=run_runner, args=(url, spec, str(logs[spec.index])), daemon=True) for spec in specs
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=240)
    stuck = [p.pid for p in processes if p.is_alive()]
    for process in processes:
        if process.is_alive():
            process.kill()
    assert not stuck, f"runners still running after 240s: {stuck}"
    entries: list[dict[str, Any]] = []
    for spec in specs:
        log = read_log(logs[spec.index])
        errors = [e for e in log if e["op"] == "error"]
        assert not errors, f"runner {spec.index} failed:\n{errors[0]['trace']}"
        assert sum(e["op"] == "turn" for e in log) == TURNS
        entries += [dict(e, runner=spec.index) for e in log]

    admitted = 0
    with open_store(url) as store:
        for session_id, places in locations.items():
            # One last turn where the session ended up: initializes there and promotes anything still pending.
            assert isinstance(run_turn(store, session_id, context_for, provider_for, text="last"), Replied)
            mine = [e for e in entries if e.get("session") == session_id]
            mine.append({"op": "enqueue", "session": session_id, "text": "last"})
            admitted += check_session(store, session_id, places, mine)
    assert admitted, "no context change was admitted as a system message"
    conflicts = Counter((e["of"], e["why"].split(" ")[0]) for e in entries if e["op"] == "conflict")
    print(f"admitted {admitted} system messages; compare-and-swap conflicts and fenced writes: {dict(conflicts)}")


def check_session(store: Any, session_id: str, places: list[str], log: list[dict[str, Any]]) -> int:
    """Assert every invariant for one session; the number of system messages its runners admitted."""
    history = store.history(session_id)
    epochs = store.epochs(session_id)
    state = store.state(session_id)
    assert session_problems(store, session_id) == []

    # Gap-free history.
    assert [h.message.seq for h in history] == list(range(1, len(history) + 1))

    # Every input once: promoted exactly once (none left pending), and nothing promoted that nobody sent.
    sent = Counter(e["text"] for e in log if e["op"] == "enqueue")
    promoted = Counter(h.message.text for h in history if h.message.kind == "user")
    assert state.pending == ()
    assert promoted == sent
    assert all(count == 1 for count in sent.values())

    # Every admitted system message once, where its runner was told it was stored.
    admits = [e for e in log if e["op"] == "admit"]
    updates = {h.message.seq: h for h in history if h.message.kind == "system_update"}
    assert sorted(updates) == sorted(e["seq"] for e in admits)
    for admit in admits:
        assert updates[admit["seq"]].message.text == admit["text"]
        assert updates[admit["seq"]].message.epoch == admit["epoch"]

    # Every epoch's baseline is what its snapshot renders to; the active one reads back byte for byte.
    for epoch in epochs:
        assert baseline_matches(store, session_id, epoch.baseline_id, epoch.initial_snapshot_id), epoch
    if state.epoch is not None:
        assert baseline_matches(
            store, session_id, state.epoch.record.baseline_id, state.epoch.record.initial_snapshot_id
        )

    # Fencing: every epoch start and admission happened where the session was at that revision.
    moves = [e for e in log if e["op"] == "move"]
    assert [m["location"] for m in sorted(moves, key=lambda m: m["revision"])] == places[1:]
    by_number = {e.number: e for e in epochs}
    starts = [e for e in log if e["op"] == "start_epoch"]
    assert sorted(s["epoch"] for s in starts) == [e.number for e in epochs]
    for start in starts:
        assert start["location"] == authoritative_location(places[0], moves, start["expected"]), start
        assert by_number[start["epoch"]].location == start["location"]
    for admit in admits:
        where = by_number[admit["epoch"]].location
        assert where == authoritative_location(places[0], moves, admit["expected"]), admit
    # ... and epochs follow the moves: never back to a Location the session left.
    order = [places.index(e.location) for e in epochs]
    assert order == sorted(order) and order[0] == 0 and order[-1] == len(places) - 1
    # Promotions landed in the epoch in force, at the Location they were fenced on.
    for promotion in (e for e in log if e["op"] == "promote"):
        for epoch in promotion["epochs"]:
            assert by_number[epoch].location == promotion["location"]
    conversation = [h.message for h in history if h.message.kind in ("user", "tool_result", "system_update", "summary")]
    assert [m.epoch for m in conversation] == sorted(m.epoch for m in conversation)
    for message in conversation:
        assert message.seq >= by_number[message.epoch].start_seq

    # The side jobs ran, and what they asked for is in force: the last model, every compaction applied.
    switches = [e for e in log if e["op"] == "switch"]
    assert switches and state.session.model == switches[-1]["model"]
    assert state.epoch is not None and state.epoch.record.model == state.session.model
    compactions = [e for e in log if e["op"] == "compact" and e["outcome"] != "nothing to compact"]
    assert compactions and state.session.compaction is None
    assert any(h.message.kind == "summary" for h in history)
    return len(admits)
