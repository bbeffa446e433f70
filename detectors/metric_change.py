"""The benchmark → production change of one metric over all rows: a plain two-sample test.

The within-context change test (:mod:`detectors.within_context`) asks whether the metric changed
*inside* the contexts both datasets share, so it cannot run when production lies entirely in a
context the benchmark lacks, which is exactly when the metric may have collapsed. This test asks
the simpler question every audit with labelled production must answer: is the production metric
different from the benchmark's?

* proportions (accuracy, sensitivity, specificity, fpr, recall, precision): pooled two-proportion
  z-test, Newcombe's hybrid score interval for the difference;
* AUC: DeLong standard errors of the two independent AUCs, z-test;
* balanced accuracy, macro-F1, F1: multinomial bootstrap of both confusion matrices, a
  centred-bootstrap p-value ``(1 + #{|d* - d| >= |d|}) / (1 + B)`` and a percentile interval.

The effect is ``production - benchmark`` in metric units (signed); the decision is the audit-wide
rule (adjusted p < alpha and |effect| >= floor), re-taken after the audit's correction.

>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 2, 1000)
>>> good, bad = np.where(rng.random(1000) < 0.9, y, 1 - y), np.where(rng.random(1000) < 0.3, y, 1 - y)
>>> res = metric_change_test("accuracy", y, good, y, bad, alpha=0.05, effect_floor=0.05)
>>> res.is_shift, res.test.method, round(res.test.effect_size, 1)
(True, 'two_proportion_z', -0.6)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from detectors.base import DetectorInputError, Result, ShiftTest, check_alpha, check_in, check_int, check_number
from detectors.confusion import as_label_array, confusion_counts, encode, sorted_classes
from detectors.decision import SingleTestMixin, decide
from detectors.intervals import newcombe_interval, z_value
from detectors.metric_ci import (
    METRICS,
    NEEDS_CLASS,
    NEEDS_POSITIVE,
    WILSON_METRICS,
    _wilson_counts,
    delong_auc,
    infer_positive,
    metric_from_confusion,
)

__all__ = ["MetricChange", "metric_change_test"]


@dataclass(frozen=True)
class MetricChange(SingleTestMixin, Result):
    """The test of ``metric`` between benchmark and production; ``test.effect_size`` is production − benchmark."""

    metric: str
    test: ShiftTest
    is_shift: bool
    benchmark_value: float
    production_value: float
    difference_ci: tuple


def _index(classes: np.ndarray, label: Any) -> int:
    hits = np.flatnonzero(classes.astype(str) == str(label))
    return int(hits[0]) if hits.size else -1


def metric_change_test(metric: str, y_true_b, y_pred_b, y_true_p, y_pred_p, *, scores_b=None, scores_p=None,
                       positive=None, alpha: float = 0.05, effect_floor: float = 0.05, min_samples: int = 30,
                       n_bootstrap: int = 2000, confidence: float = 0.95, random_state: int | None = 0,
                       name: str = "overall") -> MetricChange:
    """Two-sample test of ``metric`` on the benchmark rows against the production rows.

    Parameters
    ----------
    metric : str, one of :data:`detectors.metric_ci.METRICS`
    y_true_b, y_pred_b : array-like of shape (n_b,)
    y_true_p, y_pred_p : array-like of shape (n_p,)
    scores_b, scores_p : array-like of shape (n_b,), (n_p,), optional
        Positive-class scores; needed for ``auc``.
    positive : label, optional
        The positive class of class-specific metrics (inferred for 0/1 labels).
    alpha, effect_floor : float
        The decision rule: adjusted p < alpha and |difference| >= effect_floor.
    min_samples : int
        Below this denominator on either side the test says ``insufficient_data``.

    Returns
    -------
    MetricChange
    """
    check_in("metric", metric, METRICS)
    check_alpha(alpha)
    check_number("effect_floor", effect_floor, minimum=0)
    check_int("min_samples", min_samples)
    check_int("n_bootstrap", n_bootstrap, minimum=99)
    yb, pb, yp, pp = (as_label_array(a, n) for a, n in ((y_true_b, "y_true_b"), (y_pred_b, "y_pred_b"),
                                                         (y_true_p, "y_true_p"), (y_pred_p, "y_pred_p")))
    if len({a.dtype.kind for a in (yb, pb, yp, pp)}) > 1:
        yb, pb, yp, pp = (a.astype(str) for a in (yb, pb, yp, pp))  # labels of mixed types compare as text
    # the same union in the same first-seen order as of the two concatenations, without copying them
    # (and a read-only label array's distinct values are already known: detectors.confusion)
    classes = sorted_classes(yb, yp, pb, pp)
    if metric in NEEDS_POSITIVE and positive is None:
        positive = infer_positive(classes.tolist())
    pos = _index(classes, positive) if metric in NEEDS_POSITIVE else None
    if pos == -1:
        raise DetectorInputError(f"The positive class {positive!r} is in neither dataset's labels.")
    if metric in NEEDS_CLASS:
        raise DetectorInputError(f"{metric} is per class; test the primary metric instead.")
    k = len(classes)
    cm_b = confusion_counts(encode(yb, classes, "y_true_b"), encode(pb, classes, "y_pred_b"), k).astype(float)
    cm_p = confusion_counts(encode(yp, classes, "y_true_p"), encode(pp, classes, "y_pred_p"), k).astype(float)
    rng = np.random.default_rng(random_state)
    if metric in WILSON_METRICS:
        out = _proportions(metric, cm_b, cm_p, pos, confidence, min_samples)
    elif metric == "auc":
        out = _auc(yb, yp, scores_b, scores_p, classes, pos, confidence, min_samples)
    else:
        out = _bootstrap(metric, cm_b, cm_p, pos, n_bootstrap, confidence, min_samples, rng)
    method, stat, p, b, v, ci, n_b, n_p = out
    nan = float("nan")
    details = {"metric": metric, "benchmark_value": b, "production_value": v, "difference_ci": list(ci),
               "interval": {"two_proportion_z": "newcombe", "delong_z": "delong", "bootstrap": "bootstrap"}[method],
               "n_benchmark_rows": int(len(yb)), "n_production_rows": int(len(yp))}
    if p != p:
        test = ShiftTest(name, method, nan, nan, nan, nan, "metric_difference", float(effect_floor), n_b, n_p,
                         False, kind="overall_metric", status="insufficient_data", details=details)
    else:
        test = ShiftTest(name, method, float(stat), float(p), float(p), float(v - b), "metric_difference",
                         float(effect_floor), n_b, n_p, bool(decide(p, v - b, alpha=alpha, effect_floor=effect_floor)),
                         kind="overall_metric", details=details)
    return MetricChange(metric, test, bool(test.drifted), float(b), float(v), tuple(ci))


def _proportions(metric, cm_b, cm_p, pos, confidence, min_samples):
    k1, n1 = _wilson_counts(metric, cm_b, pos, None)
    k2, n2 = _wilson_counts(metric, cm_p, pos, None)
    n1, n2 = int(n1), int(n2)
    nan = float("nan")
    if min(n1, n2) < min_samples:
        return "two_proportion_z", nan, nan, k1 / n1 if n1 else nan, k2 / n2 if n2 else nan, (nan, nan), n1, n2
    p1, p2 = k1 / n1, k2 / n2
    pooled = (k1 + k2) / (n1 + n2)
    se = np.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    z = (p2 - p1) / se if se > 0 else 0.0
    p = float(2 * stats.norm.sf(abs(z))) if se > 0 else 1.0
    ci = newcombe_interval(k1, n1, k2, n2, confidence=confidence)
    return "two_proportion_z", float(z), p, float(p1), float(p2), (float(ci[0]), float(ci[1])), n1, n2


def _auc(yb, yp, scores_b, scores_p, classes, pos, confidence, min_samples):
    nan = float("nan")
    if scores_b is None or scores_p is None:
        raise DetectorInputError("auc needs the positive-class scores of both datasets.")
    sides = []
    for y, s in ((yb, scores_b), (yp, scores_p)):
        s = np.asarray(s, float)
        is_pos = y.astype(str) == str(classes[pos])
        sides.append((s[is_pos], s[~is_pos]))
    n1, n2 = (int(min(len(a), len(b))) for a, b in sides)
    if min(n1, n2) < min_samples:
        return "delong_z", nan, nan, nan, nan, (nan, nan), n1, n2
    z_c = z_value(confidence)
    (a1, l1, _), (a2, l2, _) = (delong_auc(a, b, confidence=confidence) for a, b in sides)
    se1, se2 = (a1 - l1) / z_c, (a2 - l2) / z_c  # DeLong standard errors (interval before clipping)
    se = float(np.hypot(se1, se2))
    z = (a2 - a1) / se if se > 0 else 0.0
    p = float(2 * stats.norm.sf(abs(z))) if se > 0 else 1.0
    d = a2 - a1
    return "delong_z", float(z), p, float(a1), float(a2), (d - z_c * se, d + z_c * se), n1, n2


def _bootstrap(metric, cm_b, cm_p, pos, n_bootstrap, confidence, min_samples, rng):
    nan = float("nan")
    n1, n2 = int(cm_b.sum()), int(cm_p.sum())
    if min(n1, n2) < min_samples:
        return "bootstrap", nan, nan, nan, nan, (nan, nan), n1, n2
    b, v = float(metric_from_confusion(metric, cm_b, pos)), float(metric_from_confusion(metric, cm_p, pos))
    reps = []
    for cm, n in ((cm_b, n1), (cm_p, n2)):
        draws = rng.multinomial(n, cm.ravel() / n, size=n_bootstrap).reshape(n_bootstrap, *cm.shape)
        reps.append(metric_from_confusion(metric, draws, pos))
    diff = reps[1] - reps[0]
    diff = diff[np.isfinite(diff)]
    d = v - b
    if diff.size == 0 or not np.isfinite(d):
        return "bootstrap", nan, nan, b, v, (nan, nan), n1, n2
    p = float((1 + np.count_nonzero(np.abs(diff - d) >= abs(d))) / (1 + diff.size))
    a = (1 - confidence) / 2
    lo, hi = np.quantile(diff, [a, 1 - a])
    sd = float(diff.std())
    return "bootstrap", (d / sd if sd > 0 else 0.0), p, b, v, (float(lo), float(hi)), n1, n2

