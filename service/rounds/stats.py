"""Round statistics: the primary metric with a CI, the improvement of a round over the one before
(Newcombe for proportions, bootstrap otherwise, one-sided), each round's decision at a level fixed
from the earlier rounds (LORD++, :mod:`detectors.online_testing`), MER / vMER with Wilson
intervals, the stall and the saturation rules.

Why online: correcting the whole series at once (Holm) re-decides every earlier round each time a
round arrives, so gains that were significant stop being so and the stall moves earlier. Here
round k's level depends only on the decisions of rounds 2 .. k-1, and its p-value only on rounds
k-1 and k, so a published decision, and the stall dated from those decisions, never changes.

>>> est = metric_estimate("accuracy", np.array(["a", "b", "a", "a"]), np.array(["a", "b", "b", "a"]))
>>> est.value, est.k, est.n
(0.75, 3, 4)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from detectors.base import Result
from detectors.online_testing import lord_plus_plus, proportion_gain

LOWER_IS_BETTER = ("error_rate", "false_positive_rate")
PROPORTIONS = ("accuracy", "error_rate", "sensitivity", "specificity", "precision", "false_positive_rate")
BOOTSTRAPPED = ("balanced_accuracy", "macro_f1")
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


def usable_metric(metric: str, has_scores: bool) -> str:
    """The metric the series reports: the pack's primary one, ``accuracy`` for AUC without scores."""
    if metric in PROPORTIONS + BOOTSTRAPPED:
        return metric
    return "auc" if metric == "auc" and has_scores else "accuracy"


def _counts(metric: str, y: np.ndarray, y_pred: np.ndarray, positive: str | None) -> tuple[int, int]:
    if metric in ("accuracy", "error_rate"):
        right = int(np.sum(y == y_pred))
        return (right if metric == "accuracy" else len(y) - right), len(y)
    if positive is None:
        raise ValueError(f"metric {metric!r} needs the positive class")
    truth, said = y == positive, y_pred == positive
    if metric == "sensitivity":
        return int(np.sum(truth & said)), int(truth.sum())
    if metric == "precision":
        return int(np.sum(truth & said)), int(said.sum())
    negatives = int((~truth).sum())
    false_pos = int(np.sum(~truth & said))
    return (negatives - false_pos if metric == "specificity" else false_pos), negatives


def proportion(k: int, n: int) -> Estimate:
    from detectors.intervals import wilson_interval

    if n == 0:
        return Estimate(None, None, None, 0, 0)
    lo, hi = wilson_interval(k, n)
    return Estimate(k / n, float(lo), float(hi), int(n), int(k))


def _statistic(metric: str, y, y_pred, scores, positive) -> float:
    """Point value of a non-proportion metric (from the confusion counts; DeLong's AUC)."""
    from detectors.confusion import confusion_counts, encode, sorted_classes
    from detectors.metric_ci import metric_from_confusion, metric_with_ci

    if metric == "auc":
        return metric_with_ci("auc", y, scores=scores, positive=positive, min_samples=2).value
    classes = sorted_classes(y, y_pred)
    cm = confusion_counts(encode(y, classes, "y"), encode(y_pred, classes, "y_pred"), len(classes))
    return float(metric_from_confusion(metric, cm))


def metric_estimate(metric: str, y: np.ndarray, y_pred: np.ndarray, scores: np.ndarray | None = None, *,
                    positive: str | None = None, seed: int = 0) -> Estimate:
    """The metric on one set of rows; ``y`` and ``y_pred`` are string arrays of shape (n,)."""
    if metric in PROPORTIONS:
        return proportion(*_counts(metric, y, y_pred, positive))
    from detectors.metric_ci import metric_with_ci

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
    sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
    if before.k is not None and after.k is not None:
        return _proportion_gain(before, after, sign)
    return _bootstrap_gain(metric, rows_before, rows_after, sign, positive, seed)


def _proportion_gain(before: Estimate, after: Estimate, sign: float) -> Improvement:
    gain = proportion_gain(before.k, before.n, after.k, after.n, lower_is_better=sign < 0)
    return Improvement(gain.difference, gain.ci_low, gain.ci_high, gain.p_value, method="newcombe")


