"""The label-free estimates of the production metric: each estimator's figure for the primary metric,
the sentence quoting them, and their check against the metric measured on labelled production rows."""
from __future__ import annotations

from reports.formatting import fmt_metric, fmt_num, metric_label, shorten
from reports.records import RankingContext
from reports.result import AuditEvidence, EstimateCheck, EstimatedPerformance, LabelSection

__all__ = ["Estimate", "performance_estimates", "estimate_sentence", "estimate_checks", "contradiction_sentence"]

Estimate = tuple[str, "float | None", "float | None", "float | None"]  # (method, value, ci_low, ci_high)


def performance_estimates(estimated: EstimatedPerformance | None, metric: str | None = None) -> list[Estimate]:
    """(method, estimate, ci_low, ci_high) of each estimator: its headline figure (``estimate`` for its
    ``metric``, lifted by the pipeline: the primary metric, else accuracy) when it has one, else its entry
    for ``metric`` in ``metrics`` (by key or name; the first when ``metric`` is None). Names made readable.

    >>> est = EstimatedPerformance.model_validate({"methods": {
    ...     "confidence_based": {"estimate": 0.88, "ci_low": 0.86, "ci_high": 0.9},
    ...     "prior_reweighted": {"metrics": {"accuracy": {"value": 0.8}, "sensitivity": {"value": 0.7}}}}})
    >>> performance_estimates(est, "sensitivity")
    [('confidence based', 0.88, 0.86, 0.9), ('prior reweighted', 0.7, None, None)]
    """
    found: list[Estimate] = []
    for key, m in (estimated.methods.items() if estimated is not None else ()):
        if m.metric is not None or m.estimate is not None:
            found.append((str(key or m.method or "estimate"), m.estimate, m.ci_low, m.ci_high))
            continue
        entry = next((e for k, e in m.metrics.items() if metric is None or metric in (e.name, k)), None)
        if entry is not None:
            found.append((str(m.method or key or "estimate"), entry.value, entry.ci_low, entry.ci_high))
    return [(name.replace("_", " "), est, lo, hi) for name, est, lo, hi in found]


def estimate_sentence(label: LabelSection, ctx: RankingContext) -> str:
    """A sentence quoting the label-free performance estimates (context, not part of the score:
    a confidence-based estimate mixes every kind of shift, so it is not attributed to this one)."""
    estimated = label.estimated_performance
    metric = (estimated.metric if estimated is not None else None) or ctx.metric
    rows = performance_estimates(estimated, metric)
    if not rows:
        return ""
    bench = estimated.benchmark_value if estimated is not None else None
    bench = ctx.overall_value if bench is None else bench
    parts = [f"{fmt_metric(est, (lo, hi))} ({shorten(name, 30)})" for name, est, lo, hi in rows[:4]]
    return (f" Label-free estimates of production {metric_label(metric)}: {', '.join(parts)}, "
            f"against {fmt_num(bench)} on the benchmark.")


def estimate_checks(audit: AuditEvidence, ctx: RankingContext) -> list[EstimateCheck]:
    """Each label-free estimate of the production metric against the observed one, when production is
    labelled: ``contradicts`` when the observed value lies outside the estimate's interval (the
    estimator's assumption does not hold here, so its number must not be read beside the observed one)."""
    overall, estimated = audit.overall, audit.label.estimated_performance
    observed = overall.production_value if overall is not None else None
    if overall is None or observed is None or estimated is None:
        return []
    metric = estimated.metric or ctx.metric
    if metric != (overall.metric or ctx.metric):
        return []
    return [EstimateCheck(method=name, metric=metric, estimate=est, ci=[lo, hi], observed=observed,
                          contradicts=lo is not None and hi is not None and not lo <= observed <= hi)
            for name, est, lo, hi in performance_estimates(estimated, metric) if est is not None]


def contradiction_sentence(checks: list[EstimateCheck]) -> str:
    bad = [c for c in checks if c.contradicts]
    if not bad:
        return ""
    parts = [f"the label-free estimate {fmt_metric(c.estimate, c.ci)} ({c.method}) contradicts the observed "
             f"{fmt_num(c.observed)}" for c in bad[:3]]
    return (" " + "; ".join(parts)[:1].upper() + "; ".join(parts)[1:]
            + ": the estimators' assumptions (covariate or label shift only) do not hold here, so rely on the "
              "observed value.")
