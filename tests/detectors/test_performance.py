"""Observed metrics with CIs and label-free performance estimation.

Shifts are synthetic (simulated classifiers, Gaussian tasks, prior-shifted resampling of
load_breast_cancer), and labelled as such.
"""
from __future__ import annotations

import doctest
import json
import time

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

import detectors.confidence_based as confidence_based_module
import detectors.metric_ci as metric_ci_module
import detectors.performance as performance_module
from detectors import (
    ConfidenceBasedEstimator,
    DetectorInputError,
    PriorReweightedEstimator,
    compare_performance,
    metric_with_ci,
    observed_performance,
)

CONF = np.array([[.80, .10, .05, .05], [.10, .75, .10, .05], [.05, .10, .80, .05], [.05, .05, .10, .80]])


def simulate(rng, prior, n, conf=CONF):
    prior = np.asarray(prior)
    y = rng.choice(len(prior), size=n, p=prior)
    yhat = np.minimum((rng.random(n)[:, None] > conf[y].cumsum(1)).sum(1), conf.shape[1] - 1)
    return y, yhat


def logistic_task(rng, n, shift=0.0):
    """Binary task with P(y | x) fixed; scores are deliberately miscalibrated (synthetic)."""
    x = rng.normal(shift, 1, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * x))).astype(int)
    return y, 1 / (1 + np.exp(-3 * x))


@pytest.mark.parametrize("module", [metric_ci_module, performance_module, confidence_based_module])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


def test_metric_values_match_scikit_learn():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 800)
    s = np.clip(0.35 * y + 0.65 * rng.random(800), 0, 1)
    p = (s > 0.5).astype(int)
    expected = {
        "accuracy": skm.accuracy_score(y, p), "balanced_accuracy": skm.balanced_accuracy_score(y, p),
        "macro_f1": skm.f1_score(y, p, average="macro"), "f1": skm.f1_score(y, p),
        "sensitivity": skm.recall_score(y, p), "specificity": skm.recall_score(y, p, pos_label=0),
        "fpr": 1 - skm.recall_score(y, p, pos_label=0), "auc": skm.roc_auc_score(y, s),
    }
    for name, value in expected.items():
        m = metric_with_ci(name, y, p, s)
        assert m.value == pytest.approx(value), name
        assert m.ci_low <= m.value <= m.ci_high and m.status == "ok"
    y3, p3 = simulate(rng, [0.25] * 4, 600)
    assert metric_with_ci("recall", y3, p3, cls=2).value == pytest.approx(
        skm.recall_score(y3, p3, labels=[2], average=None)[0])
    assert metric_with_ci("precision", y3, p3, cls=2).value == pytest.approx(
        skm.precision_score(y3, p3, labels=[2], average=None)[0])
    assert metric_with_ci("macro_f1", y3, p3).value == pytest.approx(skm.f1_score(y3, p3, average="macro"))


def test_denominators_and_methods():
    y = np.array([1] * 30 + [0] * 70)
    p = np.array([1] * 25 + [0] * 5 + [0] * 60 + [1] * 10)
    assert metric_with_ci("sensitivity", y, p).n == 30
    assert metric_with_ci("specificity", y, p).n == 70
    assert metric_with_ci("accuracy", y, p).method == "wilson"
    assert metric_with_ci("balanced_accuracy", y, p).method == "bootstrap"
    assert metric_with_ci("auc", y, None, p.astype(float)).method == "delong"


@pytest.mark.slow
def test_intervals_cover_population_values():
    """Wilson (accuracy), confusion bootstrap (balanced accuracy), DeLong (AUC): ~95 % coverage."""
    truth_bacc = np.mean(np.diag(CONF))
    truth_acc = 0.25 * np.trace(CONF)
    d = 1.0
    truth_auc = stats.norm.cdf(d / np.sqrt(2))
    hits = {"accuracy": [], "balanced_accuracy": [], "auc": []}
    for seed in range(300):
        rng = np.random.default_rng(seed)
        y, p = simulate(rng, [0.25] * 4, 300)
        m = metric_with_ci("accuracy", y, p)
        hits["accuracy"].append(m.ci_low <= truth_acc <= m.ci_high)
        m = metric_with_ci("balanced_accuracy", y, p, n_bootstrap=300, random_state=seed)
        hits["balanced_accuracy"].append(m.ci_low <= truth_bacc <= m.ci_high)
        yb = rng.integers(0, 2, 300)
        m = metric_with_ci("auc", yb, None, rng.normal(d * yb, 1.0))
        hits["auc"].append(m.ci_low <= truth_auc <= m.ci_high)
    for name, h in hits.items():
        assert abs(np.mean(h) - 0.95) <= 0.04, (name, np.mean(h))


def test_metric_with_ci_is_fast_enough_for_many_slices():
    rng = np.random.default_rng(1)
    y, p = simulate(rng, [0.25] * 4, 2000)
    start = time.perf_counter()
    for _ in range(100):
        metric_with_ci("accuracy", y, p)
        metric_with_ci("macro_f1", y, p)
    assert (time.perf_counter() - start) / 200 < 0.02  # seconds per call, generous for a shared machine


