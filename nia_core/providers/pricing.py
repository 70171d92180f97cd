"""What tokens cost, per model: a built-in table with the date it was taken, overridable in config.

Prices are USD per million tokens, for each kind of input the providers bill
apart: uncached input, input read from the prompt cache, input written to the
cache, and output. They are estimates for ``nia session stats`` and the cache
benchmark, not a bill: providers change prices, and batch, priority, long-context
and regional rates are not modelled. A project corrects or extends them::

    [providers.anthropic-messages.prices."claude-sonnet-4-5*"]
    input = 3.0
    cache_read = 0.30
    cache_write = 3.75     # 5-minute cache writes
    output = 15.0
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nia_core.providers.lowering import ProviderConfigError
from nia_core.providers.settings import providers_table

PRICES_TAKEN = "2025-11-01"
"""When the built-in prices were read from the providers' public pricing pages."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    cache_read: float
    cache_write: float
    output: float
    source: str = f"built-in prices of {PRICES_TAKEN}"


def _anthropic(input_price: float, output: float) -> Price:
    """Anthropic's documented multipliers: cache reads 0.1x, 5-minute cache writes 1.25x of base input."""
    return Price(input_price, round(input_price * 0.1, 6), round(input_price * 1.25, 6), output)


def _openai(input_price: float, cached: float, output: float) -> Price:
    """OpenAI bills no extra for writing its cache: a write costs what uncached input costs."""
    return Price(input_price, cached, input_price, output)


BUILTIN: tuple[tuple[str, str, Price], ...] = (
    ("anthropic-messages", "claude-opus-4-5*", _anthropic(5.0, 25.0)),
    ("anthropic-messages", "claude-opus-4-6*", _anthropic(5.0, 25.0)),
    ("anthropic-messages", "claude-opus-4-1*", _anthropic(15.0, 75.0)),
    ("anthropic-messages", "claude-opus-4-0*", _anthropic(15.0, 75.0)),
    ("anthropic-messages", "claude-opus-4-2025*", _anthropic(15.0, 75.0)),
    ("anthropic-messages", "claude-sonnet-4-5*", _anthropic(3.0, 15.0)),
    ("anthropic-messages", "claude-sonnet-4-0*", _anthropic(3.0, 15.0)),
    ("anthropic-messages", "claude-sonnet-4-2025*", _anthropic(3.0, 15.0)),
    ("anthropic-messages", "claude-3-7-sonnet*", _anthropic(3.0, 15.0)),
    ("anthropic-messages", "claude-haiku-4-5*", _anthropic(1.0, 5.0)),
    ("anthropic-messages", "claude-3-5-haiku*", _anthropic(0.8, 4.0)),
    ("openai-chat", "gpt-5-nano*", _openai(0.05, 0.005, 0.40)),
    ("openai-chat", "gpt-5-mini*", _openai(0.25, 0.025, 2.0)),
    ("openai-chat", "gpt-5*", _openai(1.25, 0.125, 10.0)),
    ("openai-chat", "gpt-4.1-nano*", _openai(0.10, 0.025, 0.40)),
    ("openai-chat", "gpt-4.1-mini*", _openai(0.40, 0.10, 1.60)),
    ("openai-chat", "gpt-4.1*", _openai(2.0, 0.50, 8.0)),
    ("openai-chat", "gpt-4o-mini*", _openai(0.15, 0.075, 0.60)),
    ("openai-chat", "gpt-4o*", _openai(2.50, 1.25, 10.0)),
    ("openai-chat", "o4-mini*", _openai(1.10, 0.275, 4.40)),
    ("openai-chat", "o3*", _openai(2.0, 0.50, 8.0)),
    ("echo", "*", Price(0.0, 0.0, 0.0, 0.0, "echo: free")),
)
"""``(provider, model pattern, price)``; the first match wins."""

FIELDS = ("input", "cache_read", "cache_write", "output")


class PriceTable:
    def __init__(self, entries: Iterable[tuple[str, str, Price]] = BUILTIN) -> None:
        self.entries = tuple(entries)

    def lookup(self, model: str) -> Price | None:
        """The price of ``PROVIDER/MODEL``, or ``None`` when no entry matches."""
        provider, _, name = model.partition("/")
        for owner, pattern, price in self.entries:
            if owner == provider and fnmatch.fnmatchcase(name, pattern):
                return price
        return None

    def extended(self, entries: Iterable[tuple[str, str, Price]]) -> PriceTable:
        """A table where ``entries`` come before this one's."""
        return PriceTable((*entries, *self.entries))


def parse_prices(provider: str, table: Any, where: str) -> list[tuple[str, str, Price]]:
    """``[providers.NAME.prices."PATTERN"]`` tables as entries; errors name the key."""
    if table is None:
        return []
    prefix = f"{where}: providers.{provider}.prices"
    if not isinstance(table, Mapping):
        raise ProviderConfigError(f"{prefix} must be a table of model patterns")
    entries = []
    for pattern, spec in table.items():
        key = f'{prefix}."{pattern}"'
        if not isinstance(spec, Mapping):
            raise ProviderConfigError(f"{key} must be a table with {', '.join(FIELDS)}")
        unknown = sorted(set(spec) - set(FIELDS))
        if unknown:
            raise ProviderConfigError(f"{key}: unknown key {unknown[0]!r} (expected {', '.join(FIELDS)})")
        values: dict[str, float] = {}
        for name in FIELDS:
            if name not in spec:
                raise ProviderConfigError(f"{key}.{name} is missing (USD per million tokens)")
            value = spec[name]
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ProviderConfigError(f"{key}.{name} must be a number >= 0 (USD per million tokens), got {value!r}")
            values[name] = float(value)
        entries.append((provider, str(pattern), Price(**values, source=f"{where} ({key.split(': ', 1)[1]})")))
    return entries


def price_table(providers: Mapping[str, Mapping[str, Any]], where: str) -> PriceTable:
    """The built-in table, with every ``[providers.NAME.prices]`` of the project in front."""
    entries: list[tuple[str, str, Price]] = []
    for provider, table in providers.items():
        entries += parse_prices(provider, table.get("prices"), where)
    return PriceTable().extended(entries)


def prices_at(project_toml: Path) -> PriceTable:
    """The price table for sessions whose project config is ``project_toml`` (it may not exist)."""
    return price_table(providers_table(project_toml), str(project_toml))
