"""Resolving a provider's host name counts against the call's deadline.

``getaddrinfo`` blocks in the C library, where no socket timeout reaches: an
unreachable DNS server holds it for as long as the resolver retries. Here a
``socket.getaddrinfo`` that blocks until the test ends stands in for it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from nia_core.model import ModelRequest
from nia_core.providers.anthropic_messages import AnthropicMessagesProvider
from nia_core.providers.openai_chat import OpenAIChatProvider
from nia_core.providers.transport import HttpError
from nia_core.sessions.messages import Message

HUNG_HOST = "llm.hung-resolver.test"


@pytest.fixture
def hung_resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """``socket.getaddrinfo`` blocks for every name but the loopback ones until the test ends; yields the names
    asked for."""
    released = threading.Event()
    asked: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("127.0.0.1", "localhost", "::1"):
            return real(host, *args, **kwargs)
        asked.append(str(host))
        released.wait(30)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        yield asked
    finally:
        released.set()


@pytest.mark.parametrize("make", [OpenAIChatProvider, AnthropicMessagesProvider])
@pytest.mark.parametrize("via_proxy", [False, True], ids=["host", "proxy-host"])
def test_a_resolver_that_hangs_ends_at_the_provider_deadline(hung_resolver, monkeypatch, make, via_proxy):
    if via_proxy:
        monkeypatch.setenv("https_proxy", "http://proxy.hung-resolver.test:3128")
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
    config = {"base_url": f"https://{HUNG_HOST}/v1", "api_key": "k", "deadline": 0.5, "timeout": 30}
    provider = make.from_config(config, environ={})
    model = "openai-chat/gpt-4.1" if make is OpenAIChatProvider else "anthropic-messages/claude-sonnet-4-5"
    started = time.monotonic()
    with pytest.raises(HttpError, match=r"did not finish within its 0\.5s deadline"):
        provider.send(ModelRequest("s", model, "Be brief.", (Message("user", "Hi"),)), stream=lambda _t: None)
    assert time.monotonic() - started < 2.5
    assert hung_resolver == ["proxy.hung-resolver.test" if via_proxy else HUNG_HOST], "asked once, never retried"


def test_session_send_ends_at_its_deadline_while_the_name_does_not_resolve(hung_resolver, tmp_path: Path, monkeypatch):
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    (root / ".nia" / "project.toml").write_text(
        f'[providers.openai-chat]\nbase_url = "http://{HUNG_HOST}:8080/v1"\ndeadline = 1\n'
    )
    monkeypatch.setenv("NIA_DB", str(tmp_path / "nia.db"))
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.chdir(root)
    runner = CliRunner()
    session = runner.invoke(cli, ["session", "new", "--model", "openai-chat/gpt-4.1"], catch_exceptions=False)
    assert session.exit_code == 0, session.output
    started = time.monotonic()
    result = runner.invoke(cli, ["session", "send", session.output.strip(), "hello"], catch_exceptions=False)
    assert time.monotonic() - started < 4
    assert result.exit_code == 1
    assert f"openai-chat: the call to http://{HUNG_HOST}:8080/v1/chat/completions did not finish within its 1s" in (
        result.stderr
    )
    assert "Traceback" not in result.output
    shown = runner.invoke(cli, ["session", "show", session.output.strip(), "--json"], catch_exceptions=False)
    assert [m["kind"] for m in json.loads(shown.stdout)["messages"]] == ["user"], "the input is kept"
