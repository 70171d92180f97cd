"""Token usage and cache hits of a session, and what they cost: the numbers nia exists to improve.

One code path for every report: the usage line after ``nia session send``,
the per-reply lines of ``nia session show``, ``nia session stats`` and
``bench/bench_cache.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from nia_core.model import Usage
from nia_core.providers.pricing import Price, PriceTable
from nia_core.sessions.replies import ReplyRecord
from nia_core.sessions.store import HistoryEntry

PER = 1_000_000


def usage_line(usage: Usage) -> str:
    """``12,345 in · 11,900 cached (96%) · 310 written · 210 out``."""
    share = f" ({usage.cached_input_tokens / usage.input_tokens:.0%})" if usage.input_tokens else ""
    return (
        f"{usage.input_tokens:,} in · {usage.cached_input_tokens:,} cached{share} · "
        f"{usage.cache_write_tokens:,} written · {usage.output_tokens:,} out"
    )


def reported(usage: Usage | None) -> bool:
    """Whether the provider reported any usage at all (``None``: none; all zeros is shown as none too)."""
    return usage is not None and any(
        (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.cache_write_tokens)
    )


def usage_json(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "output_tokens": usage.output_tokens,
    }


def cost(usage: Usage, price: Price) -> float:
    """USD for one reply as billed: uncached input, cache reads, cache writes and output apart."""
    uncached = max(0, usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens)
    return (
        uncached * price.input
        + usage.cached_input_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
        + usage.output_tokens * price.output
    ) / PER


def cost_without_cache(usage: Usage, price: Price) -> float:
    """USD for the same reply had no input been read from (or written to) a cache."""
    return (usage.input_tokens * price.input + usage.output_tokens * price.output) / PER


@dataclass
class Totals:
    """Sums over replies; ``add`` one reply at a time."""

    turns: int = 0
    """Replies counted (with or without usage)."""
    with_usage: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    cost_without_cache: float = 0.0
    priced: int = 0
    unpriced_models: list[str] = field(default_factory=list)
    prices: dict[str, Price] = field(default_factory=dict)

    def add(self, model: str | None, usage: Usage | None, table: PriceTable) -> None:
        """One reply; ``usage`` ``None`` (the provider reported none, or the row predates usage) is unpriced."""
        self.turns += 1
        if usage is None or model is None:
            return
        self.with_usage += 1
        self.usage = Usage(
            self.usage.input_tokens + usage.input_tokens,
            self.usage.output_tokens + usage.output_tokens,
            self.usage.cached_input_tokens + usage.cached_input_tokens,
            self.usage.cache_write_tokens + usage.cache_write_tokens,
        )
        price = table.lookup(model)
        if price is None:
            if model not in self.unpriced_models:
                self.unpriced_models.append(model)
            return
        self.prices[model] = price
        self.priced += 1
        self.cost += cost(usage, price)
        self.cost_without_cache += cost_without_cache(usage, price)

    @property
    def cache_read_share(self) -> float | None:
        return self.usage.cached_input_tokens / self.usage.input_tokens if self.usage.input_tokens else None


def session_totals(history: Iterable[HistoryEntry], table: PriceTable) -> Totals:
    """Totals over every assistant reply of a durable history (rows before schema 2 count as turns without usage)."""
    totals = Totals()
    for entry in history:
        if entry.message.kind != "assistant":
            continue
        record: ReplyRecord | None = entry.reply
        totals.add(record.model if record else None, record.usage if record else None, table)
    return totals


def totals_json(totals: Totals) -> dict[str, Any]:
    return {
        "turns": totals.turns,
        "turns_with_usage": totals.with_usage,
        "turns_without_usage": totals.turns - totals.with_usage,
        **usage_json(totals.usage),
        "cache_read_share": totals.cache_read_share,
        "cost": {
            "currency": "USD",
            "estimated": round(totals.cost, 6) if totals.priced else None,
            "without_cache_hits": round(totals.cost_without_cache, 6) if totals.priced else None,
            "priced_turns": totals.priced,
            "unpriced_models": list(totals.unpriced_models),
            "prices": {
                model: {
                    "input": p.input,
                    "cache_read": p.cache_read,
                    "cache_write": p.cache_write,
                    "output": p.output,
                    "source": p.source,
                }
                for model, p in totals.prices.items()
            },
        },
    }


def totals_text(totals: Totals) -> list[str]:
    """The human report of ``nia session stats``, line by line."""
    without = totals.turns - totals.with_usage
    lines = [
        f"turns: {totals.turns}"
        + (f" ({without} without usage, left out of tokens and cost: the provider reported none)" if without else "")
    ]
    lines.append("tokens: " + usage_line(totals.usage))
    share = totals.cache_read_share
    lines.append("cache-read share: " + (f"{share:.1%} of input tokens" if share is not None else "no input yet"))
    if totals.priced:
        saved = totals.cost_without_cache - totals.cost
        ratio = f", {saved / totals.cost_without_cache:.0%} saved" if totals.cost_without_cache else ""
        lines.append(
            f"estimated cost: ${totals.cost:,.4f}  (with no cache hits: ${totals.cost_without_cache:,.4f}{ratio})"
        )
        for model, price in totals.prices.items():
            lines.append(
                f"  {model}: ${price.input:g} in, ${price.cache_read:g} cache read, ${price.cache_write:g} cache write,"
                f" ${price.output:g} out per million tokens ({price.source})"
            )
    if totals.unpriced_models:
        lines.append(
            f"no price for {', '.join(totals.unpriced_models)} ({totals.with_usage - totals.priced} turns left out"
            ' of the cost); add [providers.NAME.prices."MODEL"] to .nia/project.toml'
        )
    return lines
