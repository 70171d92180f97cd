"""Provider names as people type them: the aliases of the built-ins (:data:`nia_core.model.BUILTIN_PROVIDERS`).

``Provider``, ``ProviderError``, ``StreamCallback``, ``split_model`` and
``DEFAULT_MODEL`` are re-exported for code written against earlier docs;
import them from :mod:`nia_core` (the public API).
"""

from __future__ import annotations

from nia_core.model import BUILTIN_PROVIDERS, DEFAULT_MODEL, Provider, ProviderError, StreamCallback, split_model

__all__ = [
    "DEFAULT_MODEL",
    "PROVIDER_ALIASES",
    "Provider",
    "ProviderError",
    "StreamCallback",
    "canonical_model",
    "split_model",
]

PROVIDER_ALIASES = {p.alias: p.name for p in BUILTIN_PROVIDERS if p.alias}
"""Short provider names people type; a session stores the full one."""


def canonical_model(model: str) -> str:
    """``anthropic/claude-sonnet-4-5`` -> ``anthropic-messages/claude-sonnet-4-5``; other models unchanged."""
    provider, name = split_model(model)
    return f"{PROVIDER_ALIASES.get(provider, provider)}/{name}"
