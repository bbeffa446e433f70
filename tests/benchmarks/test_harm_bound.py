"""The yardsticks for a slice drop: the reference window detector holds its run length and has the power
computed for it; the pieces agree with each other."""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

from benchmarks.harm_bound import (
    kl_bernoulli,
    known_power,
    lorden_delay,
    rows_for_power,
    two_sample_power,
    window_level,
)

P0, P1 = 0.76, 0.66


def _window_alarms(rng, accuracy, *, monitors, runs, rows, window, level):
    """Run index of each SYNTHETIC monitor's first alarm of the window test (``runs`` if none), the
    benchmark known exactly; ``accuracy(run)`` is the slice's accuracy at each run."""
    correct = np.stack([rng.binomial(rows, accuracy(t), size=monitors) for t in range(runs)], axis=1)
    sums = np.cumsum(correct, axis=1)
    windows = sums - np.concatenate([np.zeros((monitors, window)), sums[:, :-window]], axis=1)
    n_rows = rows * np.minimum(np.arange(1, runs + 1), window)
    alarm = binom.cdf(windows, n_rows, P0) <= level  # the exact test of each run's window
    return np.where(alarm.any(axis=1), alarm.argmax(axis=1), runs)


def test_the_window_detector_keeps_its_average_run_length_when_nothing_changes():
    """At a level of 1/(2A) a run the first false alarm comes after about A runs or later."""
    arl, runs = 40, 400
    first = _window_alarms(np.random.default_rng(0), lambda t: P0, monitors=2000, runs=runs, rows=70, window=5,
                           level=window_level(arl))
    assert first.mean() >= arl  # censored at 400 runs, which only lowers the mean
    assert (first < 20).mean() <= 20 / (2 * arl)  # P(alarm by run t) <= t / (2A)


def test_the_window_detector_finds_the_drop_as_often_as_computed():
    arl, rows, k = 1040, 70, 5
    level, change = window_level(arl), 10
    first = _window_alarms(np.random.default_rng(1), lambda t: P0 if t < change else P1, monitors=4000,
                           runs=change + k, rows=rows, window=k, level=level)
    found = ((first >= change) & (first < change + k)).mean()
    assert found >= known_power(P0, P1, k * rows, level) - 0.02  # earlier windows only add chances
    assert found <= known_power(P0, P1, k * rows, level) + 0.10


def test_the_rows_for_a_power_give_that_power_and_one_fewer_does_not():
    level = window_level(1040)
    n = rows_for_power(P0, P1, 5, level)
    assert known_power(P0, P1, 5 * n, level) >= 0.8 > known_power(P0, P1, 5 * (n - 1), level)


def test_a_sampled_benchmark_costs_power_and_a_huge_one_costs_almost_none():
    level, rows = window_level(1040), 350
    small, large, huge = (two_sample_power(P0, P1, rows, m, level) for m in (250, 1000, 10**9))
    assert small < large < huge
    assert math.isclose(huge, known_power(P0, P1, rows, level), abs_tol=0.06)  # normal vs exact binomial


def test_kl_is_what_a_labelled_row_tells_on_average():
    """The mean log likelihood ratio of Bernoulli rows after the drop is the divergence (seeded draws)."""
    rows = np.random.default_rng(0).random(200_000) < P1
    llr = np.where(rows, math.log(P1 / P0), math.log((1 - P1) / (1 - P0))).mean()
    assert math.isclose(llr, kl_bernoulli(P1, P0), rel_tol=0.05)
    assert lorden_delay(math.log(1040), 70, kl_bernoulli(P1, P0)) > 3  # never alarms in a run or two
