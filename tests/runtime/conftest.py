"""The runtime's tests run on every store backend, as the session conformance suite does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nia_core.sessions import Store, open_store


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty store of each backend (PostgreSQL: skipped without a server, see tests/postgres)."""
    if request.param == "sqlite":
        with open_store(f"sqlite:///{tmp_path / 'nia.db'}") as opened:
            yield opened
        return
    from tests.postgres import pg_server

    with pg_server.fresh_schema(pg_server.shared_url()) as url, open_store(url) as opened:
        yield opened
