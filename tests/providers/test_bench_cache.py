"""The cache benchmark runs, and on a short script nia still keeps what the lower bound keeps."""

from __future__ import annotations

from bench.bench_cache import TARGET, run, table


def test_a_short_run_admits_every_change_once_and_meets_the_target():
    tallies, info = run(40)
    lower, nia, naive = tallies
    assert info["updates"] == 20
    assert info["epochs"] == 1
    assert len(info["changes"]) == 20
    assert lower.requests == nia.requests == naive.requests == info["requests"]
    assert nia.byte_fraction / lower.byte_fraction >= TARGET
    assert nia.served_fraction / lower.served_fraction >= TARGET
    assert naive.served_fraction < nia.served_fraction
    assert naive.cost > nia.cost > lower.cost
    assert "PASS" in table(tallies, info)


def test_the_dollar_figures_are_what_session_stats_would_report():
    tallies, _info = run(20)
    for tally in tallies:
        totals = tally.anthropic_totals
        assert totals.turns == tally.requests and totals.priced == tally.requests
        assert totals.usage.cached_input_tokens == tally.usage.read
        assert totals.cost < totals.cost_without_cache
    lower, nia, naive = tallies
    assert lower.anthropic_totals.cost <= nia.anthropic_totals.cost < naive.anthropic_totals.cost
