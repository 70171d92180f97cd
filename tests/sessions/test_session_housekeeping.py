"""Session housekeeping on both stores: list with activity, delete, prune --older-than."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nia_core.cli import cli
from nia_core.sessions import UnknownSession, open_store


def nia(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, store_url: str) -> str:
    monkeypatch.setenv("NIA_DB", store_url)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return store_url


def project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    (root / ".nia").mkdir(parents=True)
    (root / "AGENTS.md").write_text(f"Work on {name}.\n")
    return root


def session_with(root: Path, *texts: str) -> str:
    created = nia("session", "new", "--location", str(root))
    assert created.exit_code == 0, created.output
    session_id = created.stdout.strip()
    for text in texts:
        sent = nia("session", "send", session_id, text)
        assert sent.exit_code == 0, sent.output
    return session_id


def listed(*args: str) -> list[dict[str, object]]:
    result = nia("session", "list", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_list_shows_message_count_last_activity_and_location(env: str, tmp_path: Path) -> None:
    alpha, beta = project(tmp_path, "alpha"), project(tmp_path, "beta")
    busy = session_with(alpha, "one", "two")  # two user turns, two replies
    idle = session_with(beta)

    rows = {row["id"]: row for row in listed()}
    assert rows[busy]["messages"] == 4 and rows[idle]["messages"] == 0
    assert str(rows[busy]["last_activity"]) > str(rows[busy]["created"])
    assert rows[idle]["last_activity"] == rows[idle]["created"]
    assert rows[busy]["location"] == str(alpha.resolve())

    text = nia("session", "list").stdout.splitlines()
    (line,) = [line for line in text if line.startswith(busy)]
    assert "  4 msg  " in line and line.endswith(str(alpha.resolve()))


def test_list_filters_by_location_at_or_below_a_folder(env: str, tmp_path: Path) -> None:
    alpha, beta = project(tmp_path, "alpha"), project(tmp_path, "beta")
    (alpha / "src").mkdir()
    top, below, other = session_with(alpha), session_with(alpha / "src"), session_with(beta)

    assert [row["id"] for row in listed("--location", str(alpha))] == [top, below]
    assert [row["id"] for row in listed("--location", str(alpha / "src"))] == [below]
    assert [row["id"] for row in listed("--location", str(beta))] == [other]
    assert listed("--location", str(tmp_path / "alph")) == []  # a name prefix is not a folder


def test_delete_removes_only_that_session_and_everything_it_holds(env: str, tmp_path: Path) -> None:
    root = project(tmp_path, "alpha")
    gone, kept = session_with(root, "bye"), session_with(root, "stay")

    refused = nia("session", "delete", gone, input="n\n")
    assert refused.exit_code == 1 and gone in {row["id"] for row in listed()}

    result = nia("session", "delete", "--yes", gone[:8])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"Deleted session {gone}\n"
    assert [row["id"] for row in listed()] == [kept]
    shown = nia("session", "show", kept)
    assert "stay" in shown.stdout
    with open_store(env) as store:
        with pytest.raises(UnknownSession):
            store.session(gone)
        with pytest.raises(UnknownSession):
            store.delete_session(gone)
        # The same id may be taken again (attached sessions are keyed this way) and starts empty.
        store.create_session(str(root), "echo/echo", session_id=gone)
        assert store.history(gone) == []

    checked = nia("db", "check", "--json")  # what is left after a deletion is still consistent
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout) | {"database": "", "schema_version": 0, "current_schema_version": 0} == {
        "database": "",
        "schema_version": 0,
        "current_schema_version": 0,
        "sessions": 2,
        "ok": True,
        "problems": {},
    }

    missing = nia("session", "delete", "--yes", "ffffffffffff")
    assert missing.exit_code != 0 and "no session 'ffffffffffff'" in missing.stderr


def test_prune_deletes_idle_sessions_only(env: str, tmp_path: Path) -> None:
    root = project(tmp_path, "alpha")
    first, second = session_with(root, "x"), session_with(root)

    assert nia("session", "prune", "--older-than", "1d", "--yes").stdout == "No session has been idle for 1d.\n"
    dry = nia("session", "prune", "--older-than", "0m", "--dry-run")
    assert dry.stdout == f"Would delete session {first}\nWould delete session {second}\n"
    assert len(listed()) == 2

    other = project(tmp_path, "beta")
    third = session_with(other)
    pruned = nia("session", "prune", "--older-than", "0m", "--location", str(root), "--yes")
    assert pruned.exit_code == 0, pruned.output
    assert pruned.stdout == f"Deleted session {first}\nDeleted session {second}\n"
    assert [row["id"] for row in listed()] == [third]


@pytest.mark.parametrize("age", ["30", "d", "-1d", "1y", "1.5d"])
def test_prune_refuses_an_age_it_cannot_read(env: str, age: str) -> None:
    result = nia("session", "prune", "--older-than", age)

    assert result.exit_code == 2
    assert result.stderr == (f"Error: --older-than {age!r}: give a whole number and a unit (m, h, d, w), e.g. 30d\n")
