"""Tests on summaries against the in-memory detectors: same result types, same
conclusions; exact parts equal, sketched KS within its error bound and never more significant.

KLL compaction is randomised by DataSketches with a seed it does not expose, so the sketched
numbers here vary between runs within the rank error; the assertions hold with a wide margin
(largest sketch error observed about 0.002 per sketch, bound 0.0028)."""
from __future__ import annotations

import json
from functools import reduce

import numpy as np
import pandas as pd
import pytest

from detectors import CovariateShiftDetector, DetectorInputError, LabelShiftEstimator, metric_with_ci
from detectors.sketch_tests import (
    bootstrap_metric_interval,
    sketch_gap_statistics,
    sketch_ks_test,
    summary_covariate,
    summary_label_shift,
    summary_slice_metric,
)
from detectors.summaries import ConfusionSummary, DatasetSummary, NumericSummary, PredictionSummary
from detectors.univariate import ecdf_gap_statistics, ks_pvalue, ks_test
from tests.detectors.conftest import LEVELS

ALPHA = 0.05


def _merge_all(parts):
    return reduce(lambda a, b: a.merge(b), parts, type(parts[0]).empty())


def _summarise(frame: pd.DataFrame, types, parts: int = 10) -> DatasetSummary:
    size = -(-len(frame) // parts)
    return _merge_all([DatasetSummary.from_frame(frame.iloc[i:i + size], numeric=types.numeric,
                                                 categorical=types.categorical + types.boolean)
                       for i in range(0, len(frame), size)])


def _exact_ks(ref: np.ndarray, cur: np.ndarray) -> tuple[float, float]:
    d = ecdf_gap_statistics(np.sort(ref), np.sort(cur))[0]
    return d, ks_test(d, ref.size, cur.size)[1]


# ---------------------------------------------------------------- numeric test
def test_exact_mode_sketches_give_the_exact_ks_test():
    rng = np.random.default_rng(0)
    ref, cur = rng.normal(size=600), rng.normal(0.2, 1, size=500)
    test = sketch_ks_test("x", NumericSummary.from_values(ref), NumericSummary.from_values(cur))
    d, p = _exact_ks(ref, cur)
    assert test.details["sketch_rank_error"] == 0.0 and test.details["sketch_exact"]
    assert test.statistic == pytest.approx(d, abs=1e-12) and test.p_value == pytest.approx(p, rel=1e-12)
    w = ecdf_gap_statistics(np.sort(ref), np.sort(cur))[2]
    assert test.details["wasserstein"] == pytest.approx(w, rel=1e-9)
    assert test.effect_size == pytest.approx(w / ref.std(), rel=1e-9)


def test_small_samples_are_insufficient():
    small = NumericSummary.from_values(np.arange(10.0))
    test = sketch_ks_test("x", small, NumericSummary.from_values(np.arange(100.0)), min_samples=30)
    assert test.status == "insufficient_data" and np.isnan(test.p_value) and test.method == "ks_sketch"


def test_sketched_statistic_brackets_the_exact_one_and_p_value_is_conservative():
    """Over 40 seeds at n = 50,000: D in [D_low, D_high] and p_sketch >= p_exact (the continuous KS)."""
    rng = np.random.default_rng(1)
    gaps = []
    for seed in range(40):
        shift = (0.0, 0.01, 0.03, 0.3)[seed % 4]
        ref, cur = rng.normal(size=50_000), rng.normal(shift, 1, size=50_000)
        test = sketch_ks_test("x", NumericSummary.from_values(ref), NumericSummary.from_values(cur))
        d, p = _exact_ks(ref, cur)
        low, high = test.details["ks_statistic_bounds"]
        assert low <= d <= high and test.p_value >= p
        assert test.p_value == ks_pvalue(low, 50_000, 50_000)[0]
        gaps.append(abs(test.statistic - d) / test.details["sketch_rank_error"])
    assert max(gaps) < 1.0  # measured: |D_hat - D| at most about 0.4 eps


@pytest.mark.slow
def test_null_false_alarm_rate_is_at_most_alpha():
    """200 seeds without shift (n = 20,000, sketches compacted): rejections at alpha 0.05."""
    rng = np.random.default_rng(2)
    rejected = 0
    for _ in range(200):
        ref = NumericSummary.from_values(rng.normal(size=20_000))
        cur = NumericSummary.from_values(rng.normal(size=20_000))
        rejected += sketch_ks_test("x", ref, cur).p_value <= ALPHA
    mc_error = 3 * np.sqrt(ALPHA * (1 - ALPHA) / 200)
    assert rejected / 200 <= ALPHA + mc_error  # measured: 0 of 200 (the test is conservative)


def test_power_for_a_03_sigma_mean_shift_at_n_50k():
    rng = np.random.default_rng(3)
    detected = 0
    for _ in range(10):
        ref = NumericSummary.from_values(rng.normal(size=50_000))
        cur = NumericSummary.from_values(rng.normal(0.3, 1, size=50_000))
        result = summary_covariate({"x": ref}, {"x": cur}, n_reference=50_000, n_current=50_000)
        detected += result.drifted == ("x",)
    assert detected == 10  # p about 1e-270; effect about 0.3 against the 0.1 floor


# ---------------------------------------------------------------- against the in-memory detector
def _drifted_pair(make_mixed, n: int, seed: int):
    rng = np.random.default_rng(seed)
    ref, cur = make_mixed(rng, n), make_mixed(rng, n, shift=0.15)
    cur["c1"] = rng.choice(LEVELS, n, p=[0.25, 0.3, 0.2, 0.15, 0.1])  # a categorical shift
    cur.loc[rng.random(n) < 0.05, "x7"] = np.nan  # a missing-rate shift
    return ref, cur


@pytest.mark.slow
@pytest.mark.parametrize("n", [20_000, 200_000])
def test_summary_covariate_reaches_the_in_memory_conclusions(make_mixed, n):
    ref, cur = _drifted_pair(make_mixed, n, seed=n)
    detector = CovariateShiftDetector().fit(ref)
    exact = detector.test(cur)
    types = detector.column_types_
    r, c = _summarise(ref, types), _summarise(cur, types)
    result = summary_covariate(r.columns, c.columns, n_reference=r.n_rows, n_current=c.n_rows,
                               excluded=types.excluded)
    assert type(result) is type(exact)
    assert [t.name for t in result.features] == [t.name for t in exact.features]
    assert result.drifted == exact.drifted == ("x0", "c1") and result.is_shift
    assert [(t.name, t.drifted) for t in result.missing] == [(t.name, t.drifted) for t in exact.missing]
    assert any(t.name == "x7" and t.drifted for t in result.missing)
    for mine, theirs in zip(result.missing, exact.missing):  # exact counts: identical tests
        assert (mine.statistic, mine.p_value, mine.effect_size) == (theirs.statistic, theirs.p_value,
                                                                    theirs.effect_size)
    for mine, theirs in zip(result.features, exact.features):
        if mine.method == "chi2":  # the same table, its categories in another order: equal up to rounding
            assert mine.details["dof"] == theirs.details["dof"] and mine.n_current == theirs.n_current
            for key in ("statistic", "p_value", "effect_size"):
                assert getattr(mine, key) == pytest.approx(getattr(theirs, key), rel=1e-12, abs=1e-300)
            continue
        _check_numeric(mine, theirs)
    json.dumps(result.to_dict())  # the AuditResult JSON as before


def _check_numeric(mine, theirs) -> None:
    """Integer columns (exact value counts): the in-memory test itself. Others: ``D`` inside the sketch
    bounds; p-value at least the exact continuous-KS one; exact moments."""
    if mine.details.get("exact_value_counts"):
        assert (mine.method, mine.details["ks_method"]) == (theirs.method, theirs.details["ks_method"])
        for key in ("statistic", "p_value", "effect_size"):
            assert getattr(mine, key) == pytest.approx(getattr(theirs, key), rel=1e-9, abs=1e-300)
        return
    d, eps = theirs.details["ks_statistic"], mine.details["sketch_rank_error"]
    low, high = mine.details["ks_statistic_bounds"]
    assert abs(mine.statistic - d) <= eps and low <= d <= high
    p_exact = theirs.details.get("ks_p_value_continuous", theirs.p_value)  # ties: the continuous p-value
    assert mine.p_value >= p_exact
    for key in ("mean_reference", "mean_current", "std_reference", "std_current", "mean_difference"):
        assert mine.details[key] == pytest.approx(theirs.details[key], rel=1e-9, abs=1e-12)
    assert np.allclose(mine.details["mean_difference_ci"], theirs.details["mean_difference_ci"], rtol=1e-9)
    assert abs(mine.effect_size - theirs.effect_size) < 0.02  # measured: at most about 0.007
    assert (mine.n_reference, mine.n_current) == (theirs.n_reference, theirs.n_current)


def test_summary_covariate_errors_are_clear(make_mixed):
    frame = make_mixed(np.random.default_rng(4), 300)
    s = DatasetSummary.from_frame(frame, numeric=["x0", "x2"], categorical=["c0"])
    cols, n = dict(s.columns), s.n_rows
    with pytest.raises(DetectorInputError, match=r"missing columns \['c0'\]"):
        summary_covariate(cols, {k: v for k, v in cols.items() if k != "c0"}, n_reference=n, n_current=n)
    with pytest.raises(DetectorInputError, match="both be NumericSummary"):
        summary_covariate(cols, {**cols, "x0": cols["c0"]}, n_reference=n, n_current=n)
    with pytest.raises(DetectorInputError, match="but the current has 301 rows"):
        summary_covariate(cols, cols, n_reference=n, n_current=n + 1)
    with pytest.raises(DetectorInputError, match="entirely missing"):
        empty = NumericSummary.from_values(np.full(n, np.nan))
        summary_covariate({**cols, "x0": empty}, cols, n_reference=n, n_current=n)
    with pytest.raises(DetectorInputError, match="alpha"):
        summary_covariate(cols, cols, n_reference=n, n_current=n, alpha=2)


# ---------------------------------------------------------------- slice metrics
def _confusion_parts(y, yhat, parts=5, n_bootstrap=0, seed=0):
    return _merge_all([ConfusionSummary.from_labels(a, b, n_bootstrap=n_bootstrap, random_state=(seed, i))
                       for i, (a, b) in enumerate(zip(np.array_split(y, parts), np.array_split(yhat, parts)))])


@pytest.mark.parametrize("metric, kw", [("accuracy", {}), ("sensitivity", {"positive": 1}),
                                        ("specificity", {"positive": 1}), ("fpr", {"positive": 2}),
                                        ("recall", {"cls": 0}), ("precision", {"cls": 2}),
                                        ("balanced_accuracy", {}), ("macro_f1", {}), ("f1", {"positive": 1}),
                                        ("sensitivity", {"positive": 7})])
def test_slice_metric_from_counts_equals_metric_with_ci(metric, kw):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 2_000)
    yhat = np.where(rng.random(2_000) < 0.7, y, rng.integers(0, 3, 2_000))
    summary = _confusion_parts(y, yhat)
    # to_dict: NaN (an absent positive class) compares equal there
    assert summary_slice_metric(summary, metric, **kw).to_dict() == metric_with_ci(metric, y, yhat, **kw).to_dict()


