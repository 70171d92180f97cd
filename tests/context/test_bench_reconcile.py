"""bench/bench_reconcile.py measures what it says, and no figure it prints is negative."""

from __future__ import annotations

from bench.bench_reconcile import main, run


def test_every_figure_is_a_time_measured_on_its_own_never_a_difference(capsys):
    (row,) = run([20], repeats=5)
    figures = {name: value for name, value in row.items() if name != "sources"}
    assert figures and all(isinstance(v, float) and v >= 0 for v in figures.values()), figures
    assert main(["--counts", "10", "--repeats", "3"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "load average" in header
