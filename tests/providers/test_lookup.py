"""Finding a session's provider: built-ins, project config, and providers added by plugins."""

from __future__ import annotations

from typing import Any

import pytest

from nia_core import hookimpl
from nia_core.errors import UsageError
from nia_core.model import BUILTIN_PROVIDERS
from nia_core.project.paths import shown_path
from nia_core.providers.anthropic_messages import AnthropicMessagesProvider
from nia_core.providers.builtin import get_provider
from nia_core.providers.echo import EchoProvider
from nia_core.providers.lookup import providers_at
from nia_core.providers.lowering import ProviderConfigError
from nia_core.providers.names import StreamCallback, canonical_model
from nia_core.providers.openai_chat import OpenAIChatProvider
from nia_core.sessions.messages import Message, ModelRequest, Reply
from nia_core.testing import make_host
from tests.providers.fakeserver import API_KEY


class ShoutProvider:
    """A plugin's provider: answers the last user message in capitals."""

    def __init__(self, name: str = "shout", suffix: str = "!") -> None:
        self.name = name
        self.suffix = suffix

    def lower(self, request: ModelRequest) -> dict[str, Any]:
        return {"said": [m.text for m in request.messages if m.kind == "user"]}

    def send(self, request: ModelRequest, *, stream: StreamCallback | None = None) -> Reply:
        text = self.lower(request)["said"][-1].upper() + self.suffix
        if stream is not None:
            stream(text)
        return Reply(text=text)


class ShoutPlugin:
    @hookimpl
    def nia_providers(self, config: dict[str, Any]) -> list[Any]:
        return [ShoutProvider(suffix=config.get("suffix", "!"))]


def test_builtins_resolve_by_provider_name():
    assert isinstance(get_provider("echo/echo"), EchoProvider)
    assert isinstance(get_provider("openai-chat/gpt-4.1"), OpenAIChatProvider)
    assert isinstance(get_provider("anthropic-messages/claude-sonnet-4-5"), AnthropicMessagesProvider)


def test_the_built_in_providers_are_the_rows_of_one_table(nia_project):
    """Lookup, aliases and ``[providers.NAME]`` all come from ``BUILTIN_PROVIDERS``: a new built-in is one row."""
    lookup = providers_at(nia_project.location)
    assert lookup.names() == sorted(row.name for row in BUILTIN_PROVIDERS)
    for row in BUILTIN_PROVIDERS:
        provider = get_provider(f"{row.name}/some-model")
        assert isinstance(provider, row.load()) and provider.name == row.name
        if row.alias:
            assert canonical_model(f"{row.alias}/some-model") == f"{row.name}/some-model"
    nia_project.write(".nia/project.toml", "[providers.echo]\ntimeout = 5\n")
    with pytest.raises(ProviderConfigError, match=r"\[providers.echo\]: not a configurable provider"):
        providers_at(nia_project.location)


def test_project_config_configures_the_http_builtins(nia_project, server, monkeypatch):
    monkeypatch.setenv("ACME_KEY", API_KEY)
    nia_project.write(
        ".nia/project.toml",
        f'[providers.anthropic-messages]\nbase_url = "{server.url}"\napi_key_env = "ACME_KEY"\nmax_tokens = 512\n',
    )
    lookup = providers_at(nia_project.location)
    provider = lookup("anthropic-messages/claude-sonnet-4-5")
    reply = provider.send(ModelRequest("s", "anthropic-messages/claude-sonnet-4-5", "rules", (Message("user", "hi"),)))
    assert reply.text == "Hi! My name is Claude."
    assert server.last().body["max_tokens"] == 512


def test_a_plugin_adds_a_provider_with_its_own_config(nia_project):
    nia_project.configure("shoutplugin", suffix="?!")
    lookup = providers_at(nia_project.location, make_host(ShoutPlugin()))
    assert "shout" in lookup.names()
    request = ModelRequest("s", "shout/any", "", (Message("user", "hello"),))
    shown: list[str] = []
    assert lookup.check("shout/any") == "shout/any"
    assert lookup("shout/any").send(request, stream=shown.append).text == "HELLO?!"
    assert shown == ["HELLO?!"]


