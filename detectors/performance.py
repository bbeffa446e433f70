"""Label-free estimation of production performance, and its comparison with observed metrics.

Two estimators, both producing an *expected confusion matrix* of the production rows from
which every metric follows (:func:`detectors.metric_ci.metric_from_confusion`):

* ``ConfidenceBasedEstimator`` (:mod:`detectors.confidence_based`, like NannyML's CBPE):
  benchmark scores are calibrated with isotonic regression, and the calibrated ``P(y | x)``
  of each production row gives its expected true class. Valid under covariate shift (``P(y | x)``
  fixed), NOT under label shift.
* :class:`PriorReweightedEstimator`: benchmark ``P(yhat | y)`` with BBSE production priors
  gives ``P(y | yhat)`` in production. Valid under label shift (``P(x | y)`` fixed).

Intervals are for the metric *the model actually achieved on these production rows* (what
labelling all of them would show): each bootstrap replicate re-estimates the model of
``P(y | ...)`` on resampled data and then draws the unknown labels from it. So observed
production metrics should fall inside at the nominal rate when the estimator's assumption
holds, which is what :func:`compare_performance` checks.

Verbs. The estimators are ``fit(...)`` then ``estimate(...)``, not ``test``: they estimate a
quantity (production metrics) with a confidence interval and test no hypothesis.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.base import (
    DetectorInputError,
    Result,
    check_fitted,
    check_fraction,
    check_int,
    check_names,
    check_number,
    check_random_state,
    renamed_parameters,
)
from detectors.confusion import as_label_array, encode, match_columns, parse_predictions, sorted_classes
from detectors.intervals import z_value
from detectors.label_shift import LabelShiftEstimator, check_regularization, solve_priors
from detectors.metric_ci import (
    MetricEstimate,
    ObservedPerformance,
    infer_positive,
    metric_from_confusion,
    metric_with_ci,
    observed_performance,
)

__all__ = ["PriorReweightedEstimator", "PerformanceEstimate",
           "PerformanceComparison", "MetricComparison", "compare_performance", "metric_with_ci",
           "observed_performance", "ESTIMATED_METRICS"]

# metrics an expected confusion matrix gives (per-class recall is always added)
ESTIMATED_METRICS = ("accuracy", "balanced_accuracy", "macro_f1", "sensitivity", "specificity", "fpr", "f1")


@dataclass(frozen=True)
class PerformanceEstimate(Result):
    """Label-free estimates of production metrics (``metrics``: tuple of MetricEstimate)."""

    method: str
    metrics: tuple
    n_benchmark: int
    n_production: int
    confidence: float
    status: str = "ok"

    def get(self, key: str) -> MetricEstimate:
        return next(m for m in self.metrics if m.key == key)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "status": self.status, "n_benchmark": self.n_benchmark,
                "n_production": self.n_production, "confidence": self.confidence,
                "metrics": {m.key: m.to_dict() for m in self.metrics}}


@dataclass(frozen=True)
class MetricComparison(Result):
    """Estimated versus observed value of one metric; ``consistent``: observed inside the estimate's CI."""

    name: str
    estimated: float
    estimated_ci: tuple
    observed: float
    observed_ci: tuple
    difference: float
    consistent: bool
    n: int


@dataclass(frozen=True)
class PerformanceComparison(Result):
    method: str
    rows: tuple

    def get(self, key: str) -> MetricComparison:
        return next(r for r in self.rows if r.name == key)


def compare_performance(estimate: PerformanceEstimate, observed: ObservedPerformance) -> PerformanceComparison:
    """Pair every estimated metric with its observed counterpart (``difference = observed - estimated``)."""
    rows = []
    for e in estimate.metrics:
        match = [o for o in observed.metrics if o.key == e.key]
        if not match:
            continue
        o = match[0]
        inside = bool(np.isfinite(o.value) and e.ci_low <= o.value <= e.ci_high)
        rows.append(MetricComparison(e.key, e.value, (e.ci_low, e.ci_high), o.value, (o.ci_low, o.ci_high),
                                     o.value - e.value, inside, o.n))
    return PerformanceComparison(estimate.method, tuple(rows))


