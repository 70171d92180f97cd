"""Fixtures: the fake provider API, and an environment without real provider settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.providers.fakeserver import FakeProviderServer
from tests.providers.rawserver import RawServer

PROVIDER_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")


@pytest.fixture(autouse=True)
def no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    fake = FakeProviderServer().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def raw() -> Iterator[RawServer]:
    """A server that answers with whatever raw bytes a test scripts (lying lengths, endless lines)."""
    server = RawServer().start()
    try:
        yield server
    finally:
        server.stop()
