"""Performance attribution (mix vs within-context) and the context-conditional shift test."""
import doctest
import json

import numpy as np
import pandas as pd
import pytest

from detectors import (
    ConditionalShiftDetector,
    DetectorInputError,
    attribute_performance,
    attribution as attribution_module,
    conditional as conditional_module,
    context_cells,
)
from domains import expressions


def test_doctests():
    assert doctest.testmod(attribution_module).failed == 0
    outcome = doctest.testmod(conditional_module)
    assert outcome.attempted > 0 and outcome.failed == 0


def _cells(rng, n, shares):
    return rng.choice(len(shares), n, p=shares)


def test_pure_mix_shift():
    rng = np.random.default_rng(0)
    acc = np.array([0.9, 0.6])
    cb, cp = _cells(rng, 5000, [0.9, 0.1]), _cells(rng, 5000, [0.6, 0.4])
    vb, vp = (rng.random(5000) < acc[cb]).astype(float), (rng.random(5000) < acc[cp]).astype(float)
    att = attribute_performance(cb, vb, cp, vp, labels=["easy", "hard"])
    assert att.mix_effect == pytest.approx((0.4 - 0.1) * (0.6 - 0.9), abs=0.015)
    assert att.mix_ci[0] < att.mix_effect < att.mix_ci[1] < 0
    assert att.within_ci[0] < 0 < att.within_ci[1]
    assert att.total_change == pytest.approx(att.mix_effect + att.within_effect)
    assert sum(c.mix_contribution for c in att.cells) == pytest.approx(att.mix_effect)
    assert att.cells[0].cell == "hard" and att.uncovered_share == 0
    json.dumps(att.to_dict())


def test_pure_within_degradation_and_unlabelled_production():
    rng = np.random.default_rng(1)
    cb, cp = _cells(rng, 4000, [0.5, 0.5]), _cells(rng, 4000, [0.5, 0.5])
    vb = (rng.random(4000) < 0.9).astype(float)
    vp = (rng.random(4000) < np.where(cp == 1, 0.7, 0.9)).astype(float)
    att = attribute_performance(cb, vb, cp, vp)
    assert att.mix_ci[0] < 0 < att.mix_ci[1]
    assert att.within_effect == pytest.approx(-0.1, abs=0.02) and att.within_ci[1] < 0
    unlabelled = attribute_performance(cb, vb, cp)
    assert unlabelled.observed_production_value is None and unlabelled.within_effect is None
    assert unlabelled.expected_production_value == pytest.approx(att.expected_production_value)


def test_uncovered_cells_use_shrunk_benchmark_metric():
    cb = np.array([0] * 100 + [1] * 5)
    vb = np.array([1.0] * 80 + [0.0] * 20 + [0.0] * 5)
    cp = np.array([0] * 50 + [1] * 30 + [2] * 20)
    att = attribute_performance(cb, vb, cp, min_cell_size=30)
    assert att.uncovered_share == pytest.approx(0.5)
    pooled = 80 / 105
    shrunk = (0 + 30 * pooled) / (5 + 30)
    assert att.expected_production_value == pytest.approx(0.5 * 0.8 + 0.3 * shrunk + 0.2 * pooled)


def test_input_errors():
    with pytest.raises(DetectorInputError):
        attribute_performance([0, 1], [1.0], [0], [1.0])
    with pytest.raises(DetectorInputError, match=r"\[0, 1\]"):
        attribute_performance([0, 1], [1.0, 2.0], [0], None)


@pytest.mark.slow
def test_expected_production_ci_coverage():
    rng = np.random.default_rng(2)
    acc, wb, wp = np.array([0.95, 0.8, 0.6]), [0.7, 0.2, 0.1], [0.4, 0.3, 0.3]
    truth = float(np.dot(wp, acc))
    runs, covered = 200, 0
    for r in range(runs):
        cb, cp = _cells(rng, 1500, wb), _cells(rng, 1500, wp)
        vb = (rng.random(1500) < acc[cb]).astype(float)
        att = attribute_performance(cb, vb, cp, n_bootstrap=400, random_state=r)
        covered += att.expected_ci[0] <= truth <= att.expected_ci[1]
    assert covered / runs >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / runs)


