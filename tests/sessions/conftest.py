"""Fixtures for the session tests.

The store tests are a conformance suite: every test that takes ``store`` (or
``store_url`` / ``reopen``) runs once per backend in ``BACKENDS``. A new
backend adds its name there and a branch in ``store_url``; everything built on
the :class:`~nia_core.sessions.Store` interface must then pass unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nia_core.sessions import Store, open_store

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL naming a fresh, empty database of each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'nia.db'}"
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    raise AssertionError(f"unknown backend {request.param}")  # pragma: no cover


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh schema on the test PostgreSQL server (tests/postgres/pg_server.py); skipped without a server."""
    from tests.postgres import pg_server

    with pg_server.fresh_schema(pg_server.shared_url()) as url:
        yield url


@pytest.fixture
def reopen(store_url: str) -> Iterator[Callable[[], Store]]:
    """Open another independent connection to the same database (as another process would)."""
    opened: list[Store] = []

    def open_again() -> Store:
        store = open_store(store_url)
        opened.append(store)
        return store

    yield open_again
    for store in opened:
        store.close()


@pytest.fixture
def store(reopen: Callable[[], Store]) -> Store:
    return reopen()


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    """A database file for the SQLite-only tests (faults, processes, the CLI)."""
    return tmp_path / "nia.db"


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sqlite_path: Path) -> dict[str, str]:
    """Environment for CLI runs: a private database and config folder."""
    env = {
        "NIA_DB": str(sqlite_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "NIA_TIMEZONE": "UTC",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("NIA_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("NIA_LOAD_PLUGINS", raising=False)
    return env
