"""The delay bound for a slice drop: its pieces agree with each other and with the information inequality."""
from __future__ import annotations

import math

import numpy as np

from benchmarks.harm_bound import kl_bernoulli, lorden_delay, rows_for_power, told_power


def test_the_rows_for_a_power_give_that_power():
    kl = kl_bernoulli(0.66, 0.76)
    for log_a in (6.95, 9.03):
        rows = rows_for_power(log_a, kl, runs=5)
        assert math.isclose(told_power(log_a, 5 * rows, kl), 0.8, abs_tol=1e-9)


def test_kl_is_what_a_labelled_row_tells_on_average():
    """The mean log likelihood ratio of Bernoulli rows after the drop is the divergence (seeded draws)."""
    p0, p1 = 0.76, 0.66
    rows = np.random.default_rng(0).random(200_000) < p1
    llr = np.where(rows, math.log(p1 / p0), math.log((1 - p1) / (1 - p0))).mean()
    assert math.isclose(llr, kl_bernoulli(p1, p0), rel_tol=0.05)
    assert lorden_delay(math.log(1040), 70, kl_bernoulli(p1, p0)) > 3  # never alarms in a run or two
