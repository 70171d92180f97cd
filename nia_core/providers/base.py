"""The provider interface.

A provider turns a :class:`ModelRequest` into its wire format (``lower``, pure
and byte-deterministic) and sends it (``send``). Built-ins and plugins alike
register providers by name; a session's model is ``PROVIDER/MODEL``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from nia_core.errors import NiaError, UsageError
from nia_core.sessions.messages import ModelRequest, Reply

DEFAULT_MODEL = "echo/echo"

StreamCallback = Callable[[str], None]


class ProviderError(NiaError):
    """A provider call failed (network, auth, bad response); the message says which and why."""


@runtime_checkable
class Provider(Protocol):
    name: str

    def lower(self, request: ModelRequest) -> dict[str, Any]:
        """The request body, deterministic for the same request."""
        ...

    def send(self, request: ModelRequest, *, stream: StreamCallback | None = None) -> Reply:
        """Call the model; raise :class:`ProviderError` on failure."""
        ...


PROVIDER_ALIASES = {"openai": "openai-chat", "anthropic": "anthropic-messages"}
"""Short provider names people type; a session stores the full one."""


def canonical_model(model: str) -> str:
    """``anthropic/claude-sonnet-4-5`` -> ``anthropic-messages/claude-sonnet-4-5``; other models unchanged."""
    provider, name = split_model(model)
    return f"{PROVIDER_ALIASES.get(provider, provider)}/{name}"


def split_model(model: str) -> tuple[str, str]:
    """``("anthropic-messages", "claude-sonnet-4-5")`` from ``anthropic-messages/claude-sonnet-4-5``."""
    provider, sep, name = model.partition("/")
    if not sep or not provider or not name:
        raise UsageError(f"model must be PROVIDER/MODEL (for example {DEFAULT_MODEL}), got {model!r}")
    return provider, name
