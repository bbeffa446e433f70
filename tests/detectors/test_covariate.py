"""CovariateShiftDetector: behaviour, errors, calibration at n = 200 and 200,000, power."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from detectors import CovariateShiftDetector, DetectorInputError, NotFittedError

SPEC_FEATURE_KEYS = {"name", "method", "statistic", "p_value", "p_value_adjusted", "effect_size", "drifted"}


def test_fit_learns_types_and_summaries(make_mixed):
    frame = make_mixed(np.random.default_rng(0), 500)
    det = CovariateShiftDetector()
    assert det.fit(frame) is det
    types = det.column_types_
    assert set(types.numeric) == {f"x{i}" for i in range(14)} | {"count"}
    assert set(types.categorical) == {"code", "c0", "c1", "c2"} and types.boolean == ("flag",)
    assert det.reference_sorted_.shape == (15, 500)
    row = det.reference_sorted_[2, : det.reference_valid_[2]]
    assert np.all(np.diff(row) >= 0) and det.reference_missing_["x2"] == 500 - det.reference_valid_[2]


def test_detects_a_shift_and_serialises_to_spec_json(make_mixed):
    rng = np.random.default_rng(1)
    res = CovariateShiftDetector().fit(make_mixed(rng, 2000)).test(make_mixed(rng, 2000, shift=0.5))
    assert res.is_shift is True and res.drifted == ("x0",)
    assert [t.name for t in res.features] == list(make_mixed(rng, 5).columns), "reported in column order"
    payload = json.loads(json.dumps(res.to_dict()))
    assert {"is_shift", "features", "missing", "excluded", "alpha", "correction"} <= set(payload)
    for feature in payload["features"]:
        assert SPEC_FEATURE_KEYS <= set(feature)
    shifted = res.features[0]
    assert shifted.p_value_adjusted >= shifted.p_value and shifted.effect_size >= 0.4
    low, high = shifted.details["mean_difference_ci"]
    assert low < 0.5 < high


def test_feature_statistics_equal_scipy_through_the_detector(make_mixed):
    rng = np.random.default_rng(2)
    ref, cur = make_mixed(rng, 3000), make_mixed(rng, 2500, shift=0.1)
    res = CovariateShiftDetector().fit(ref).test(cur)
    for name in ("x0", "x2", "count"):  # continuous, with missing values, with ties
        test = next(t for t in res.features if t.name == name)
        expected = stats.ks_2samp(ref[name].dropna(), cur[name].dropna())
        assert test.statistic == expected.statistic
        if name == "count":  # ties: the tie-correct p-value, scipy's continuous one kept in details
            assert test.method == "ks_permutation_ties"
            assert test.details["ks_p_value_continuous"] == pytest.approx(expected.pvalue, rel=1e-12)
            continue
        assert test.p_value == pytest.approx(expected.pvalue, rel=1e-12)
    chi = next(t for t in res.features if t.name == "c1")
    table = pd.crosstab(np.r_[np.zeros(3000), np.ones(2500)], np.r_[ref["c1"], cur["c1"]])
    assert chi.statistic == pytest.approx(stats.chi2_contingency(table, correction=False).statistic)


def test_unseen_categories_are_reported_and_flagged():
    rng = np.random.default_rng(3)
    ref = pd.DataFrame({"site": rng.choice(["a", "b", "c"], 3000)})
    cur = pd.DataFrame({"site": np.where(rng.random(3000) < 0.2, "new", rng.choice(["a", "b", "c"], 3000))})
    test = CovariateShiftDetector().fit(ref).test(cur).features[0]
    assert test.details["unseen_categories"] == ("new",) and test.drifted
    assert test.details["unseen_share"] == pytest.approx(0.2, abs=0.02)
    assert test.effect_name == "cramers_v" and test.details["psi"] > 0.1


def test_missing_rate_shift_is_its_own_test(make_mixed):
    rng = np.random.default_rng(4)
    ref, cur = make_mixed(rng, 2000), make_mixed(rng, 2000)
    cur.loc[rng.random(2000) < 0.3, "x5"] = np.nan
    res = CovariateShiftDetector().fit(ref).test(cur)
    missing = {t.name: t for t in res.missing}
    assert missing["x5"].drifted and missing["x5"].kind == "missing_rate"
    assert missing["x5"].effect_size == pytest.approx(0.3, abs=0.03)
    assert "x6" not in missing, "no missing value on either side: nothing to test"
    assert not next(t for t in res.features if t.name == "x5").drifted, "values left are unchanged"


def test_negligible_shift_on_huge_samples_is_significant_but_not_a_shift():
    rng = np.random.default_rng(5)
    n = 200_000
    ref = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    cur = pd.DataFrame({"a": rng.normal(0.03, 1, size=n), "b": rng.normal(size=n)})
    res = CovariateShiftDetector().fit(ref).test(cur)
    shifted = res.features[0]
    assert shifted.p_value_adjusted < 1e-6 and shifted.effect_size < 0.1
    assert not shifted.drifted and res.is_shift is False
    loud = CovariateShiftDetector(effect_floors={"wasserstein_normed": 0.0}).fit(ref).test(cur)
    assert loud.features[0].drifted, "the floor, not the p-value, is what keeps it quiet"


def test_small_samples_are_insufficient_not_guessed(make_mixed):
    rng = np.random.default_rng(6)
    res = CovariateShiftDetector().fit(make_mixed(rng, 500)).test(make_mixed(rng, 10, shift=3.0))
    assert res.is_shift is False
    assert {t.status for t in res.features} == {"insufficient_data"}
    assert res.to_dict()["features"][0]["p_value"] is None


def test_all_missing_current_column_is_a_missing_rate_shift(make_mixed):
    rng = np.random.default_rng(7)
    ref, cur = make_mixed(rng, 400), make_mixed(rng, 400)
    cur["x7"] = np.nan
    res = CovariateShiftDetector().fit(ref).test(cur)
    assert next(t for t in res.features if t.name == "x7").status == "insufficient_data"
    assert next(t for t in res.missing if t.name == "x7").drifted and res.is_shift


def test_constant_columns_are_tested():
    ref = pd.DataFrame({"k": np.ones(200), "x": np.arange(200.0)})
    same = CovariateShiftDetector().fit(ref).test(ref.copy())
    assert same.features[0].p_value == 1.0 and not same.is_shift
    moved = CovariateShiftDetector().fit(ref).test(ref.assign(k=2.0))
    assert moved.features[0].drifted and moved.features[0].details["unseen_categories"] == ("2.0",)


def test_excluded_columns_are_reported():
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"x": rng.normal(size=300), "when": pd.date_range("2024-01-01", periods=300),
                          "id": [f"row{i}" for i in range(300)]})
    res = CovariateShiftDetector().fit(frame).test(frame)
    assert [(e.name, e.reason) for e in res.excluded] == [("when", "datetime"), ("id", "high_cardinality")]
    assert [t.name for t in res.features] == ["x"]


def test_cvm_can_decide_instead_of_ks(make_numeric):
    rng = np.random.default_rng(9)
    res = CovariateShiftDetector(numeric_test="cvm").fit(make_numeric(rng, 800)).test(make_numeric(rng, 800, shift=0.4))
    assert res.features[0].method == "cvm" and "x0" in res.drifted
    assert res.features[0].p_value == res.features[0].details["cvm_p_value"]


def test_errors_are_clear(make_mixed):
    rng = np.random.default_rng(10)
    ref = make_mixed(rng, 100)
    with pytest.raises(NotFittedError):
        CovariateShiftDetector().test(ref)
    det = CovariateShiftDetector().fit(ref)
    with pytest.raises(DetectorInputError, match=r"x3"):
        det.test(ref.assign(x3=np.inf))
    with pytest.raises(DetectorInputError, match=r"non-numeric values in numeric columns \['x3'\]"):
        det.test(ref.assign(x3="n/a"))
    with pytest.raises(DetectorInputError, match="empty"):
        det.test(ref.iloc[:0])
    with pytest.raises(DetectorInputError, match=r"missing columns \['c2'\].*unexpected columns \['zz'\]"):
        det.test(ref.drop(columns="c2").assign(zz=1))
    with pytest.raises(DetectorInputError, match=r"\['x9'\].*entirely missing"):
        CovariateShiftDetector().fit(ref.assign(x9=np.nan))
    with pytest.raises(DetectorInputError, match="DataFrame"):
        det.test(ref.to_numpy())
    for bad in ({"alpha": 2}, {"correction": "fdr-ish"}, {"effect_floors": {"cohens_d": 0.2}}):
        with pytest.raises(DetectorInputError):
            CovariateShiftDetector(**bad).fit(ref)


def test_deterministic(make_mixed):
    rng = np.random.default_rng(11)
    ref, cur = make_mixed(rng, 300), make_mixed(rng, 300, shift=0.3)
    first = CovariateShiftDetector().fit(ref).test(cur).to_dict()
    assert first == CovariateShiftDetector().fit(ref).test(cur).to_dict()


@pytest.mark.slow
def test_false_alarm_rate_at_n_200(make_mixed):
    """400 no-shift datasets of 20 mixed columns (missing values, ties, rare levels)."""
    rng = np.random.default_rng(12)
    reps, alpha = 400, 0.05
    alarms, significant, p_values = 0, 0, []
    for _ in range(reps):
        res = CovariateShiftDetector(alpha=alpha).fit(make_mixed(rng, 200)).test(make_mixed(rng, 200))
        alarms += res.is_shift
        significant += any(t.p_value_adjusted < alpha for t in res.tests)
        p_values += [t.p_value for t in res.features if t.name.startswith("x")]
    limit = stats.binom.ppf(0.999, reps, alpha) / reps  # alpha + Monte-Carlo tolerance
    assert alarms / reps <= significant / reps <= limit
    # Column p-values are (conservatively) calibrated, not merely rare: the level is used.
    assert 0.02 <= np.mean(np.array(p_values) < alpha) <= alpha + 0.01


@pytest.mark.slow
def test_false_alarm_rate_at_n_200_000(make_mixed):
    """The asymptotic regime: 12 no-shift datasets of 200,000 rows a side.

    Few repetitions, so the dataset-level check is loose; the 288 column p-values of the
    same runs are checked for uniformity, which is what the dataset-level level rests on
    (any BH rejection under the null is Simes' test, level alpha for independent columns).
    """
    rng = np.random.default_rng(13)
    reps, alpha = 12, 0.05
    significant, p_values = 0, []
    for _ in range(reps):
        res = CovariateShiftDetector(alpha=alpha).fit(make_mixed(rng, 200_000)).test(make_mixed(rng, 200_000))
        assert res.is_shift is False  # effects of pure noise at this n are far below every floor
        significant += any(t.p_value_adjusted < alpha for t in res.tests)
        p_values += [t.p_value for t in res.tests]
    assert significant <= stats.binom.ppf(0.999, reps, alpha)
    assert stats.kstest(p_values, "uniform").pvalue > 0.001


@pytest.mark.slow
def test_power_for_a_03_sigma_shift_in_one_of_20_features(make_numeric):
    rng = np.random.default_rng(14)
    reps, found, false_discovery_proportions = 200, 0, []
    for _ in range(reps):
        res = CovariateShiftDetector().fit(make_numeric(rng, 1000)).test(make_numeric(rng, 1000, shift=0.3))
        found += "x0" in res.drifted
        wrong = len(set(res.drifted) - {"x0"})
        false_discovery_proportions.append(wrong / len(res.drifted) if res.drifted else 0.0)
    assert found / reps >= 0.90
    # BH controls the false discovery rate at 19/20 * alpha = 0.0475 here; sd of the mean ~ 0.01.
    assert np.mean(false_discovery_proportions) <= 0.0475 + 0.03


def test_categorical_effect_does_not_depend_on_sample_size_ratio():
    """The effect used against the floor does not shrink when one sample is much larger, for features
    and for the predicted class (BBSD)."""
    from detectors import OutputShiftDetector

    rng = np.random.default_rng(8)
    ref = pd.DataFrame({"c": rng.choice(["a", "b"], 3000, p=[0.5, 0.5])})
    for n in (3000, 300_000):
        cur = pd.DataFrame({"c": rng.choice(["a", "b"], n, p=[0.35, 0.65])})
        t = CovariateShiftDetector().fit(ref).test(cur).features[0]
        assert t.drifted and 0.12 < t.effect_size < 0.18
        out = OutputShiftDetector().fit(ref["c"].to_numpy()).test(cur["c"].to_numpy())
        assert out.tests[0].name == "predicted_class" and out.tests[0].drifted


def test_with_tests_rebuilds_and_redecides():
    rng = np.random.default_rng(9)
    ref = pd.DataFrame({"x": rng.normal(size=500), "c": rng.choice(list("ab"), 500)})
    cur = pd.DataFrame({"x": rng.normal(1, 1, size=500), "c": rng.choice(list("ab"), 500)})
    res = CovariateShiftDetector().fit(ref).test(cur)
    assert res.is_shift
    import dataclasses

    quiet = res.with_tests([dataclasses.replace(t, drifted=False) for t in res.tests])
    assert not quiet.is_shift and quiet.drifted == () and res.is_shift
    with pytest.raises(ValueError):
        res.with_tests(res.tests[:1])
