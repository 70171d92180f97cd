"""The providers and models a session can use at one Location, with what nia knows of each (``nia models``).

What nia knows of a model is written as name patterns in two tables per
provider: its capabilities (the role the baseline takes, and whether a
mid-conversation system message has a native role or is wrapped) and its
price. A project's ``[providers.NAME]`` tables come first in both, as they do
for sessions. The catalog lists every pattern of either table once, with what
both say of it; a model matching no pattern still works (baseline ``system``,
updates wrapped, no price).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nia_core.errors import NiaError
from nia_core.http import redact_url
from nia_core.providers import builtin
from nia_core.providers.lookup import ProviderLookup
from nia_core.providers.lowering import WRAPPED, ModelCapabilities
from nia_core.providers.pricing import Price, PriceTable, prices_at
from nia_core.providers.remote import RemoteProvider

if TYPE_CHECKING:
    from nia_core.context import Location


@dataclass(frozen=True)
class ModelEntry:
    """One model name pattern of a provider."""

    pattern: str
    capabilities: ModelCapabilities | None
    """``None`` where the provider has no capability table (a plugin's provider, ``echo``)."""
    price: Price | None

    def to_json(self) -> dict[str, Any]:
        caps = self.capabilities
        return {
            "model": self.pattern,
            "baseline_role": caps.baseline_role if caps else None,
            "update_role": caps.update_role if caps else None,
            "native_updates": caps.native_updates if caps else None,
            "price": _price_json(self.price),
        }


@dataclass(frozen=True)
class ProviderEntry:
    """One provider a session at the Location can name in ``PROVIDER/MODEL``."""

    name: str
    origin: str
    """``built-in``, or ``plugin NAME``."""
    models: tuple[ModelEntry, ...]
    url: str | None = None
    """The endpoint, without credentials (HTTP providers)."""
    key_env: str | None = None
    """The variable the API key comes from (HTTP providers)."""
    key_set: bool | None = None
    problem: str | None = None
    """Why the provider cannot be used here (a bad setting), when it cannot."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "origin": self.origin,
            "url": self.url,
            "key": None if self.key_env is None else {"env": self.key_env, "set": bool(self.key_set)},
            "problem": self.problem,
            "models": [model.to_json() for model in self.models],
        }


def _price_json(price: Price | None) -> dict[str, Any] | None:
    if price is None:
        return None
    fields = ("input", "cache_read", "cache_write", "output")
    return {**{name: getattr(price, name) for name in fields}, "unit": "USD per million tokens", "source": price.source}


def catalog(location: Location, lookup: ProviderLookup) -> list[ProviderEntry]:
    """Every provider ``lookup`` knows at ``location``, with each model pattern nia has capabilities or a price for."""
    try:
        prices: PriceTable = prices_at(location.nia_dir / "project.toml")
    except NiaError:  # a bad [providers.*.prices] table: sessions report it; the built-in prices still hold
        prices = PriceTable()
    entries = []
    for name in lookup.names():
        origin = "built-in" if name in builtin.BUILTIN else f"plugin {lookup.owners.get(name, '?')}"
        try:
            provider = lookup(f"{name}/x")
        except NiaError as exc:
            entries.append(ProviderEntry(name, origin, _models(name, (), prices, None), problem=str(exc)))
            continue
        if isinstance(provider, RemoteProvider):
            settings = provider.settings
            patterns = [pattern for pattern, _ in provider.models.entries]
            entries.append(
                ProviderEntry(
                    name,
                    origin,
                    _models(name, patterns, prices, provider),
                    url=redact_url(settings.base_url),
                    key_env=settings.api_key_env,
                    key_set=settings.api_key is not None,
                )
            )
        else:
            entries.append(ProviderEntry(name, origin, _models(name, (), prices, None)))
    return entries


def _models(
    name: str, capability_patterns: Iterable[str], prices: PriceTable, provider: RemoteProvider | None
) -> tuple[ModelEntry, ...]:
    """Each pattern of the provider's capability and price tables once, in table order (config first)."""
    patterns = list(dict.fromkeys([*capability_patterns, *(p for owner, p, _ in prices.entries if owner == name)]))
    return tuple(
        ModelEntry(
            pattern,
            provider.capabilities(pattern) if provider is not None else None,
            prices.lookup(f"{name}/{pattern}"),
        )
        for pattern in patterns
    )


def describe_updates(capabilities: ModelCapabilities | None) -> str:
    """How a mid-conversation system message reaches the model, in words."""
    if capabilities is None:
        return "the provider's own"
    if capabilities.update_role == WRAPPED:
        return "wrapped in a user turn"
    return f"native {capabilities.update_role} turn"


__all__ = ["ModelEntry", "ProviderEntry", "catalog", "describe_updates"]