def test_edge_cases_are_insufficient_or_clear_errors():
    only_negatives = metric_with_ci("sensitivity", [0, 0, 0, 0], [0, 1, 0, 0])
    assert only_negatives.status == "insufficient_data" and only_negatives.n == 0
    assert metric_with_ci("specificity", [0, 0, 0, 0], [0, 1, 0, 0]).value == pytest.approx(0.75)
    assert metric_with_ci("accuracy", [1, 0, 1], [1, 0, 0], min_samples=10).status == "insufficient_data"
    assert metric_with_ci("auc", [1, 1, 1], None, [0.2, 0.3, 0.9]).status == "insufficient_data"
    with pytest.raises(DetectorInputError, match=r"metric must be one of .*got .precision_at_k."):
        metric_with_ci("precision_at_k", [1], [1])
    with pytest.raises(DetectorInputError, match="scores"):
        metric_with_ci("auc", [0, 1], [0, 1])
    with pytest.raises(DetectorInputError, match="positive="):
        metric_with_ci("sensitivity", ["cat", "dog"], ["cat", "cat"])
    with pytest.raises(DetectorInputError, match="rows"):
        metric_with_ci("accuracy", [0, 1], [0])
    with pytest.raises(DetectorInputError, match="missing"):
        metric_with_ci("accuracy", [0, np.nan], [0, 1])
    assert metric_with_ci("sensitivity", ["cat", "dog"], ["cat", "cat"], positive="dog").value == 0.0


def test_observed_performance_has_per_class_recall_and_serialises():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 500)
    s = np.clip(0.4 * y + 0.6 * rng.random(500), 0, 1)
    obs = observed_performance(y, (s > 0.5).astype(int), s)
    keys = {m.key for m in obs.metrics}
    assert {"accuracy", "balanced_accuracy", "macro_f1", "sensitivity", "specificity", "auc", "recall[0]",
            "recall[1]"} <= keys
    d = json.loads(json.dumps(obs.to_dict()))
    assert d["metrics"]["recall[1]"]["cls"] == 1 and d["n"] == 500


@pytest.mark.slow
def test_prior_reweighted_interval_covers_observed_accuracy_under_prior_shift():
    """Pure (synthetic) prior shift: the realised production metrics fall inside at ~95 %."""
    hits = {"accuracy": [], "balanced_accuracy": [], "macro_f1": []}
    for seed in range(150):
        rng = np.random.default_rng(seed)
        y_b, p_b = simulate(rng, [0.25] * 4, 2000)
        y_p, p_p = simulate(rng, [0.55, 0.2, 0.15, 0.1], 2000)
        est = PriorReweightedEstimator(n_bootstrap=200, random_state=seed).fit(y_b, p_b).estimate(p_p)
        obs = observed_performance(y_p, p_p, n_bootstrap=50)
        for name in hits:
            e = est.get(name)
            hits[name].append(e.ci_low <= obs.get(name).value <= e.ci_high)
    for name, h in hits.items():
        assert 0.89 <= np.mean(h) <= 0.995, (name, np.mean(h))


