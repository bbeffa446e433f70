"""The model's loss measured on labelled production, for findings whose severity would otherwise
rest on an assumed gap (a covariate shift says the inputs moved, not what that cost).

The change ``benchmark - production`` (oriented so positive is worse) gets a MOVER interval
(Zou & Donner 2008, "Construction of confidence limits about effect measures"): from the two
metric CIs the audit already reports (Wilson for proportions, bootstrap otherwise),
``L = d - sqrt((x - l_x)^2 + (u_y - y)^2)`` and ``U = d + sqrt((u_x - x)^2 + (y - l_y)^2)`` where
``x`` is the better-oriented side; for two Wilson intervals this is Newcombe's hybrid score
interval. A loss counts as measured when ``L > 0``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from reports.formatting import fmt_metric, fmt_n, fmt_num, lower_is_better, metric_label
from reports.result import AuditEvidence

__all__ = ["MeasuredChange", "measured_overall"]


@dataclass(frozen=True)
class MeasuredChange:
    """Benchmark and production values of the primary metric and their oriented loss."""

    metric: str
    benchmark: float
    benchmark_ci: tuple[float, float]
    production: float
    production_ci: tuple[float, float]
    n_benchmark: int | None
    n_production: int | None
    loss: float  # positive = production worse
    loss_ci: tuple[float, float]

    @property
    def credible(self) -> bool:
        return self.loss_ci[0] > 0

    def sentence(self) -> str:
        name = metric_label(self.metric)
        measured = (f" Measured on the labelled production rows, {name} is "
                    f"{fmt_metric(self.production, self.production_ci)} ({fmt_n(self.n_production)}) against "
                    f"{fmt_metric(self.benchmark, self.benchmark_ci)} ({fmt_n(self.n_benchmark)}) on the benchmark")
        interval = f"{fmt_num(self.loss)} [{fmt_num(self.loss_ci[0])}, {fmt_num(self.loss_ci[1])}]"
        if self.credible:
            return f"{measured}: a loss of {interval} over all of production, from every cause together."
        if self.loss_ci[1] < 0:  # credibly better: saying "within sampling error" would be wrong
            gain = f"{fmt_num(-self.loss)} [{fmt_num(-self.loss_ci[1])}, {fmt_num(-self.loss_ci[0])}]"
            return f"{measured}: production is better by {gain}, so this shift has cost nothing measurable."
        return f"{measured}: the loss, {interval}, is within sampling error."


def measured_overall(audit: AuditEvidence) -> MeasuredChange | None:
    """The overall primary metric on both sides, when production is labelled and both have CIs."""
    overall = audit.overall
    if overall is None or overall.benchmark_ci is None or overall.production_ci is None:
        return None
    b, p = overall.benchmark_value, overall.production_value
    (lb, ub), (lp, up) = overall.benchmark_ci, overall.production_ci
    if b is None or p is None or lb is None or ub is None or lp is None or up is None:
        return None
    metric = overall.metric or "accuracy"
    # x is the side that is better when nothing changed: the benchmark for higher-is-better metrics
    (x, lx, ux), (y, ly, uy) = ((p, lp, up), (b, lb, ub)) if lower_is_better(metric) else ((b, lb, ub), (p, lp, up))
    d = x - y
    low = d - math.sqrt((x - lx) ** 2 + (uy - y) ** 2)
    high = d + math.sqrt((ux - x) ** 2 + (y - ly) ** 2)
    return MeasuredChange(metric, b, (lb, ub), p, (lp, up), overall.n, overall.n_production, d, (low, high))