def test_an_unknown_provider_lists_the_known_ones(nia_project):
    lookup = providers_at(nia_project.location, make_host(ShoutPlugin()))
    with pytest.raises(
        UsageError, match=r"unknown provider 'nope' .*known providers: anthropic-messages, echo, .*shout"
    ):
        lookup.check("nope/model")
    with pytest.raises(UsageError, match="model must be PROVIDER/MODEL"):
        lookup.check("gpt-4.1")


class Broken:
    @hookimpl
    def nia_providers(self) -> list[Any]:
        raise RuntimeError("no GPU here")


class Squatter:
    @hookimpl
    def nia_providers(self) -> list[Any]:
        return [ShoutProvider("openai-chat"), ShoutProvider("Bad Name"), "not a provider"]


def test_misbehaving_plugins_are_reported_by_name_and_left_out(nia_project):
    host = make_host(Broken(), Squatter(), ShoutPlugin(), strict=False)
    lookup = providers_at(nia_project.location, host)
    assert lookup.problems == (
        "plugin 'broken': nia_providers raised RuntimeError: no GPU here",
        "plugin 'squatter': provider name 'Bad Name' must be lowercase letters, digits and '-'",
        "plugin 'squatter': nia_providers returned a str, not a provider (name, lower, send)",
        "plugin 'squatter': provider name 'openai-chat' is taken by a built-in provider",
    )
    assert isinstance(lookup("openai-chat/gpt-4.1"), OpenAIChatProvider)
    assert lookup("shout/x").name == "shout"
    with pytest.raises(UsageError, match="no GPU here"):
        lookup.check("broken/x")


class LoudShout:
    """Another plugin serving "shout", asking to be called first (pluggy's ``tryfirst``)."""

    @hookimpl(tryfirst=True)
    def nia_providers(self) -> list[Any]:
        return [ShoutProvider(suffix="!!!")]


def test_a_provider_name_two_plugins_use_stays_with_the_plugin_loaded_first(nia_project):
    """pluggy calls ``LoudShout`` first; the name still goes by load order, as keys and commands do."""
    host = make_host(ShoutPlugin(), LoudShout(), strict=False)
    lookup = providers_at(nia_project.location, host)
    request = ModelRequest("s", "shout/any", "", (Message("user", "hi"),))
    assert lookup("shout/any").send(request).text == "HI!"
    assert lookup.problems == ("plugin 'loudshout': provider name 'shout' is taken by plugin 'shoutplugin'",)


def test_a_strict_host_turns_a_misbehaving_provider_plugin_into_an_error(nia_project):
    with pytest.raises(ProviderConfigError, match="no GPU here"):
        providers_at(nia_project.location, make_host(Broken(), strict=True))


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[providers.acme]\nbase_url = 'http://x'\n", "[providers.acme]: not a configurable provider"),
        ("[providers.openai-chat]\ntimeout = 'soon'\n", "providers.openai-chat.timeout must be a number, got 'soon'"),
        ("[providers.openai-chat]\nbase_url = 'ftp://x'\n", "providers.openai-chat.base_url must be an http:// or"),
        ("[providers.openai-chat]\nmax_retries = -1\n", "providers.openai-chat.max_retries must be at least 0"),
        ("[providers.anthropic-messages]\nmodle = 'x'\n", "providers.anthropic-messages: unknown key 'modle'"),
        ("providers = 3\n", "[providers] must be a table"),
    ],
)
def test_bad_provider_config_names_the_file_and_key(nia_project, toml, message):
    path = nia_project.write(".nia/project.toml", toml)
    with pytest.raises(ProviderConfigError) as caught:
        lookup = providers_at(nia_project.location)
        lookup.check("openai-chat/gpt-4.1")
        lookup.check("anthropic-messages/claude-sonnet-4-5")
    assert shown_path(path) in str(caught.value)
    assert message in str(caught.value)


def test_a_bad_environment_variable_fails_only_the_provider_that_reads_it(nia_project, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000")
    lookup = providers_at(nia_project.location)
    assert lookup.check("echo/echo") == "echo/echo"
    assert lookup.check("anthropic-messages/claude-sonnet-4-5")
    with pytest.raises(ProviderConfigError, match=r"\$OPENAI_BASE_URL must be an http:// or https:// URL"):
        lookup.check("openai-chat/gpt-4.1")