def test_poisson_bootstrap_interval_covers_a_proportion_at_the_nominal_rate():
    """200 repetitions, n = 400 in 4 partitions, B = 400: coverage of the accuracy 0.85."""
    rng = np.random.default_rng(6)
    covered = 0
    for rep in range(200):
        y = rng.integers(0, 2, 400)
        yhat = np.where(rng.random(400) < 0.85, y, 1 - y)
        summary = _confusion_parts(y, yhat, parts=4, n_bootstrap=400, seed=rep)
        low, high = bootstrap_metric_interval(summary, "accuracy")
        covered += low <= 0.85 <= high
    assert 0.90 <= covered / 200 <= 0.99  # measured: 0.94
    with pytest.raises(DetectorInputError, match="no bootstrap replicates"):
        bootstrap_metric_interval(_confusion_parts(y, yhat), "accuracy")


# ---------------------------------------------------------------- label shift
CONF = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])


def _simulate(rng, prior, n):
    y = rng.choice(3, size=n, p=prior)
    cum = CONF[y].cumsum(axis=1)
    return y, (rng.random(n)[:, None] > cum).sum(axis=1)


def _label_data(seed=7):
    rng = np.random.default_rng(seed)
    y_b, yhat_b = _simulate(rng, [1 / 3, 1 / 3, 1 / 3], 6_000)
    _, yhat_p = _simulate(rng, [0.6, 0.3, 0.1], 8_000)
    return y_b, yhat_b, yhat_p


