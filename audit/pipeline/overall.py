"""The overall metric's benchmark → production change, tested on all rows whenever production is
labelled, and the label-free estimates checked against what the labels show.

The within-context change test (``overall_eval``) needs contexts both datasets share, so it cannot
run when production lies entirely in a context the benchmark lacks, which is when a collapse is
likeliest; this test does not need them, and it enters the audit-wide correction family
(``audit.pipeline.state.TESTED``) like every other test.
"""
from __future__ import annotations

from typing import Any

from audit.pipeline.stage_context import Outputs, StageContext
from detectors.base import to_jsonable
from detectors.metric_change import metric_change_test
from detectors.slices import METRIC_ALIASES
from reports.findings_labels import estimate_checks
from reports.records import RankingContext
from reports.result import AuditEvidence, Overall

# the smallest drop of the primary metric that counts as a change (five points: the slice tests' floor too)
PERFORMANCE_DROP_FLOOR = 0.05

__all__ = ["overall_change", "with_overall_change", "with_estimate_checks"]


def overall_change(ctx: StageContext, overall_eval: Any, bench: Outputs, prod: Outputs):
    """The production metric against the benchmark's on all rows, whenever production is labelled.

    The within-context test of ``overall_eval`` needs contexts both datasets share; this one does
    not, so a collapse in a context the benchmark lacks is still tested (and corrected with the rest)."""
    if overall_eval is None or prod.y_true is None or bench.y_true is None or prod.y_pred is None:
        return None
    metric = METRIC_ALIASES.get(overall_eval.metric, overall_eval.metric)
    return metric_change_test(metric, bench.y_true, bench.y_pred, prod.y_true, prod.y_pred,
                              scores_b=bench.positive_scores, scores_p=prod.positive_scores,
                              positive=getattr(ctx.pack, "positive_class", None), alpha=ctx.alpha,
                              effect_floor=PERFORMANCE_DROP_FLOOR, min_samples=min(30, ctx.min_slice_size),
                              random_state=ctx.seed)


def with_overall_change(evidence: AuditEvidence, change: Any) -> AuditEvidence:
    """``overall.change_*`` and ``changed`` are the plain two-sample test of the primary metric (run
    whenever production is labelled); the within-context test they used to hold, which cannot run
    without shared contexts, stays as ``within_context_*`` (it decides concept shift)."""
    overall = evidence.overall
    if overall is None or change is None:
        return evidence
    t = change.test
    tested = t.status == "ok"
    updated = Overall.model_validate({
        **overall.model_dump(), "within_context_p_value_adjusted": overall.change_p_value_adjusted,
        "within_context_changed": overall.changed, "change_test": to_jsonable(t.to_dict()), "change_method": t.method,
        "change_p_value": t.p_value if tested else None,
        "change_p_value_adjusted": t.p_value_adjusted if tested else None,
        "changed": bool(t.drifted) if tested else None,
        "change_difference": t.effect_size if tested else None,
        "change_difference_ci": list(change.difference_ci) if tested else None,
        "change_effect_floor": t.effect_floor})
    return evidence.model_copy(update={"overall": updated})


def with_estimate_checks(evidence: AuditEvidence, alpha: float) -> AuditEvidence:
    """``label.estimate_checks``: each label-free estimate against the observed production metric, flagged
    ``contradicts`` when the observed value lies outside its interval (the report says so)."""
    rank_ctx = RankingContext.from_audit(evidence, saturation_threshold=None, alpha=alpha, priors=None)
    label = evidence.label.model_copy(update={"estimate_checks": estimate_checks(evidence, rank_ctx)})
    return evidence.model_copy(update={"label": label})
