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