def test_prior_reweighting_beats_ignoring_the_shift_on_a_real_classifier():
    """load_breast_cancer with a logistic regression; production is a prior-shifted resample (synthetic)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    train, bench, pool = order[:150], order[150:360], order[360:]
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.02, max_iter=1000)).fit(X[train], y[train])
    # Production: 90 % malignant (class 0), resampled with replacement from held-out rows.
    pool_pos, pool_neg = pool[y[pool] == 1], pool[y[pool] == 0]
    prod = np.r_[rng.choice(pool_neg, 900), rng.choice(pool_pos, 100)]
    p_bench, p_prod = model.predict(X[bench]), model.predict(X[prod])
    observed = np.mean(p_prod == y[prod])
    est = PriorReweightedEstimator(min_samples=30).fit(y[bench], p_bench).estimate(p_prod)
    acc = est.get("accuracy")
    assert acc.ci_low <= observed <= acc.ci_high
    naive = np.mean(p_bench == y[bench])  # benchmark accuracy, which ignores the shift
    assert abs(acc.value - observed) <= abs(naive - observed) + 0.01
    cbpe = ConfidenceBasedEstimator(min_samples=30).fit(y[bench], model.predict_proba(X[bench])[:, 1])
    assert np.isfinite(cbpe.estimate(model.predict_proba(X[prod])[:, 1]).get("accuracy").value)


@pytest.mark.slow
def test_confidence_based_interval_covers_observed_under_covariate_shift():
    hits = {"accuracy": [], "sensitivity": [], "specificity": []}
    for seed in range(150):
        rng = np.random.default_rng(seed)
        y_b, s_b = logistic_task(rng, 4000)
        y_p, s_p = logistic_task(rng, 1000, shift=0.7)
        est = ConfidenceBasedEstimator(n_bootstrap=100, random_state=seed).fit(y_b, s_b).estimate(s_p)
        pred = (s_p >= 0.5).astype(int)
        observed = {"accuracy": np.mean(pred == y_p), "sensitivity": np.mean(pred[y_p == 1]),
                    "specificity": np.mean(pred[y_p == 0] == 0)}
        for name, value in observed.items():
            e = est.get(name)
            hits[name].append(e.ci_low <= value <= e.ci_high)
    for name, h in hits.items():
        assert 0.89 <= np.mean(h) <= 0.99, (name, np.mean(h))


def test_confidence_based_multiclass_dataframe_and_uncalibrated_mode():
    import pandas as pd

    rng = np.random.default_rng(3)
    means = np.array([[0, 0], [2, 0], [0, 2]])

    def task(n):
        y = rng.integers(0, 3, n)
        x = means[y] + rng.normal(size=(n, 2))
        logits = -0.5 * ((x[:, None, :] - means[None]) ** 2).sum(-1)
        pr = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        return y, pd.DataFrame(pr, columns=["proba_0", "proba_1", "proba_2"])

    y_b, f_b = task(3000)
    y_p, f_p = task(1500)
    for calibrate in (True, False):
        est = ConfidenceBasedEstimator(calibrate=calibrate, n_bootstrap=50).fit(y_b, f_b).estimate(f_p)
        acc = est.get("accuracy")
        assert acc.ci_low <= np.mean(f_p.to_numpy().argmax(1) == y_p) <= acc.ci_high
        assert {m.key for m in est.metrics} >= {"accuracy", "balanced_accuracy", "macro_f1", "recall[2]"}
    reordered = f_p[["proba_2", "proba_0", "proba_1"]]
    again = ConfidenceBasedEstimator(n_bootstrap=50).fit(y_b, f_b).estimate(reordered)
    assert again.get("accuracy").value == pytest.approx(est.get("accuracy").value, abs=0.02)


def test_comparison_flags_degradation_that_estimation_cannot_see():
    """A (synthetic) concept shift: production labels flip on 25 % of rows."""
    rng = np.random.default_rng(4)
    y_b, s_b = logistic_task(rng, 3000)
    y_p, s_p = logistic_task(rng, 2000)
    flip = rng.random(2000) < 0.25
    y_p = np.where(flip, 1 - y_p, y_p)
    est = ConfidenceBasedEstimator(n_bootstrap=60).fit(y_b, s_b).estimate(s_p)
    obs = observed_performance(y_p, (s_p >= 0.5).astype(int), s_p)
    cmp = compare_performance(est, obs)
    row = cmp.get("accuracy")
    assert not row.consistent and row.difference < -0.05
    assert row.difference == pytest.approx(row.observed - row.estimated)
    assert json.dumps(cmp.to_dict())


def test_estimators_report_insufficient_data_and_reject_bad_input():
    rng = np.random.default_rng(5)
    y_b, p_b = simulate(rng, [0.25] * 4, 500)
    est = PriorReweightedEstimator().fit(y_b, p_b).estimate(p_b[:10])
    assert est.status == "insufficient_data" and np.isnan(est.get("accuracy").value)
    y, s = logistic_task(rng, 500)
    cb = ConfidenceBasedEstimator().fit(y, s)
    assert cb.estimate(s[:5]).status == "insufficient_data"
    with pytest.raises(DetectorInputError):
        cb.estimate(np.r_[s[:100], np.nan])
    with pytest.raises(DetectorInputError):
        cb.estimate(s * 3)
    with pytest.raises(DetectorInputError, match="positive="):
        ConfidenceBasedEstimator().fit(np.array(["a", "b"] * 50), s[:100])
    with pytest.raises(DetectorInputError, match="unseen"):
        PriorReweightedEstimator().fit(y_b, p_b).estimate(np.r_[p_b, 7])


def test_prior_reweighted_accepts_probability_frames_with_integer_labels():
    import pandas as pd

    rng = np.random.default_rng(6)
    y_b, p_b = simulate(rng, [0.25] * 4, 2000)
    y_p, p_p = simulate(rng, [0.55, 0.2, 0.15, 0.1], 2000)

    def as_frame(pred):  # argmax of these (synthetic) probabilities is the simulated prediction
        proba = np.full((len(pred), 4), 0.1)
        proba[np.arange(len(pred)), pred] = 0.7
        return pd.DataFrame(proba, columns=[f"proba_{c}" for c in range(4)])

    from_labels = PriorReweightedEstimator().fit(y_b, p_b).estimate(p_p)
    est = PriorReweightedEstimator().fit(y_b, as_frame(p_b))
    assert est.classes_.tolist() == [0, 1, 2, 3]
    assert est.estimate(as_frame(p_p)).get("accuracy").value == pytest.approx(from_labels.get("accuracy").value)
    assert est.estimate(as_frame(p_p).to_numpy()).get("macro_f1").value == pytest.approx(
        from_labels.get("macro_f1").value)
