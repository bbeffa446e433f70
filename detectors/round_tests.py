"""Statistics of a benchmark's rounds: the primary metric of one round with its interval, and the
one-sided test of "round k is better than round k-1" (Newcombe's interval and the pooled z-test
for proportions, a percentile bootstrap over each round's rows otherwise), decided online (LORD++,
:mod:`detectors.online_testing`) so that a published decision never changes.

Directions and kinds of metrics come from :mod:`detectors.metric_registry`; intervals from
:mod:`detectors.intervals` and :mod:`detectors.metric_ci`.

>>> est = metric_estimate("accuracy", np.array(["a", "b", "a", "a"]), np.array(["a", "b", "b", "a"]))
>>> est.value, est.k, est.n
(0.75, 3, 4)
>>> gain = improvement("error_rate", proportion(200, 500), proportion(100, 500))
>>> round(gain.difference, 2), gain.p_value < 1e-6
(-0.2, True)
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from detectors.base import Result
from detectors.confusion import confusion_counts, encode, sorted_classes
from detectors.intervals import wilson_interval
from detectors.metric_ci import metric_from_confusion, metric_with_ci
from detectors.metric_registry import canonical, is_proportion, lower_is_better
from detectors.online_testing import lord_plus_plus, proportion_gain

__all__ = ["Estimate", "Improvement", "proportion", "metric_estimate", "improvement", "decide_online",
           "gain_ruled_out", "N_BOOT"]

N_BOOT = 1000


@dataclass(frozen=True)
class Estimate(Result):
    """A value with its CI; ``k`` / ``n`` are the successes and trials of a proportion."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    k: int | None = None
    method: str = "wilson"


@dataclass(frozen=True)
class Improvement(Result):
    """Round k minus round k-1 on the primary metric; ``p_value`` is one-sided ("round k is better").

    ``level`` is the level round k was tested at, fixed from the decisions of the earlier rounds
    (LORD++); ``significant`` is ``p_value <= level``. ``p_value_adjusted`` is the p-value on the
    scale of ``alpha`` (``p_value * alpha / level``, capped at 1): significant when at most alpha.
    """

    difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    p_value_adjusted: float | None = None
    significant: bool = False
    method: str = "newcombe"
    level: float | None = None
    procedure: str | None = None


def proportion(k: int, n: int) -> Estimate:
    """``k`` successes of ``n`` with the Wilson interval."""
    if n == 0:
        return Estimate(None, None, None, 0, 0)
    lo, hi = wilson_interval(k, n)
    return Estimate(k / n, float(lo), float(hi), int(n), int(k))


def _counts(metric: str, y: np.ndarray, y_pred: np.ndarray, positive: str | None) -> tuple[int, int]:
    """Successes and trials of the proportion ``metric`` (canonical name)."""
    if metric in ("accuracy", "error_rate"):
        right = int(np.sum(y == y_pred))
        return (right if metric == "accuracy" else len(y) - right), len(y)
    if positive is None:
        raise ValueError(f"metric {metric!r} needs the positive class")
    truth, said = y == positive, y_pred == positive
    cells = {"sensitivity": (truth & said, truth), "fnr": (truth & ~said, truth),
             "precision": (truth & said, said), "npv": (~truth & ~said, ~said),
             "specificity": (~truth & ~said, ~truth), "fpr": (~truth & said, ~truth)}
    hit, of = cells[metric]
    return int(hit.sum()), int(of.sum())


def _statistic(metric: str, y, y_pred, scores, positive) -> float:
    """Point value of a non-proportion metric (from the confusion counts; DeLong's AUC)."""
    if metric == "auc":
        return metric_with_ci("auc", y, scores=scores, positive=positive, min_samples=2).value
    classes = sorted_classes(y, y_pred)
    cm = confusion_counts(encode(y, classes, "y"), encode(y_pred, classes, "y_pred"), len(classes))
    return float(metric_from_confusion(metric, cm))