def test_bbse_on_summaries_equals_the_in_memory_estimator():
    y_b, yhat_b, yhat_p = _label_data()
    exact = LabelShiftEstimator(random_state=0).fit(y_b, yhat_b).estimate(yhat_p)
    bench = _confusion_parts(y_b, yhat_b)
    prod = _merge_all([PredictionSummary.from_predictions(p) for p in np.array_split(yhat_p, 4)])
    plain = summary_label_shift(bench, prod)  # no replicates: the estimator's own bootstrap, same seed
    assert plain == exact
    bench_b = _confusion_parts(y_b, yhat_b, n_bootstrap=300, seed=1)
    prod_b = _merge_all([PredictionSummary.from_predictions(p, n_bootstrap=300, random_state=(2, i))
                         for i, p in enumerate(np.array_split(yhat_p, 4))])
    poisson = summary_label_shift(bench_b, prod_b)
    assert poisson.priors == pytest.approx(exact.priors, abs=1e-12)
    assert (poisson.p_value, poisson.is_shift, poisson.method) == (exact.p_value, exact.is_shift, exact.method)
    for cls in (0, 1, 2):  # Poisson replicates of the summaries versus the multinomial bootstrap of the rows
        assert np.allclose(poisson.priors_ci[cls], exact.priors_ci[cls], atol=0.01)


