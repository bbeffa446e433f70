"""SliceEvaluator: slice metrics with CIs in both datasets, change and gap tests, calibration."""
import doctest
import json

import numpy as np
import pytest

from detectors import DetectorInputError, Outcomes, SliceEvaluator, slices as slices_module
from detectors.correction import readjust


def _binary(rng, n, p_correct, positive_rate=0.4):
    y = (rng.random(n) < positive_rate).astype(int)
    correct = rng.random(n) < p_correct
    pred = np.where(correct, y, 1 - y)
    score = np.clip(np.where(pred == 1, 0.75, 0.25) + rng.normal(0, 0.2, n), 0, 1)
    return y, pred, score


def test_doctests():
    assert doctest.testmod(slices_module).failed == 0


def test_weak_slice_found_with_cis_in_both_datasets():
    rng = np.random.default_rng(0)
    n = 3000
    in_b, in_p = rng.random(n) < 0.05, rng.random(n) < 0.2
    yb, pb, sb = _binary(rng, n, np.where(in_b, 0.7, 0.9))
    yp, pp, sp = _binary(rng, n, np.where(in_p, 0.7, 0.9))
    ev = SliceEvaluator(metric="accuracy").fit(Outcomes(pb, yb, sb)).test(
        Outcomes(pp, yp, sp), slices={"weak": (in_b, in_p), "none": (~in_b, ~in_p)}, definitions={"weak": "x == 1"})
    weak = ev.get("weak")
    assert weak.definition == "x == 1" and weak.source == "expert" and weak.status == "ok"
    assert weak.n_benchmark == in_b.sum() and weak.n_production == in_p.sum()
    assert weak.benchmark_ci[0] <= weak.benchmark_value <= weak.benchmark_ci[1]
    assert weak.production_ci[0] < 0.7 < weak.production_ci[1]
    assert weak.gap_dataset == "production" and weak.gap_ci[1] < 0 and weak.underperforming
    assert weak.gap_vs_rest == pytest.approx(-0.2, abs=0.05)
    assert not weak.changed  # same weakness on both sides
    assert weak.production_share == pytest.approx(in_p.mean())
    assert {t.kind for t in ev.tests} == {"slice_performance", "slice_gap"}
    json.dumps(ev.to_dict())


def test_changed_slice_and_unlabelled_production():
    rng = np.random.default_rng(1)
    n = 2000
    s_b, s_p = rng.random(n) < 0.3, rng.random(n) < 0.3
    yb, pb, _ = _binary(rng, n, 0.9)
    yp, pp, _ = _binary(rng, n, np.where(s_p, 0.75, 0.9))
    ev = SliceEvaluator(metric="accuracy").fit(Outcomes(pb, yb)).test(Outcomes(pp, yp), slices={"s": (s_b, s_p)})
    assert ev.get("s").changed and ev.get("s").p_value_adjusted < 0.05
    ev = SliceEvaluator(metric="accuracy").fit(Outcomes(pb, yb)).test(Outcomes(pp), slices={"s": (s_b, s_p)})
    s = ev.get("s")
    assert np.isnan(s.production_value) and np.isnan(s.p_value) and s.gap_dataset == "benchmark"
    assert ev.overall_production is None and not s.underperforming


@pytest.mark.parametrize("metric", ["accuracy", "error_rate", "balanced_accuracy", "macro_f1", "sensitivity",
                                    "specificity", "false_positive_rate", "precision", "auc"])
def test_every_metric_runs_and_orients_the_gap(metric):
    rng = np.random.default_rng(2)
    n = 4000
    s = rng.random(n) < 0.3
    y, pred, score = _binary(rng, n, np.where(s, 0.65, 0.92))
    score = np.where(s, rng.random(n), score)  # useless scores inside the slice
    ev = SliceEvaluator(metric=metric, positive=1).fit(Outcomes(pred, y, score)).test(Outcomes(pred, y, score),
                                                                                     slices={"s": (s, s)})
    res = ev.get("s")
    assert res.metric == metric and np.isfinite(res.production_value)
    assert res.underperforming, (metric, res.gap_vs_rest, res.gap_p_value_adjusted)
    assert res.production_ci[0] <= res.production_value <= res.production_ci[1]


def test_small_slices_are_not_tested():
    rng = np.random.default_rng(3)
    y, pred, _ = _binary(rng, 500, 0.9)
    tiny = np.zeros(500, bool)
    tiny[:10] = True
    ev = SliceEvaluator(metric="accuracy", min_slice_size=30).fit(Outcomes(pred, y)).test(
        Outcomes(pred, y), slices={"tiny": (tiny, tiny)})
    t = ev.get("tiny")
    assert t.status == "insufficient_data" and np.isnan(t.gap_p_value) and not t.underperforming
    assert np.isfinite(t.production_value) and t.n_production == 10


def test_input_errors():
    y = np.array([0, 1] * 50)
    with pytest.raises(DetectorInputError, match="metric must be one of"):
        SliceEvaluator(metric="f7").fit(Outcomes(y, y))
    with pytest.raises(DetectorInputError, match="benchmark needs labels"):
        SliceEvaluator().fit(Outcomes(y))
    with pytest.raises(DetectorInputError, match="masks must have shapes"):
        SliceEvaluator().fit(Outcomes(y, y)).test(Outcomes(y, y), slices={"s": (np.ones(3, bool), np.ones(100, bool))})
    with pytest.raises(DetectorInputError, match="needs scores"):
        SliceEvaluator(metric="auc").fit(Outcomes(y, y))
    with pytest.raises(DetectorInputError, match="y_true must have shape"):
        Outcomes(y, y[:5])


def test_with_tests_applies_an_audit_wide_correction():
    rng = np.random.default_rng(4)
    n = 1500
    s = rng.random(n) < 0.2
    y, pred, _ = _binary(rng, n, np.where(s, 0.8, 0.9))
    ev = SliceEvaluator(metric="accuracy").fit(Outcomes(pred, y)).test(Outcomes(pred, y), slices={"s": (s, s)})
    assert ev.get("s").underperforming
    flooded = readjust(list(ev.tests) + [ev.tests[1]] * 0, alpha=1e-12)
    again = ev.with_tests(flooded)
    assert not again.get("s").underperforming and again.get("s").gap_p_value_adjusted == flooded[1].p_value_adjusted


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["accuracy", "macro_f1", "auc"])
def test_gap_test_is_calibrated_when_the_slice_is_not_weak(metric):
    rng = np.random.default_rng(5)
    runs, rejections, covered = 200, 0, 0
    for _ in range(runs):
        n = 600
        s = rng.random(n) < 0.25
        y, pred, score = _binary(rng, n, 0.85)
        ev = SliceEvaluator(metric=metric, positive=1, n_bootstrap=200, random_state=int(rng.integers(1e6))).fit(
            Outcomes(pred, y, score)).test(Outcomes(pred, y, score), slices={"s": (s, s)})
        res = ev.get("s")
        rejections += res.gap_p_value < 0.05
        covered += res.gap_ci[0] <= 0 <= res.gap_ci[1]
    tolerance = 3 * np.sqrt(0.05 * 0.95 / runs)
    assert rejections / runs <= 0.05 + tolerance
    assert covered / runs >= 0.95 - tolerance
