"""BBSE's assumption check (issue 9 item 9). SYNTHETIC data."""
from __future__ import annotations

import numpy as np
import pandas as pd

from detectors import LabelShiftEstimator
from detectors.assumptions import label_shift_unexplained


def task(rng, n, prior1, within_shift=0.0):
    """x | y ~ N(2y + within_shift, 1): ``within_shift`` moves the inputs of every class (covariate shift)."""
    y = (rng.random(n) < prior1).astype(int)
    x = rng.normal(2 * y + within_shift, 1)
    p = 1 / (1 + np.exp(-(2 * x - 2)))
    return pd.DataFrame({"x": x}), y, (p >= 0.5).astype(int)


def check(seed, prior_p, within):
    rng = np.random.default_rng(seed)
    fb, yb, pb = task(rng, 3000, 0.3)
    fp, _, pp = task(rng, 3000, prior_p, within)
    r = LabelShiftEstimator(random_state=0).fit(yb, pb).estimate(pp)
    return label_shift_unexplained(fb, yb, fp, r.weights, ["x"])


def test_pure_label_shift_is_explained():
    assert sum(bool(check(seed, 0.6, 0.0)) for seed in range(10)) <= 1


def test_covariate_shift_within_classes_makes_bbse_unreliable():
    flagged = [check(100 + seed, 0.3, 0.8) for seed in range(10)]
    assert sum(bool(f) for f in flagged) >= 9
    assert flagged[0][0].name == "x" and flagged[0][0].statistic > flagged[0][0].threshold
