"""Round logic on top of :mod:`detectors.round_tests`: the metric a series reports, MER / vMER
with Wilson intervals, the stall and the saturation rules. The statistics themselves (estimate,
improvement test, the online decision) live in ``detectors``; they are re-exported here for the
round modules.

Why online: correcting the whole series at once (Holm) re-decides every earlier round each time a
round arrives, so gains that were significant stop being so and the stall moves earlier. Here
round k's level depends only on the decisions of rounds 2 .. k-1, and its p-value only on rounds
k-1 and k, so a published decision, and the stall dated from those decisions, never changes.

>>> est = metric_estimate("accuracy", np.array(["a", "b", "a", "a"]), np.array(["a", "b", "b", "a"]))
>>> est.value, est.k, est.n
(0.75, 3, 4)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from detectors import metric_registry
from detectors.round_tests import (
    Estimate,
    Improvement,
    decide_online,
    gain_ruled_out,
    improvement,
    metric_estimate,
    proportion,
)

__all__ = ["Estimate", "Improvement", "proportion", "metric_estimate", "improvement", "decide_online",
           "gain_ruled_out", "usable_metric", "error_rates", "stall", "stall_episodes", "saturated"]

BOOTSTRAPPED = ("balanced_accuracy", "macro_f1")


def usable_metric(metric: str, has_scores: bool) -> str:
    """The metric the series reports: the pack's primary one, ``accuracy`` for AUC without scores."""
    if metric_registry.is_proportion(metric) or metric in BOOTSTRAPPED:
        return metric
    return "auc" if metric == "auc" and has_scores else "accuracy"


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


def saturated(estimate: Estimate, metric: str, threshold: float) -> bool:
    """The series' last round is saturated by the one rule the audit uses too
    (:func:`detectors.metric_registry.saturated`: the interval, not the point value)."""
    return metric_registry.saturated(metric, estimate.ci_low, estimate.ci_high, threshold=threshold)
