"""The built-in providers by name: ``PROVIDER/MODEL`` -> the provider that serves it.

This is the fallback of :class:`nia_core.providers.lookup.ProviderLookup`, the
one way to find a provider: it adds a project's ``[providers]`` config and
plugins' providers. Each built-in is created once per process and reused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from nia_core.errors import UsageError
from nia_core.model import BUILTIN_PROVIDERS, Provider, split_model

ProviderFactory = Callable[[], Provider]

BUILTIN: dict[str, ProviderFactory] = {p.name: p.load() for p in BUILTIN_PROVIDERS}
"""Built-in providers (:data:`~nia_core.model.BUILTIN_PROVIDERS`). The HTTP ones read URL and key
from the environment here; :func:`nia_core.providers.lookup.providers_at` adds a project's ``[providers]``
config."""

_instances: dict[str, Provider] = {}
_lock = threading.Lock()


def provider_names() -> list[str]:
    return sorted(BUILTIN)


def get_provider(model: str) -> Provider:
    """The built-in provider serving ``model`` (``PROVIDER/MODEL``)."""
    name, _ = split_model(model)
    if name not in BUILTIN:
        raise UsageError(
            f"unknown provider {name!r} in model {model!r} (known providers: {', '.join(provider_names())})"
        )
    with _lock:
        provider = _instances.get(name)
        if provider is None:
            provider = _instances[name] = BUILTIN[name]()
        return provider