class _ConfusionEstimator:
    """Shared scoring: metrics from an expected confusion matrix and its replicates."""

    # parameters and learned state of the estimators this is mixed into
    metrics: Any
    n_bootstrap: int
    confidence: float
    min_samples: int
    random_state: int
    positive: Any
    classes_: np.ndarray
    pos_: int | None
    n_benchmark_: int

    def _check_common_params(self) -> None:
        """``metrics``, ``n_bootstrap``, ``confidence``, ``min_samples``, ``random_state``."""
        check_names("metrics", self.metrics, ESTIMATED_METRICS)
        check_int("n_bootstrap", self.n_bootstrap, minimum=1)
        check_fraction("confidence", self.confidence)
        check_int("min_samples", self.min_samples, minimum=1)
        check_random_state(self.random_state)

    def _default_metrics(self) -> list[str]:
        if self.metrics is not None:
            return list(self.metrics)
        names = ["accuracy", "balanced_accuracy", "macro_f1"]
        if len(self.classes_) == 2 and self.pos_ is not None:
            names += ["sensitivity", "specificity", "fpr", "f1"]
        return names

    def _summarise(self, method: str, expected_cm: np.ndarray, cm_boot: np.ndarray, n_p: int) -> PerformanceEstimate:
        z = z_value(self.confidence)
        out = []
        keys: list[tuple[str, int | None]] = [(m, None) for m in self._default_metrics()]
        keys += [("recall", c) for c in range(len(self.classes_))]
        for name, cls in keys:
            value = float(metric_from_confusion(name, expected_cm, self.pos_, cls))
            reps = metric_from_confusion(name, cm_boot, self.pos_, cls)
            reps = reps[np.isfinite(reps)]
            # Normal interval with the bootstrap standard error: a standard deviation is far
            # steadier than 2.5 % / 97.5 % quantiles of a few hundred replicates.
            half = z * float(reps.std(ddof=1)) if reps.size > 1 else np.nan
            lo, hi = max(0.0, value - half), min(1.0, value + half)
            label = None if cls is None else self.classes_[cls]
            out.append(MetricEstimate(name, value, lo, hi, n_p, "bootstrap", label))
        return PerformanceEstimate(method, tuple(out), int(self.n_benchmark_), int(n_p), float(self.confidence))

    def _positive_index(self) -> int | None:
        positive = self.positive if self.positive is not None else infer_positive(self.classes_.tolist())
        if positive is None:
            return None
        hits = [i for i, c in enumerate(self.classes_.tolist()) if c == positive or str(c) == str(positive)]
        if not hits:
            raise DetectorInputError(f"positive={positive!r} is not one of the classes {self.classes_.tolist()}.")
        return hits[0]


