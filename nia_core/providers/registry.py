"""Providers by name: ``PROVIDER/MODEL`` -> the provider that serves it.

Built-in providers are listed in :data:`BUILTIN`; anything else (a plugin's
hook, a test) adds a factory with :func:`register_provider`. Factories are
called once per name and the provider object is reused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from nia_core.errors import UsageError
from nia_core.model import Provider, split_model
from nia_core.providers.anthropic_messages import AnthropicMessagesProvider
from nia_core.providers.echo import EchoProvider
from nia_core.providers.openai_chat import OpenAIChatProvider

ProviderFactory = Callable[[], Provider]

BUILTIN: dict[str, ProviderFactory] = {
    "echo": EchoProvider,
    "openai-chat": OpenAIChatProvider,
    "anthropic-messages": AnthropicMessagesProvider,
}
"""Built-in providers. The HTTP ones read URL and key from the environment here;
:func:`nia_core.providers.lookup.providers_at` adds a project's ``[providers]`` config."""

_factories: dict[str, ProviderFactory] = dict(BUILTIN)
_instances: dict[str, Provider] = {}
_lock = threading.Lock()


def register_provider(name: str, factory: ProviderFactory, *, replace: bool = False) -> None:
    """Make ``name`` (the part of a model before ``/``) resolve to ``factory()``."""
    with _lock:
        if name in _factories and not replace:
            raise UsageError(f"provider {name!r} is already registered")
        _factories[name] = factory
        _instances.pop(name, None)


def unregister_provider(name: str) -> None:
    with _lock:
        _factories.pop(name, None)
        _instances.pop(name, None)


def provider_names() -> list[str]:
    with _lock:
        return sorted(_factories)


def check_model(model: str) -> str:
    """``model`` if it is ``PROVIDER/MODEL`` with a known provider; else a :class:`UsageError`."""
    provider, _ = split_model(model)
    with _lock:
        known = provider in _factories
    if not known:
        raise UsageError(
            f"unknown provider {provider!r} in model {model!r} (known providers: {', '.join(provider_names())})"
        )
    return model


def get_provider(model: str) -> Provider:
    """The provider serving ``model`` (``PROVIDER/MODEL``)."""
    check_model(model)
    name, _ = split_model(model)
    with _lock:
        provider = _instances.get(name)
        if provider is None:
            provider = _instances[name] = _factories[name]()
        return provider
