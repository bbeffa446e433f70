"""The overall metric's benchmark → production test: valid p-values under no change, power against a
real drop, interval coverage, and the decision rule (adjusted p < alpha and |difference| >= floor).
All data here is SYNTHETIC, simulated with a known truth."""
from __future__ import annotations

import numpy as np
import pytest

from detectors.base import DetectorInputError
from detectors.correction import readjust
from detectors.metric_change import metric_change_test


def _side(rng, n, accuracy, positive_rate=0.5):
    y = (rng.random(n) < positive_rate).astype(int)
    pred = np.where(rng.random(n) < accuracy, y, 1 - y)
    score = np.clip(np.where(pred == 1, 0.8, 0.2) + rng.normal(0, 0.1, n), 0, 1)
    return y, pred, score


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["accuracy", "sensitivity", "balanced_accuracy", "auc"])
def test_false_alarm_rate_under_no_change_is_at_most_alpha(metric):
    rng = np.random.default_rng(0)
    p_values = []
    for _ in range(200):
        yb, pb, sb = _side(rng, 400, 0.85)
        yp, pp, sp = _side(rng, 300, 0.85)
        res = metric_change_test(metric, yb, pb, yp, pp, scores_b=sb, scores_p=sp, positive=1, n_bootstrap=199,
                                 random_state=int(rng.integers(1 << 30)))
        p_values.append(res.test.p_value)
    rate = np.mean(np.array(p_values) < 0.05)
    assert rate <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / 200), rate  # nominal rate + Monte-Carlo tolerance


@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy", "auc"])
def test_a_ten_point_drop_is_found(metric):
    rng = np.random.default_rng(1)
    found = 0
    for _ in range(40):
        yb, pb, sb = _side(rng, 800, 0.90)
        yp, pp, sp = _side(rng, 800, 0.80)
        if metric == "auc":  # a weaker ranking: production scores carry less of the label
            sp = np.clip(0.5 + 0.4 * (sp - 0.5) + rng.normal(0, 0.2, 800), 0, 1)
        res = metric_change_test(metric, yb, pb, yp, pp, scores_b=sb, scores_p=sp, positive=1, n_bootstrap=199,
                                 random_state=0)
        found += res.is_shift and res.test.effect_size < 0
    assert found >= 36  # power >= 90 %


def test_newcombe_interval_covers_the_true_difference():
    rng = np.random.default_rng(2)
    covered = 0
    for _ in range(300):
        yb, pb, _ = _side(rng, 300, 0.85)
        yp, pp, _ = _side(rng, 250, 0.75)
        lo, hi = metric_change_test("accuracy", yb, pb, yp, pp).difference_ci
        covered += lo <= -0.10 <= hi
    assert covered / 300 >= 0.92


def test_the_decision_is_retaken_after_the_audit_correction():
    rng = np.random.default_rng(3)
    yb, pb, _ = _side(rng, 2000, 0.90)
    yp, pp, _ = _side(rng, 2000, 0.87)  # significant alone (p ~ 0.0002), a three-point drop
    res = metric_change_test("accuracy", yb, pb, yp, pp, effect_floor=0.02)
    assert res.is_shift
    (adjusted,) = readjust([res.test], alpha=0.05, correction="bonferroni")
    assert adjusted.p_value_adjusted == pytest.approx(res.test.p_value)
    family = list(readjust([res.test] + [res.test.__class__(**{**res.test.__dict__, "name": f"t{i}",
                                                                 "p_value": 0.5, "p_value_adjusted": 0.5})
                                         for i in range(500)], alpha=0.05, correction="bonferroni"))
    assert not res.with_tests(family[:1]).is_shift  # 501 tests: Bonferroni lifts it above alpha
    floored = metric_change_test("accuracy", yb, pb, yp, pp, effect_floor=0.05)
    assert floored.test.p_value < 0.05 and not floored.is_shift  # below the practical floor


def test_too_few_rows_is_insufficient_data_not_no_change():
    rng = np.random.default_rng(4)
    yb, pb, _ = _side(rng, 20, 0.9)
    yp, pp, _ = _side(rng, 25, 0.3)
    res = metric_change_test("accuracy", yb, pb, yp, pp, min_samples=30)
    assert res.test.status == "insufficient_data" and not res.is_shift and res.test.p_value != res.test.p_value


def test_bad_parameters_name_themselves():
    y = np.array([0, 1] * 50)
    with pytest.raises(DetectorInputError, match="metric"):
        metric_change_test("r2", y, y, y, y)
    with pytest.raises(DetectorInputError, match="scores"):
        metric_change_test("auc", y, y, y, y, positive=1)


def test_docstring_example_holds():
    import doctest

    import detectors.metric_change as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
