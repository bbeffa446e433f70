"""False-alarm rates under no shift, at n = 100 and n >= 100,000 a side.

Each test runs enough repetitions to tell alpha = 0.05 from 2 alpha = 0.10: with R runs the
rate must stay below ``alpha + 2.33 sqrt(alpha (1 - alpha) / R)``; R = 600 puts that bound at
0.071, which a true rate of 0.10 exceeds with probability ~0.99. SYNTHETIC data throughout;
the large-n runs are vectorised or use sufficient statistics so the whole file stays fast.
"""
from __future__ import annotations

import numpy as np
import pytest

ALPHA = 0.05


def bound(runs: int) -> float:
    return ALPHA + 2.33 * np.sqrt(ALPHA * (1 - ALPHA) / runs)


@pytest.mark.parametrize("n_b, n_p", [(100, 100), (1000, 30_000), (100_000, 100_000)])
def test_untested_range_exceedance_test(n_b, n_p):
    """Item 4. K, the number of current values above the benchmark maximum, is drawn exactly and
    independently of the formula under test: for i.i.d. uniforms the benchmark maximum is
    ``U ** (1 / n_b)`` and each current value exceeds it with probability ``1 - max``."""
    from detectors.context import exceedance_pvalue

    rng = np.random.default_rng(n_b)
    runs = 2000
    top = rng.random(runs) ** (1 / n_b)
    k = rng.binomial(n_p, 1 - top)
    p = np.array([exceedance_pvalue(n_b, n_p, kk) for kk in k])
    assert np.mean(p < ALPHA) <= bound(runs)
    assert np.mean(k) == pytest.approx(n_p / (n_b + 1), rel=0.15)  # about n_p / (n_b + 1) by chance


@pytest.mark.slow
@pytest.mark.parametrize("n", [100, 100_000])
def test_within_context_stratified_test(n):
    from detectors.within_context import make_strata, within_context_change

    rng = np.random.default_rng(n + 1)
    runs = 600 if n == 100 else 150
    rate = np.array([0.9, 0.75, 0.6])
    alarms = 0
    for _ in range(runs):
        cb, cp = rng.integers(0, 3, n), rng.choice(3, n, p=[0.2, 0.3, 0.5])  # the mix moves: no alarm
        yb, yp = np.zeros(n, int), np.zeros(n, int)
        pb = np.where(rng.random(n) < rate[cb], 0, 1)
        pp = np.where(rng.random(n) < rate[cp], 0, 1)
        _, test = within_context_change(yb, pb, yp, pp, make_strata(cb, cp), effect_floor=0.0)
        alarms += test.p_value < ALPHA
    # at n = 100,000 fewer runs (each is a full test): 150 runs still put 2 alpha above the bound
    assert alarms / runs <= (bound(runs) if n == 100 else ALPHA + 2.33 * np.sqrt(ALPHA * (1 - ALPHA) / runs))


@pytest.mark.slow
@pytest.mark.parametrize("n", [100, 100_000])
def test_tied_ks_permutation(n):
    from detectors.univariate import ks_tied_test

    rng = np.random.default_rng(n + 2)
    runs = 600 if n == 100 else 150
    alarms = 0
    for i in range(runs):
        a, b = np.sort(rng.poisson(4, n).astype(float)), np.sort(rng.poisson(4, n).astype(float))
        alarms += ks_tied_test(a, b, n_permutations=200, random_state=i)[1] < ALPHA
    assert alarms / runs <= bound(runs)


@pytest.mark.slow
@pytest.mark.parametrize("n", [100, 100_000])
def test_label_prior_decision(n):
    """Items 10-11: the relative floor must not turn sampling noise into label shift."""
    from detectors import LabelShiftEstimator

    rng = np.random.default_rng(n + 3)
    conf = np.array([[0.9, 0.1], [0.2, 0.8]])
    prior = [0.95, 0.05]  # a rare class: where the ratio floor acts
    runs = 200 if n == 100 else 100
    alarms = 0
    for i in range(runs):
        y_b = (rng.random(n) < prior[1]).astype(int)
        yh_b = np.where(rng.random(n) < conf[y_b, y_b], y_b, 1 - y_b)
        y_p = (rng.random(n) < prior[1]).astype(int)
        yh_p = np.where(rng.random(n) < conf[y_p, y_p], y_p, 1 - y_p)
        r = LabelShiftEstimator(n_bootstrap=20, random_state=i).fit(y_b, yh_b).estimate(yh_p)
        alarms += r.is_shift
    assert alarms / runs <= ALPHA + 2.33 * np.sqrt(ALPHA * (1 - ALPHA) / runs)