def test_context_cells_labels_are_expressions():
    rng = np.random.default_rng(3)
    bench = pd.DataFrame({"site": rng.choice(["a", "b"], 300), "age": rng.normal(50, 10, 300)})
    prod = pd.DataFrame({"site": rng.choice(["a", "b", "c"], 200), "age": rng.normal(55, 10, 200)})
    prod.loc[0, "age"] = np.nan
    cb, cp, labels = context_cells(bench, prod, ["site", "age"], n_bins=3)
    for frame, cells in ((bench, cb), (prod, cp)):
        for i, label in enumerate(labels):
            mask = expressions.evaluate(label, frame).to_numpy()
            assert np.array_equal(mask, cells == i), label
    assert 'site == "c"' in " ".join(labels) and any("age is missing" in lab for lab in labels)


def _mix_shift_data(rng, n, within_shift=0.0):
    cb, cp = rng.integers(0, 3, n), rng.choice(3, n, p=[0.1, 0.3, 0.6])
    xb = rng.normal(cb * 1.0, 1)
    xp = rng.normal(cp * 1.0 + within_shift * (cp == 2), 1)
    kb, kp = np.where(cb == 2, "x", "y"), np.where(cp == 2, "x", "y")
    kp = np.where((cp == 2) & (rng.random(n) < within_shift), "y", kp)
    return pd.DataFrame({"x": xb, "k": kb}), pd.DataFrame({"x": xp, "k": kp}), cb, cp


def test_conditional_test_separates_mix_from_within_shift():
    rng = np.random.default_rng(4)
    bench, prod, cb, cp = _mix_shift_data(rng, 1500)
    res = ConditionalShiftDetector(n_permutations=200).fit(bench, cb).test(prod, cp)
    assert not res.is_shift
    for t in res.tests:
        assert t.kind == "context_conditional" and t.details["unweighted_statistic"] > 2 * t.statistic
        assert t.details["explained_by_mix"] > 0.5
    bench, prod, cb, cp = _mix_shift_data(rng, 1500, within_shift=0.5)
    res = ConditionalShiftDetector(n_permutations=200).fit(bench, cb).test(prod, cp)
    assert res.is_shift and all(t.drifted for t in res.tests)
    assert {t.effect_name for t in res.tests} == {"weighted_ks", "weighted_tvd"}


def test_conditional_test_leaves_out_uncovered_production_cells():
    rng = np.random.default_rng(5)
    bench, prod, cb, cp = _mix_shift_data(rng, 600)
    cp = np.where(rng.random(600) < 0.1, 7, cp)
    res = ConditionalShiftDetector(n_permutations=50).fit(bench, cb).test(prod, cp)
    assert res.uncovered_share == pytest.approx(0.1, abs=0.04)


@pytest.mark.slow
def test_conditional_test_is_calibrated():
    rng = np.random.default_rng(6)
    runs, rejections = 150, 0
    for r in range(runs):
        bench, prod, cb, cp = _mix_shift_data(rng, int(rng.integers(100, 500)))
        res = ConditionalShiftDetector(n_permutations=99, random_state=r).fit(bench[["x"]], cb).test(prod[["x"]], cp)
        rejections += res.tests[0].p_value <= 0.05
    assert rejections / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)


def test_conditional_subsampling_and_determinism():
    rng = np.random.default_rng(7)
    bench, prod, cb, cp = _mix_shift_data(rng, 3000)
    a = ConditionalShiftDetector(n_permutations=50, max_rows=800, random_state=3).fit(bench, cb).test(prod, cp)
    b = ConditionalShiftDetector(n_permutations=50, max_rows=800, random_state=3).fit(bench, cb).test(prod, cp)
    assert a.to_dict() == b.to_dict() and a.tests[0].n_reference == 800
    p = a.tests[0].p_value
    assert p >= 1 / 51 and (p * 51) == pytest.approx(round(p * 51))  # (1 + #) / (1 + B)


def test_mix_effect_is_unbiased_when_nothing_changed():
    """With production identical to the benchmark the mix effect was +0.012, CI excluding 0."""
    from detectors.attribution import attribute_performance

    effects, covered = [], []
    rates = np.array([0.9, 0.8, 0.5, 0.3, 0.2])  # small cells are much worse than the pooled rate
    shares = np.array([0.6, 0.3, 0.04, 0.03, 0.03])
    for seed in range(30):
        rng = np.random.default_rng(900 + seed)
        cb, cp = rng.choice(5, 800, p=shares), rng.choice(5, 800, p=shares)
        vb, vp = rng.random(800) < rates[cb], rng.random(800) < rates[cp]
        r = attribute_performance(cb, vb.astype(float), cp, vp.astype(float), min_cell_size=30, n_bootstrap=300,
                                  random_state=seed)
        effects.append(r.mix_effect)
        covered.append(r.mix_ci[0] <= 0 <= r.mix_ci[1])
    assert abs(np.mean(effects)) < 0.004
    assert np.mean(covered) >= 0.85
