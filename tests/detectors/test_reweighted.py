"""Re-tests under reweighting: valid under no change, blind to what the weights explain, and never
narrower than the unweighted test."""
import numpy as np
import pytest

from detectors.reweighted import (
    Retest,
    category_codes,
    effective_size,
    metric_retest,
    mix_retest,
    numeric_retest,
    rake,
    share_retest,
)

ALPHA = 0.05


def _rate(flags) -> float:
    flags = list(flags)
    return sum(flags) / len(flags)


def test_share_mix_and_numeric_retests_hold_their_level_under_no_change():
    """Both sides from one population, benchmark weights drawn at random (as a fitted adjustment's are):
    a re-test flags a difference at most at the nominal rate (plus Monte-Carlo tolerance)."""
    rng = np.random.default_rng(0)
    p_share, p_mix, p_num = [], [], []
    for _ in range(300):
        n_b, n_p = 800, 600
        w = rng.gamma(4.0, 0.25, n_b)
        xb, xp = rng.normal(0, 1, n_b), rng.normal(0, 1, n_p)
        cb, cp = rng.choice(list("abcd"), n_b, p=[.4, .3, .2, .1]), rng.choice(list("abcd"), n_p, p=[.4, .3, .2, .1])
        p_share.append(share_retest(w, xb > 1, xp > 1, floor=0.0).p_value)
        p_mix.append(mix_retest(w, cb, cp, floor=0.0).p_value)
        p_num.append(numeric_retest(w, xb, xp, floor=0.0).p_value)
    for ps in (p_share, p_mix, p_num):
        assert _rate(p < ALPHA for p in ps) <= ALPHA + 0.04


def test_a_rare_benchmark_share_is_not_read_as_exact():
    """Two benchmark rows of a rare value against many production ones: the plug-in variance would call a
    difference this size certain; the score test at the pooled share keeps it uncertain."""
    w = np.ones(60)
    mb = np.zeros(60, bool)
    mb[:2] = True
    mp = np.zeros(460, bool)
    mp[:65] = True
    res = share_retest(w, mb, mp, floor=0.0)
    assert 1e-4 < res.p_value < 0.05  # significant, but not astronomically so


def test_the_exact_density_ratio_explains_a_numeric_shift_and_a_share():
    rng = np.random.default_rng(1)
    xb, xp = rng.normal(0, 1, 4000), rng.normal(0.5, 1, 4000)
    w = np.exp(0.5 * xb - 0.125)
    assert numeric_retest(np.ones(4000), xb, xp, floor=0.1).changed(alpha=ALPHA)
    assert not numeric_retest(w, xb, xp, floor=0.1).changed(alpha=ALPHA)
    assert share_retest(np.ones(4000), xb > 1, xp > 1, floor=0.02).changed(alpha=ALPHA)
    assert not share_retest(w, xb > 1, xp > 1, floor=0.02).changed(alpha=ALPHA)


def test_class_weights_explain_the_metric_change_a_class_mix_brings():
    """Recall differs by class; production has a different class mix only. Accuracy moves; with the
    benchmark weighted to the production class mix it does not (and balanced accuracy never did)."""
    rng = np.random.default_rng(2)

    def draw(n, q):
        y = (rng.random(n) < q).astype(int)
        pred = np.where(rng.random(n) < np.where(y == 1, 0.9, 0.6), y, 1 - y)
        return y, pred

    yb, pb = draw(3000, 0.3)
    yp, pp = draw(3000, 0.6)
    plain = metric_retest("accuracy", np.ones(3000), yb, pb, yp, pp, classes=[0, 1], positive=1, floor=0.05)
    assert plain.changed(alpha=ALPHA, direction=1)
    w = np.where(yb == 1, 0.6 / yb.mean(), 0.4 / (1 - yb.mean()))
    for metric in ("accuracy", "balanced_accuracy", "macro_f1", "sensitivity"):
        assert not metric_retest(metric, w, yb, pb, yp, pp, classes=[0, 1], positive=1, floor=0.05).changed(alpha=ALPHA)


def test_unequal_weights_widen_a_retest_never_narrow_it():
    rng = np.random.default_rng(3)
    xb, xp = rng.normal(0, 1, 2000), rng.normal(0.1, 1, 2000)
    plain = numeric_retest(np.ones(2000), xb, xp, floor=0.0)
    uneven = numeric_retest(rng.gamma(0.5, 2.0, 2000), xb, xp, floor=0.0)
    assert uneven.n_reference < plain.n_reference == 2000
    assert effective_size(np.ones(10)) == pytest.approx(10.0)


def test_rake_matches_every_margin_at_once():
    rng = np.random.default_rng(4)
    a = rng.choice(3, 5000, p=[.5, .3, .2])
    b = (rng.random(5000) < np.where(a == 0, 0.2, 0.6)).astype(int)
    want_a, want_b = np.array([.2, .3, .5]), np.array([.6, .4])
    w = rake(np.ones(5000), [(a, want_a), (b, want_b)])
    assert np.allclose(np.bincount(a, weights=w) / w.sum(), want_a, atol=2e-3)
    assert np.allclose(np.bincount(b, weights=w) / w.sum(), want_b, atol=2e-3)
    assert w.mean() == pytest.approx(1.0)


def test_a_retest_that_cannot_run_is_not_a_change():
    res = share_retest(np.zeros(5), np.ones(5, bool), np.ones(5, bool), floor=0.01)
    assert res.status == "insufficient_data" and not res.changed(alpha=ALPHA)
    assert isinstance(res, Retest)


def test_category_codes_share_one_code_set():
    cb, cp, k = category_codes(np.array(["x", "y"]), np.array(["y", "z"]))
    assert k == 3 and cb.tolist() == [0, 1] and cp.tolist() == [1, 2]
