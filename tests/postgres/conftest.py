"""Fixtures for the PostgreSQL tests: a fresh schema per test on the shared test server.

The server is ``NIA_TEST_POSTGRES_URL`` or a throwaway cluster (see
``pg_server.py``); without either these tests are skipped with a one-line
reason, and fail instead under ``NIA_REQUIRE_POSTGRES=1`` (CI).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import pg_server


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose tables live in a new, empty schema of the test server."""
    with pg_server.fresh_schema(pg_server.shared_url()) as url:
        yield url


@pytest.fixture
def pg_admin() -> str:
    """The test server's URL, for statements a test runs from outside nia (the public schema)."""
    return pg_server.shared_url()
