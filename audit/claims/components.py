"""The re-tests a candidate claim is held to: one function per component, from the adjusted benchmark
(:class:`audit.claims.adjustment.Adjusted`) to a :class:`detectors.reweighted.Retest`.

Each builder fixes what the claim is measured on (a column's values, a slice's rows, the labels and the
model's outputs) and returns the re-test of that measurement against any adjustment, so the explaining-
away rule (:mod:`audit.claims.explain`) can ask every candidate the same question under every cause.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from audit.claims.adjustment import Adjusted
from audit.claims.data import ClaimData, Column
from detectors.reweighted import Retest, metric_retest, mix_retest, numeric_retest, share_retest
from reports.formatting import lower_is_better

__all__ = ["numeric_component", "mix_component", "share_component", "metric_component", "label_component",
           "drop_direction"]


def numeric_component(column: Column, floor: float) -> Callable[[Adjusted], Retest]:
    scale = float(np.nanstd(column.benchmark))

    def run(adj: Adjusted) -> Retest:
        return numeric_retest(adj.w, column.benchmark, column.production[adj.keep_p], floor=floor, scale=scale)
    return run


def mix_component(column: Column, floor: float, effect: str = "cramers_v") -> Callable[[Adjusted], Retest]:
    def run(adj: Adjusted) -> Retest:
        return mix_retest(adj.w, column.benchmark, column.production[adj.keep_p], floor=floor, effect=effect)
    return run


def share_component(mb: np.ndarray, mp: np.ndarray, floor: float) -> Callable[[Adjusted], Retest]:
    def run(adj: Adjusted) -> Retest:
        return share_retest(adj.w, mb, mp[adj.keep_p], floor=floor)
    return run


def metric_component(data: ClaimData, mb: np.ndarray | None, mp: np.ndarray | None,
                      floor: float, metric: str | None = None) -> Callable[[Adjusted], Retest]:
    """The re-test of a metric (the audit's primary one unless ``metric`` names the one a claim was
    measured with) on some rows of each side (all rows where ``mb`` / ``mp`` is None)."""
    measured = data.metric if metric is None else metric
    scores_b = None if data.proba_b is None or data.proba_b.shape[1] != 2 else data.proba_b[:, 1]
    scores_p = None if data.proba_p is None or data.proba_p.shape[1] != 2 else data.proba_p[:, 1]

    yb, pb, yp, pp = data.y_true_b, data.y_pred_b, data.y_true_p, data.y_pred_p
    if yb is None or pb is None or yp is None or pp is None:
        raise ValueError("a metric re-test needs labels and outputs on both sides")

    def run(adj: Adjusted) -> Retest:
        w = adj.w if mb is None else adj.w * mb
        rows = adj.keep_p if mp is None else adj.keep_p & mp
        return metric_retest(measured, w, yb, pb, yp[rows], pp[rows],
                             classes=data.classes, positive=data.positive, floor=floor, scores_b=scores_b,
                             scores_p=None if scores_p is None else scores_p[rows])
    return run


def label_component(data: ClaimData, label: Column | None, predicted: Column | None) -> Callable[[Adjusted], Retest]:
    """The class mix: observed labels, unless the labels are known to have changed given the inputs (or
    production is unlabelled), then the predicted classes, which a class-mix change moves as well."""
    def run(adj: Adjusted) -> Retest:
        column = predicted if (adj.labels_changed or label is None) else label
        if column is None:
            raise ValueError("the class mix needs the labels or the predicted classes")
        return mix_retest(adj.w, column.benchmark, column.production[adj.keep_p], floor=1.0, effect="prior_shift")
    return run


def drop_direction(metric: str) -> int:
    return 1 if lower_is_better(metric) else -1
