"""Provider names as people type them; the provider interface itself lives in :mod:`nia_core.model`.

``Provider``, ``ProviderError``, ``StreamCallback``, ``split_model`` and
``DEFAULT_MODEL`` are re-exported for code written against earlier docs;
import them from :mod:`nia_core` (the public API).
"""

from nia_core.model import DEFAULT_MODEL, Provider, ProviderError, StreamCallback, split_model

__all__ = [
    "DEFAULT_MODEL",
    "PROVIDER_ALIASES",
    "Provider",
    "ProviderError",
    "StreamCallback",
    "canonical_model",
    "split_model",
]

PROVIDER_ALIASES = {"openai": "openai-chat", "anthropic": "anthropic-messages"}
"""Short provider names people type; a session stores the full one."""


def canonical_model(model: str) -> str:
    """``anthropic/claude-sonnet-4-5`` -> ``anthropic-messages/claude-sonnet-4-5``; other models unchanged."""
    provider, name = split_model(model)
    return f"{PROVIDER_ALIASES.get(provider, provider)}/{name}"