def test_bbse_poisson_intervals_cover_the_production_priors():
    """200 repetitions (benchmark and production 2,000 rows, B = 300): coverage per class."""
    rng = np.random.default_rng(9)
    covered = np.zeros(3)
    for rep in range(200):
        y_b, yhat_b = _simulate(rng, [1 / 3, 1 / 3, 1 / 3], 2_000)
        _, yhat_p = _simulate(rng, [0.6, 0.3, 0.1], 2_000)
        bench = ConfusionSummary.from_labels(y_b, yhat_b, n_bootstrap=300, random_state=(rep, 0))
        prod = PredictionSummary.from_predictions(yhat_p, n_bootstrap=300, random_state=(rep, 1))
        ci = summary_label_shift(bench, prod).priors_ci
        covered += [ci[c][0] <= q <= ci[c][1] for c, q in zip((0, 1, 2), (0.6, 0.3, 0.1))]
    assert ((0.90 <= covered / 200) & (covered / 200 <= 0.99)).all(), covered / 200  # measured: 0.93-0.94


def test_bbse_on_summaries_rejects_unseen_production_classes():
    y_b, yhat_b, _ = _label_data()
    prod = PredictionSummary.from_predictions(np.array([0, 1, 3] * 40))
    with pytest.raises(DetectorInputError, match=r"unseen in the benchmark: \[3\]"):
        summary_label_shift(_confusion_parts(y_b, yhat_b), prod)


def test_gap_statistics_of_identical_summaries_are_zero():
    s = NumericSummary.from_values(np.random.default_rng(8).normal(size=5_000))
    assert sketch_gap_statistics(s, s) == (0.0, 0.0)


# ---------------------------------------------------------------- integer columns: exact value counts
def _ages(rng, n, shift=0.0):
    """SYNTHETIC ages in whole years (heavy ties), optionally shifted by ``shift`` years."""
    return np.clip(np.round(rng.normal(45 + shift, 15, n)), 18, 90)


def test_value_counts_merge_exactly_and_stop_past_the_level_limit():
    rng = np.random.default_rng(11)
    x = _ages(rng, 30_000)
    merged = _merge_all([NumericSummary.from_values(p) for p in np.array_split(x, 7)])
    values, counts = merged.level_counts()
    expected_values, expected_counts = np.unique(x, return_counts=True)
    assert np.array_equal(values, expected_values) and np.array_equal(counts, expected_counts)
    continuous = NumericSummary.from_values(rng.normal(size=20_000))
    assert continuous.levels is None and merged.merge(continuous).levels is None
    test = sketch_ks_test("x", continuous, NumericSummary.from_values(rng.normal(size=20_000)))
    assert test.method == "ks_sketch" and "exact_value_counts" not in test.details


@pytest.mark.parametrize("shift", [0.0, 0.5, 3.0])
def test_integer_column_from_partitions_equals_the_in_memory_test(shift):
    """The Dask engine's test of an integer column is the pandas engine's, number for number:
    the same statistic, the same tie-correct permutation p-value (same seed), the same effect."""
    rng = np.random.default_rng(12)
    ref, cur = pd.DataFrame({"age": _ages(rng, 20_000)}), pd.DataFrame({"age": _ages(rng, 15_000, shift)})
    memory = CovariateShiftDetector(random_state=4).fit(ref).test(cur).features[0]
    parts = [_merge_all([NumericSummary.from_values(p) for p in np.array_split(f["age"].to_numpy(), 9)])
             for f in (ref, cur)]
    summary = summary_covariate({"age": parts[0]}, {"age": parts[1]}, n_reference=20_000, n_current=15_000,
                                random_state=4).features[0]
    assert summary.method == memory.method == "ks_permutation_ties"
    assert summary.details["exact_value_counts"] and summary.details["sketch_rank_error"] == 0.0
    assert summary.statistic == pytest.approx(memory.statistic, abs=1e-12)
    assert summary.p_value == pytest.approx(memory.p_value, rel=1e-12)
    assert summary.effect_size == pytest.approx(memory.effect_size, rel=1e-9)
    assert summary.details["ks_p_value_continuous"] == pytest.approx(memory.details["ks_p_value_continuous"],
                                                                     rel=1e-12)


def test_tied_test_on_counts_keeps_its_size_where_the_continuous_p_value_is_conservative():
    """400 null seeds, values 0..9 (n = 300 a side): the permutation p-value's false-alarm rate is
    near alpha (measured 0.030; discreteness keeps it below), the continuous one's far below
    (measured 0.0075), which is the power the sketch-only test used to give away."""
    rng = np.random.default_rng(5)
    permutation = continuous = 0
    for seed in range(400):
        a, b = (rng.binomial(9, 0.4, 300).astype(float) for _ in range(2))
        test = sketch_ks_test("x", NumericSummary.from_values(a), NumericSummary.from_values(b), random_state=seed)
        permutation += test.p_value <= ALPHA
        continuous += test.details["ks_p_value_continuous"] <= ALPHA
    assert permutation / 400 <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / 400)
    assert permutation >= 2 * continuous
