"""The full audit's fast paths compute what the slow ones computed.

Context cells, strata ids, value counts as text, observed metrics from one confusion count,
the KS merge and the tied-KS permutation test, and the confidence-based bootstrap on
(score, outcome) cells are checked against the direct computation they replace (exact), or,
where the random draws differ, against its sampling distribution.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from detectors import univariate
from detectors.attribution import _combinations
from detectors.confidence_based import ConfidenceBasedEstimator
from detectors.metric_ci import metric_with_ci, observed_performance
from detectors.univariate import ecdf_gap_statistics, ks_tied_test
from detectors.within_context import dense_ids, text_value_counts


@pytest.mark.parametrize("n_columns", [1, 2, 3])
def test_cell_combinations_equal_a_row_wise_unique(n_columns):
    rng = np.random.default_rng(n_columns)
    codes = [rng.integers(0, rng.integers(1, 9), 5_000) for _ in range(n_columns)]
    combos, ids = np.unique(np.column_stack(codes), axis=0, return_inverse=True)
    fast_combos, fast_ids = _combinations(codes)
    assert np.array_equal(combos, fast_combos) and np.array_equal(ids.ravel(), fast_ids)


def test_dense_ids_equal_unique_inverse_for_small_and_wide_ranges():
    rng = np.random.default_rng(0)
    for codes in (rng.integers(0, 40, 10_000), rng.integers(-7, 7, 500), rng.integers(0, 10 ** 12, 2_000)):
        assert np.array_equal(dense_ids(codes), np.unique(codes, return_inverse=True)[1].ravel())


@pytest.mark.parametrize("series", [
    pd.Series(["a", "b", None, np.nan, "a"], dtype=object),
    pd.Series([3, 1, 1, 2]),
    pd.Series([True, False, True]),
    pd.Series(pd.Categorical(["x", "y", "x"], categories=["x", "y", "unused"])),
    pd.Series([1, 1.0, "1"], dtype=object),  # distinct values sharing a text: counted as text
    pd.Series([0.1, 0.25, np.nan]),
])
def test_text_value_counts_equal_counts_of_the_rows_as_text(series):
    assert text_value_counts(series).to_dict() == series.astype(str).value_counts().to_dict()


def test_observed_performance_equals_one_metric_at_a_time():
    rng = np.random.default_rng(3)
    for classes in (["neg", "pos"], [0, 1], ["a", "b", "c"]):
        y_true = np.array(rng.choice(classes, 3_000), dtype=object)
        y_pred = np.where(rng.random(3_000) < 0.8, y_true, rng.choice(classes, 3_000))
        scores = rng.random(3_000) if len(classes) == 2 else None
        positive = 1 if classes == [0, 1] else ("pos" if classes == ["neg", "pos"] else None)
        got = observed_performance(y_true, y_pred, scores, positive=positive)
        for m in got.metrics:
            alone = metric_with_ci(m.name, y_true, y_pred, scores, positive=positive, cls=m.cls)
            assert alone == m


@pytest.mark.parametrize("tied", [False, True])
def test_ks_merge_equals_scipy_with_and_without_ties(tied):
    rng = np.random.default_rng(4)
    draw = (lambda n, loc: rng.integers(0, 15, n) + loc) if tied else (lambda n, loc: rng.normal(loc, 1, n))
    for i in range(20):
        a, b = np.sort(draw(int(rng.integers(5, 400)), 0.0)), np.sort(draw(int(rng.integers(5, 400)), 0.2 * i % 1))
        assert ecdf_gap_statistics(a, b)[0] == pytest.approx(stats.ks_2samp(a, b).statistic, abs=1e-12)


@pytest.mark.slow
def test_tied_ks_stops_early_only_where_the_p_value_decides_nothing(monkeypatch):
    rng = np.random.default_rng(5)
    # 3,000 levels: 333-permutation blocks
    same = [np.sort(rng.integers(0, 3_000, n).astype(float)) for n in (4_000, 6_000)]
    shifted = [same[0], np.sort(rng.integers(60, 3_060, 6_000).astype(float))]
    stopped = {k: ks_tied_test(*pair, random_state=1) for k, pair in (("null", same), ("shift", shifted))}
    monkeypatch.setattr(univariate, "SEQUENTIAL_STOP_EXCEEDANCES", 10 ** 9)
    full = {k: ks_tied_test(*pair, random_state=1) for k, pair in (("null", same), ("shift", shifted))}
    assert stopped["shift"] == full["shift"] and full["shift"][1] < 0.1  # small p-values: bit for bit the same
    p_stop, p_full = stopped["null"][1], full["null"][1]
    assert p_full > 0.1 and abs(p_stop - p_full) < 4 * np.sqrt(p_full * (1 - p_full) / 333)


def test_tied_ks_skips_continuous_samples_without_sorting_them_together():
    rng = np.random.default_rng(6)
    assert ks_tied_test(np.sort(rng.normal(size=20_000)), np.sort(rng.normal(size=20_000))) is None


def test_confidence_based_cell_bootstrap_covers_the_realised_accuracy():
    """The binary bootstrap on (score, outcome) cells keeps the interval's coverage."""
    rng = np.random.default_rng(7)

    def simulate(n, shift):  # SYNTHETIC: P(y | x) fixed, x shifts; scores on a grid so cells repeat
        x = rng.normal(shift, 1, n)
        p = np.round(1 / (1 + np.exp(-2 * x)), 2)
        return np.where(rng.random(n) < p, "pos", "neg").astype(object), p

    covered, reps = 0, 40
    for _ in range(reps):
        y_b, s_b = simulate(3_000, 0.0)
        y_p, s_p = simulate(3_000, 0.7)
        est = ConfidenceBasedEstimator(positive="pos", n_bootstrap=100, random_state=int(rng.integers(1e6)))
        acc = est.fit(y_b, s_b).estimate(s_p).get("accuracy")
        observed = float(np.mean(np.where(s_p >= 0.5, "pos", "neg") == y_p))
        covered += acc.ci_low <= observed <= acc.ci_high
    assert covered / reps >= 0.85  # nominal 95 %


@pytest.mark.parametrize("metric", ["accuracy", "sensitivity", "specificity", "balanced_accuracy"])
def test_within_context_change_on_label_codes_equals_the_test_on_labels(metric):
    from detectors.within_context import label_codes, make_strata, within_context_change

    rng = np.random.default_rng(8)
    labels = np.array(["benign", "malignant", "unclear"], dtype=object)
    yb, yp = labels[rng.integers(0, 3, 4_000)], labels[rng.integers(0, 3, 6_000)]
    pb = np.where(rng.random(4_000) < 0.8, yb, labels[rng.integers(0, 3, 4_000)])
    pp = np.where(rng.random(6_000) < 0.75, yp, labels[rng.integers(0, 3, 6_000)])
    strata = make_strata(rng.integers(0, 4, 4_000), rng.integers(0, 4, 6_000))
    mask_b, mask_p = rng.random(4_000) < 0.5, rng.random(6_000) < 0.5
    codes, positive = label_codes(yb, pb, yp, pp, "malignant")
    on_labels = within_context_change(yb, pb, yp, pp, strata, mask_b=mask_b, mask_p=mask_p, metric=metric,
                                      positive="malignant")
    on_codes = within_context_change(*codes, strata, mask_b=mask_b, mask_p=mask_p, metric=metric, positive=positive)
    assert on_labels == on_codes