def _bootstrap_gain(metric, rows_before, rows_after, sign, positive, seed) -> Improvement:
    rng = np.random.default_rng(seed)
    point = [_statistic(metric, *rows, positive) for rows in (rows_before, rows_after)]
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
    import dataclasses

    online = lord_plus_plus([g.p_value for g in gains], alpha=alpha)
    out = []
    for g, level, hit in zip(gains, online.levels, online.rejected):
        scaled = None if g.p_value is None else float(min(1.0, g.p_value * alpha / level))
        out.append(dataclasses.replace(g, p_value_adjusted=scaled, significant=bool(hit), level=float(level),
                                       procedure=online.procedure))
    return out


def error_rates(y: np.ndarray, y_pred: np.ndarray, validated: np.ndarray | None) -> tuple[Estimate, Estimate | None]:
    """MER (share of rows the round's model got wrong) and vMER (wrong *and* label validated)."""
    wrong = y != y_pred
    mer = proportion(int(wrong.sum()), len(y))
    vmer = None if validated is None else proportion(int(np.sum(wrong & validated)), len(y))
    return mer, vmer


def stall(significant: Sequence[bool | None], ruled_out: Sequence[bool] | None = None) -> int | None:
    """Index (0-based round position) at which the current stall began to hold, or None.

    ``significant[i]`` says whether round i improved significantly on round i-1 (None for the
    first round). A stall is two consecutive rounds without a significant gain; it holds while
    the newest rounds still have none, and dates from the second round of the run. On published
    (never re-decided) decisions the date of an ongoing stall never moves: a new round either
    extends the run or, with a significant gain, ends the stall.

    ``ruled_out[i]`` (optional) says whether round i's interval rules out a gain of the smallest
    size that matters: then only such rounds can *start* a stall (a round that merely lacked the
    power to see a gain breaks the run), while a stall already dated continues through any round
    without a significant gain.
    """
    run_start = stalled = None
    for i, sig in enumerate(significant):
        if i == 0:
            continue
        if sig:
            run_start = stalled = None
        elif stalled is not None:
            continue
        elif ruled_out is not None and not ruled_out[i]:
            run_start = None
        elif run_start is None:
            run_start = i
        else:
            stalled = i
    return stalled


def stall_episodes(significant: Sequence[bool | None],
                   ruled_out: Sequence[bool] | None = None) -> list[tuple[int, int | None]]:
    """Every stall of the series as ``(since, ended)`` 0-based positions: ``since`` as :func:`stall`
    dates it, ``ended`` the round whose significant gain ended it (None while it holds)."""
    episodes: list[tuple[int, int | None]] = []
    for k in range(1, len(significant) + 1):
        at = stall(significant[:k], None if ruled_out is None else ruled_out[:k])
        ongoing = bool(episodes) and episodes[-1][1] is None
        if at is not None and not ongoing:
            episodes.append((at, None))
        elif at is None and ongoing:
            episodes[-1] = (episodes[-1][0], k - 1)
    return episodes


def gain_ruled_out(gain: Improvement | None, metric: str, min_gain: float | None) -> bool:
    """The improvement's 95 % interval excludes a gain of ``min_gain`` or more (always True
    without a ``min_gain``; False when the gain could not be estimated)."""
    if min_gain is None:
        return True
    if gain is None or gain.ci_low is None or gain.ci_high is None:
        return False
    largest = -gain.ci_low if metric in LOWER_IS_BETTER else gain.ci_high
    return bool(largest < min_gain)


def saturated(estimate: Estimate, metric: str, threshold: float) -> bool:
    """Saturation has one meaning: the primary metric's lower 95 % bound is at or above
    ``threshold`` (for a lower-is-better metric such as the error rate, its upper bound at or below
    1 - threshold), i.e. the metric is credibly at or above the threshold, not just its point value."""
    if estimate.ci_low is None or estimate.ci_high is None:
        return False
    if metric in LOWER_IS_BETTER:
        return estimate.ci_high <= 1 - threshold
    return estimate.ci_low >= threshold