class PriorReweightedEstimator(_ConfusionEstimator):
    """Expected production metrics from benchmark ``P(yhat | y)`` and BBSE production priors.

    Parameters
    ----------
    positive : label, optional
    metrics : sequence of str, optional
    regularization, max_condition : see :class:`LabelShiftEstimator`
    n_bootstrap, confidence, min_samples, random_state

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> conf = np.array([[.9, .1], [.3, .7]])        # P(yhat | y), synthetic
    >>> def simulate(prior, n):
    ...     y = (rng.random(n) < prior).astype(int)
    ...     return y, (rng.random(n) < conf[y, 1]).astype(int)
    >>> y_b, p_b = simulate(0.5, 4000); y_p, p_p = simulate(0.2, 4000)
    >>> est = PriorReweightedEstimator().fit(y_b, p_b).estimate(p_p)
    >>> acc = est.get("accuracy"); bool(acc.ci_low <= np.mean(y_p == p_p) <= acc.ci_high)
    True
    """

    def __init__(self, *, positive=None, metrics=None, regularization="auto", max_condition=20.0,
                 n_bootstrap=200, confidence=0.95, min_samples=50, random_state=0):
        self.positive = positive
        self.metrics = metrics
        self.regularization = regularization
        self.max_condition = max_condition
        self.n_bootstrap = n_bootstrap
        self.confidence = confidence
        self.min_samples = min_samples
        self.random_state = random_state

    def _check_params(self) -> None:
        self._check_common_params()
        check_regularization(self.regularization)
        check_number("max_condition", self.max_condition, minimum=1, open_low=True)

    def fit(self, y_true, y_pred, *, classes=None) -> "PriorReweightedEstimator":
        """Learn ``P(yhat | y)``; ``y_pred`` hard labels, or probabilities (their argmax is used)."""
        self._check_params()
        known = sorted_classes(as_label_array(y_true, "y_true"))
        y_pred, self.proba_classes_ = _hard_labels(y_pred, classes, "y_pred", known)
        self.label_shift_ = LabelShiftEstimator(
            n_bootstrap=self.n_bootstrap, regularization=self.regularization, confidence=self.confidence,
            min_samples=self.min_samples, max_condition=self.max_condition, random_state=self.random_state,
        ).fit(y_true, y_pred)
        ls = self.label_shift_
        self.classes_ = ls.pred_classes_  # union of true and predicted classes: square matrices
        self.true_index_ = encode(ls.classes_, self.classes_, "classes")
        self.n_benchmark_ = ls.n_benchmark_
        self.pos_ = self._positive_index()
        return self

    @renamed_parameters(y_pred_production="y_pred")
    def estimate(self, y_pred) -> PerformanceEstimate:
        """Estimate the metrics of production predictions ``y_pred`` (labels or probabilities, as in
        ``fit``; ``y_pred_production=`` is the deprecated name)."""
        check_fitted(self, "label_shift_")
        self._check_params()
        ls = self.label_shift_
        y_pred, _ = _hard_labels(y_pred, None, "y_pred", ls.pred_classes_, self.proba_classes_)
        mu, counts, rows = ls.production_outputs(y_pred)
        n_p = int(counts.sum())
        if n_p < self.min_samples:
            return _insufficient_estimate("prior_reweighted", self, n_p)
        q = solve_priors(ls.joint_, mu, ls.lambda_)
        expected = self._expected_confusion(ls.joint_, q, counts)
        rng = np.random.default_rng(self.random_state)
        joint_b, _, q_b = ls.bootstrap_priors(mu, n_p, rows, rng)
        post = self._posterior(joint_b, q_b)  # (B, k_pred, k_true)
        draws = rng.multinomial(counts.astype(np.int64), np.nan_to_num(post, nan=0.0))
        boot = np.zeros((len(q_b), len(self.classes_), len(self.classes_)))
        boot[:, self.true_index_, :] = np.swapaxes(draws, -1, -2)
        valid = np.isfinite(q_b).all(1)
        return self._summarise("prior_reweighted", expected, boot[valid], n_p)

    def _posterior(self, joint: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``P(y | yhat)`` in production ∝ ``P(yhat | y) q(y)``; the prior itself where undefined."""
        with np.errstate(invalid="ignore", divide="ignore"):
            A = joint / joint.sum(-1, keepdims=True)  # (..., k_true, k_pred)
            unnorm = np.swapaxes(A * q[..., :, None], -1, -2)  # (..., k_pred, k_true)
            total = unnorm.sum(-1, keepdims=True)
            post = unnorm / total
        fallback = np.broadcast_to(q[..., None, :], post.shape)
        return np.where((total > 0) & np.isfinite(post), post, fallback)

    def _expected_confusion(self, joint, q, counts) -> np.ndarray:
        k = len(self.classes_)
        cm = np.zeros((k, k))
        cm[self.true_index_, :] = (self._posterior(joint, q) * counts[:, None]).T
        return cm


def _hard_labels(y_pred, classes, name: str, known, fitted_columns=None):
    """Hard labels from labels or probabilities (argmax); returns ``(labels, column classes or None)``.

    Column names (``proba_1``) are matched to ``known`` labels (``1``) by their string form;
    a bare probability array reuses the column classes seen in ``fit``.
    """
    kind, values, column_classes = parse_predictions(y_pred, classes, name)
    if kind == "labels":
        return values, None
    column_classes = fitted_columns if column_classes is None else match_columns(column_classes, known)
    if column_classes is None:
        raise DetectorInputError(f"{name} holds probabilities: pass classes=[...] (column order) or a DataFrame.")
    if len(column_classes) != values.shape[1]:
        raise DetectorInputError(f"{name} has {values.shape[1]} probability columns, expected {len(column_classes)}.")
    return np.asarray(column_classes, dtype=object)[values.argmax(1)], column_classes


def _insufficient_estimate(method: str, est, n_p: int) -> PerformanceEstimate:
    nan = float("nan")
    names = [(m, None) for m in est._default_metrics()] + [("recall", c) for c in est.classes_.tolist()]
    metrics = tuple(MetricEstimate(m, nan, nan, nan, n_p, "bootstrap", c, "insufficient_data") for m, c in names)
    return PerformanceEstimate(method, metrics, int(est.n_benchmark_), int(n_p), float(est.confidence),
                               "insufficient_data")