def metric_estimate(metric: str, y: np.ndarray, y_pred: np.ndarray, scores: np.ndarray | None = None, *,
                    positive: str | None = None, seed: int = 0) -> Estimate:
    """The metric on one set of rows; ``y`` and ``y_pred`` are string arrays of shape (n,)."""
    if is_proportion(metric):
        return proportion(*_counts(canonical(metric), y, y_pred, positive))
    if len(y) == 0:
        return Estimate(None, None, None, 0, method="bootstrap")
    if metric == "auc":
        est = metric_with_ci("auc", y, scores=scores, positive=positive, min_samples=2)
    else:
        est = metric_with_ci(metric, y, y_pred, positive=positive, n_bootstrap=N_BOOT, random_state=seed)
    finite = est.status == "ok"
    return Estimate(est.value if finite else None, est.ci_low if finite else None, est.ci_high if finite else None,
                    int(est.n), None, est.method)


def improvement(metric: str, before: Estimate, after: Estimate, rows_before=None, rows_after=None, *,
                positive: str | None = None, seed: int = 0) -> Improvement:
    """``after - before`` with a 95 % CI and the one-sided p-value of "``after`` is better".

    Proportions: Newcombe's hybrid score interval and the pooled z-test. Other metrics: a
    percentile bootstrap resampling each round's rows; ``rows_*`` are ``(y, y_pred, scores)``.
    """
    if before.value is None or after.value is None:
        return Improvement(None, None, None, None)
    if before.k is not None and after.k is not None:
        gain = proportion_gain(before.k, before.n, after.k, after.n, lower_is_better=lower_is_better(metric))
        return Improvement(gain.difference, gain.ci_low, gain.ci_high, gain.p_value, method="newcombe")
    sign = -1.0 if lower_is_better(metric) else 1.0
    return _bootstrap_gain(metric, rows_before, rows_after, sign, positive, seed)


def _bootstrap_gain(metric, rows_before, rows_after, sign, positive, seed) -> Improvement:
    rng = np.random.default_rng(seed)
    point = [_statistic(metric, y, y_pred, scores, positive) for y, y_pred, scores in (rows_before, rows_after)]
    reps = np.empty(N_BOOT // 2)
    for b in range(reps.size):  # each round resampled on its own: the rounds are independent samples
        values = []
        for y, y_pred, scores in (rows_before, rows_after):
            idx = rng.integers(0, len(y), len(y))
            values.append(_statistic(metric, y[idx], y_pred[idx], None if scores is None else scores[idx], positive))
        reps[b] = values[1] - values[0]
    reps = reps[np.isfinite(reps)]
    diff = point[1] - point[0]
    if reps.size == 0 or not np.isfinite(diff):
        return Improvement(None, None, None, None, method="bootstrap")
    lo, hi = np.quantile(reps, [0.025, 0.975])
    # one-sided bootstrap p-value of "no gain": share of centred replicates at least as large
    centred = sign * (reps - diff)
    p = float((1 + np.sum(centred >= sign * diff)) / (1 + reps.size))
    return Improvement(float(diff), float(lo), float(hi), p, method="bootstrap")


def decide_online(gains: Sequence[Improvement], *, alpha: float = 0.05) -> list[Improvement]:
    """Each round's level and decision by LORD++ over the series' improvements in round order.

    Round k's level is a function of the decisions on rounds before k only, so the decisions of a
    prefix of the series are the same whatever rounds come after it. A gain that could not be
    tested (no p-value) is not significant and still spends its level.
    """
    online = lord_plus_plus([g.p_value for g in gains], alpha=alpha)
    out = []
    for g, level, hit in zip(gains, online.levels, online.rejected):
        scaled = None if g.p_value is None else float(min(1.0, g.p_value * alpha / level))
        out.append(dataclasses.replace(g, p_value_adjusted=scaled, significant=bool(hit), level=float(level),
                                       procedure=online.procedure))
    return out


def gain_ruled_out(gain: Improvement | None, metric: str, min_gain: float | None) -> bool:
    """The improvement's 95 % interval excludes a gain of ``min_gain`` or more (always True
    without a ``min_gain``; False when the gain could not be estimated)."""
    if min_gain is None:
        return True
    if gain is None or gain.ci_low is None or gain.ci_high is None:
        return False
    largest = -gain.ci_low if lower_is_better(metric) else gain.ci_high
    return bool(largest < min_gain)
