"""A hand-edited database (issue #11 item 12, #14 item 1): every read validates what it returns.

A damaged row is a CorruptRecord naming its session; the other sessions still
list and read; ``nia db check`` reports every damaged session and goes on;
a boundary on a damaged session fails before anything is sent or stored.
The corpus runs against both stores, except the edits only SQLite's loose
column types allow.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from nia_core.context import canonical_json
from nia_core.providers.echo import EchoProvider
from nia_core.sessions import CorruptRecord, Store, open_store, run_turn
from nia_core.sessions.serialize import content_id

from .session_checks import problems
from .session_tamper import count_rows, forged_snapshot, tamper
from .session_world import World

BACKENDS = ("sqlite", "postgres")
TARGET = "s1damaged"
OTHERS = ("s0intact", "s2intact")


class Recording(EchoProvider):
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, request: Any, *, stream: Any = None) -> Any:
        self.sent.append(request)
        return super().send(request, stream=stream)


def populate(store: Store) -> World:
    world = World()
    world.set("/p", "acme/docs", "Rule one")
    echo = EchoProvider()
    for session_id in (OTHERS[0], TARGET, OTHERS[1]):
        store.create_session("/p", "echo/echo", session_id=session_id)
        run_turn(store, session_id, world.context_for, lambda _m: echo, text="hello")
    world.set("/p", "acme/docs", "Rule two")
    run_turn(store, TARGET, world.context_for, lambda _m: echo, text="again")  # a system message, a 2nd snapshot
    return world


Edit = Callable[[str], list[str]]


@dataclass(frozen=True)
class Damage:
    name: str
    edit: Edit
    expected: str
    """A fragment of the one-line error."""
    row: bool = False
    """Whether the ``sessions`` row itself is damaged (so listing reports it)."""
    sqlite_only: bool = False


def sql(*statements: str) -> Edit:
    return lambda _url: [s.replace("TARGET", TARGET) for s in statements]


def bad_key(url: str) -> list[str]:
    value = '"x"'
    return forged_snapshot(url, TARGET, {"Acme/Docs\n": [content_id(value), None]}, value)


def empty_removal(url: str) -> list[str]:
    value = '"x"'
    return forged_snapshot(url, TARGET, {"acme/docs": [content_id(value), content_id(" ")]}, value, " ")


def manifest_not_a_map(url: str) -> list[str]:
    return forged_snapshot(url, TARGET, ["acme/docs"])  # type: ignore[arg-type]


CORPUS = [
    Damage("snapshot key that is not a source key", bad_key, "'Acme/Docs\\n' is not a valid source key"),
    Damage("snapshot with an empty removal text", empty_removal, "the removal text of 'acme/docs'"),
    Damage("snapshot manifest that is a list", manifest_not_a_map, "is damaged (not an object)"),
    Damage(
        "message body that is not JSON",
        sql("UPDATE messages SET body = 'not json' WHERE session_id = 'TARGET' AND seq = 1"),
        "message #1 has a damaged body",
    ),
    Damage(
        "message body whose tool calls are not a list",
        sql("""UPDATE messages SET body = '{"text": "", "tool_calls": 5}' WHERE session_id = 'TARGET' AND seq = 2"""),
        "message #2 has a damaged body",
    ),
    Damage(
        "unknown message kind",
        sql("UPDATE messages SET kind = 'telepathy' WHERE session_id = 'TARGET' AND seq = 1"),
        "message #1 has unknown kind 'telepathy'",
    ),
    Damage(
        "pending compaction that is not one",
        sql("""UPDATE sessions SET compaction = '{"summary": "s"}' WHERE id = 'TARGET'"""),
        "the pending compaction is damaged",
        row=True,
    ),
    Damage("active epoch that does not exist", sql("UPDATE sessions SET epoch = 7 WHERE id = 'TARGET'"), "epoch 7"),
    Damage(
        "baseline segments that are not a list",
        sql("UPDATE epochs SET segments = '{}' WHERE session_id = 'TARGET'"),
        "the baseline of epoch 1 is damaged",
    ),
    Damage(
        "baseline segment edited",
        sql("UPDATE epochs SET segments = '[\"0000\"]' WHERE session_id = 'TARGET'"),
        "the baseline of epoch 1 is corrupt: part 1 missing",
    ),
    # SQLite keeps whatever is written, whatever the column's declared type.
    Damage(
        "revision that is not an integer",
        sql("UPDATE sessions SET revision = 'abc' WHERE id = 'TARGET'"),
        "its revision is damaged (expected a whole number, found str 'abc')",
        row=True,
        sqlite_only=True,
    ),
    Damage(
        "revision that is a real number",
        sql("UPDATE sessions SET revision = 2.5 WHERE id = 'TARGET'"),
        "its revision is damaged (expected a whole number, found float 2.5)",
        row=True,
        sqlite_only=True,
    ),
    Damage(
        "location stored as a blob",
        sql("UPDATE sessions SET location = CAST(location AS BLOB) WHERE id = 'TARGET'"),
        "its location is damaged (expected text, found bytes",
        row=True,
        sqlite_only=True,
    ),
    Damage(
        "active epoch number that is text",
        sql("UPDATE sessions SET epoch = 'one' WHERE id = 'TARGET'"),
        "its active epoch number is damaged",
        row=True,
        sqlite_only=True,
    ),
    Damage(
        "snapshot blobs stored with the wrong SQL type",
        sql(
            "UPDATE blobs SET data = CAST(data AS BLOB) WHERE id IN (SELECT value FROM snapshots, "
            "json_each(snapshots.manifest, '$.\"acme/docs\"') WHERE snapshots.id IN "
            "(SELECT snapshot_id FROM epochs WHERE session_id = 'TARGET'))"
        ),
        "is stored as bytes, not text",
        sqlite_only=True,
    ),
    Damage(
        "removal text stored with the wrong SQL type",
        sql("UPDATE blobs SET data = CAST(data AS BLOB) WHERE data LIKE '%Rule two%' AND data NOT LIKE '\"%'"),
        "is stored as bytes, not text",
        sqlite_only=True,
    ),
    Damage(
        "snapshot manifest stored as a blob",
        sql(
            "UPDATE snapshots SET manifest = CAST(manifest AS BLOB) "
            "WHERE id IN (SELECT snapshot_id FROM epochs WHERE session_id = 'TARGET')"
        ),
        "expected text, found bytes",
        sqlite_only=True,
    ),
    Damage(
        "message number that is text",
        sql("UPDATE messages SET seq = 'x' WHERE session_id = 'TARGET' AND seq = 2"),
        "a message number (seq) is damaged",
        sqlite_only=True,
    ),
    Damage(
        "message body stored as a blob",
        sql("UPDATE messages SET body = CAST(body AS BLOB) WHERE session_id = 'TARGET' AND seq = 1"),
        "message #1: its body is damaged (expected text, found bytes",
        sqlite_only=True,
    ),
    Damage(
        "epoch start that is text",
        sql("UPDATE epochs SET start_seq = 'first' WHERE session_id = 'TARGET'"),
        "epoch 1: its start_seq is damaged",
        sqlite_only=True,
    ),
    Damage(
        "pending input kind stored as a blob",
        sql("INSERT INTO pending (session_id, kind, body, created) VALUES ('TARGET', X'75736572', '{}', 'now')"),
        "its kind is damaged (expected text, found bytes b'user')",
        sqlite_only=True,
    ),
]


CASES = [(d, backend) for d in CORPUS for backend in BACKENDS if not (d.sqlite_only and backend != "sqlite")]


@dataclass
class Case:
    damage: Damage
    url: str
    opened: list[Store]

    def open(self) -> Store:
        store = open_store(self.url)
        self.opened.append(store)
        return store


@pytest.fixture(params=CASES, ids=[f"{d.name}-{backend}" for d, backend in CASES])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Case]:
    """One damage of the corpus on one backend (SQLite's loose column types only on SQLite)."""
    damage, backend = request.param
    url = f"sqlite:///{tmp_path / 'nia.db'}" if backend == "sqlite" else str(request.getfixturevalue("postgres_url"))
    case = Case(damage, url, [])
    yield case
    for store in case.opened:
        store.close()


def read_everything(store: Store, session_id: str) -> None:
    store.session(session_id)
    store.state(session_id)
    store.history(session_id)
    store.epochs(session_id)


def test_a_damaged_row_names_its_session_and_the_others_still_read(case: Case) -> None:
    damage = case.damage
    populate(case.open())
    tamper(case.url, *damage.edit(case.url))
    store = case.open()  # a fresh connection: nothing cached from before the edit

    listing = store.list_sessions()
    listed = [record.id for record in listing.sessions]
    if damage.row:
        assert listed == list(OTHERS)
        assert [(e.session_id, damage.expected in e.problem) for e in listing.damaged] == [(TARGET, True)]
        assert [r.id for r in store.sessions()] == list(OTHERS)
    else:
        assert listed == [OTHERS[0], TARGET, OTHERS[1]] and listing.damaged == ()

    with pytest.raises(CorruptRecord) as caught:
        read_everything(store, TARGET)
    assert caught.value.session_id == TARGET
    assert damage.expected in str(caught.value) and str(caught.value).startswith(f"session {TARGET}: ")
    assert "\n" not in str(caught.value).replace("\\n", "")
    for other in OTHERS:
        read_everything(store, other)
        assert problems(store, other) == []


def test_a_boundary_on_a_damaged_session_sends_and_stores_nothing(case: Case) -> None:
    world = populate(case.open())
    tamper(case.url, *case.damage.edit(case.url))
    store = case.open()
    before = count_rows(case.url)
    provider = Recording()
    with pytest.raises(CorruptRecord, match=f"^session {TARGET}: "):
        run_turn(store, TARGET, world.context_for, lambda _m: provider, text="one more")
    assert provider.sent == [] and count_rows(case.url) == before
    world.set("/p", "acme/docs", "Rule three")  # texts are shared by content: keep clear of the damaged ones
    run_turn(store, OTHERS[0], world.context_for, lambda _m: provider, text="one more")  # the others still work
    assert len(provider.sent) == 1


def nia(env: dict[str, str], *args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_the_cli_names_the_damaged_session_lists_the_others_and_db_check_goes_on(
    case: Case, cli_env: dict[str, str]
) -> None:
    damage = case.damage
    populate(case.open())
    tamper(case.url, *damage.edit(case.url))
    env = {**cli_env, "NIA_DB": case.url}

    listed = nia(env, "session", "list")
    for other in OTHERS:
        assert other in listed.stdout
    if damage.row:
        assert listed.exit_code == 1 and TARGET not in listed.stdout
        assert f"Error: session {TARGET}: " in listed.stderr and damage.expected in listed.stderr
    else:
        assert listed.exit_code == 0 and TARGET in listed.stdout
    assert "Traceback" not in listed.output

    shown = nia(env, "session", "show", TARGET)
    assert shown.exit_code == 1 and shown.output.startswith(f"Error: session {TARGET}: ")
    assert damage.expected in shown.output and len(shown.output.strip().splitlines()) == 1
    assert nia(env, "session", "show", OTHERS[1]).exit_code == 0

    checked = nia(env, "db", "check")
    assert checked.exit_code == 1 and "Traceback" not in checked.output
    assert f"session {TARGET}: " in checked.output and damage.expected in checked.output
    assert "1 of 3 sessions have problems" in checked.output
    assert not any(f"session {other}:" in checked.output for other in OTHERS)


def test_db_check_reports_every_damaged_session_and_goes_on(
    store_url: str, reopen: Callable[[], Store], cli_env: dict[str, str]
) -> None:
    store = reopen()
    populate(store)
    for session_id in ("s3extra", "s4extra"):
        store.create_session("/p", "echo/echo", session_id=session_id)
    tamper(
        store_url,
        f"UPDATE messages SET kind = 'telepathy' WHERE session_id = '{TARGET}' AND seq = 1",
        f"UPDATE sessions SET compaction = 'nope' WHERE id = '{OTHERS[1]}'",
        "UPDATE sessions SET epoch = 4 WHERE id = 's4extra'",
    )
    checked = nia({**cli_env, "NIA_DB": store_url}, "db", "check")
    assert checked.exit_code == 1
    for session_id in (TARGET, OTHERS[1], "s4extra"):
        assert f"session {session_id}: " in checked.output
    assert "3 of 5 sessions have problems" in checked.output
    assert f"session {OTHERS[0]}:" not in checked.output and "session s3extra:" not in checked.output

    as_json = nia({**cli_env, "NIA_DB": store_url}, "db", "check", "--json")
    assert as_json.exit_code == 1
    report = json.loads(as_json.stdout)  # stdout is the object; the verdict line is on stderr
    assert report["ok"] is False and report["sessions"] == 5
    assert sorted(report["problems"]) == sorted([TARGET, OTHERS[1], "s4extra"])
    assert all(isinstance(p, str) and p for found in report["problems"].values() for p in found)
    assert as_json.stderr.strip() == "Error: 3 of 5 sessions have problems (in the report)"


def test_an_intact_forged_snapshot_still_reads(store_url: str, reopen: Callable[[], Store]) -> None:
    """The corpus's forging helper writes what nia would: a valid forged snapshot is accepted."""
    populate(reopen())
    value = canonical_json("forged")
    tamper(store_url, *forged_snapshot(store_url, TARGET, {"acme/docs": [content_id(value), None]}, value))
    state = reopen().state(TARGET)
    assert state.epoch is not None and state.epoch.snapshot["acme/docs"].value == value
