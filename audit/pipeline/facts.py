"""The pipeline's side of the claim layer: the rows behind the evidence, handed to :mod:`audit.claims`.

Which findings are claims, which are the same fact and which cause explains which side effect is
decided in one place, :func:`audit.claims.decide_claims`; this module only gathers what it reads from
the audit's state (the frames, the model's outputs, the audit's rules and the label-free estimate of
production's class mix) into a :class:`audit.claims.ClaimData`.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from audit.claims import ClaimData, Step, decide_claims
from detectors.slices import METRIC_ALIASES
from reports.result import AuditEvidence, LimitationRecord

__all__ = ["claim_data", "one_limitation_per_fact"]


def _prior_estimate(state: Any) -> dict[str, float] | None:
    """Production's class mix from the label-free (BBSE) estimate, when it is reliable."""
    prior = state.prior
    if prior is None or getattr(prior, "status", None) != "ok" or not getattr(prior, "reliable", False):
        return None
    return {str(k): float(v) for k, v in prior.priors.items()}


def claim_data(state: Any, production: pd.DataFrame) -> ClaimData:
    """What the claim layer reads, from the audit's state after the detectors ran and were corrected."""
    ctx, bench, prod = state.ctx, state.bench_out, state.prod_out
    if getattr(state, "labelled_ctx", None) is not None and state.labelled_out is not None:
        # partly labelled production: the claims are re-measured where the labels are, as the metrics were
        production, prod = state.labelled_ctx.production, state.labelled_out
    metric = state.overall_eval.metric if state.overall_eval is not None else getattr(ctx.pack, "primary_metric",
                                                                                      "accuracy")
    return ClaimData(
        benchmark=ctx.benchmark, production=production, classes=tuple(str(c) for c in ctx.classes),
        y_true_b=None if bench is None else bench.y_true, y_pred_b=None if bench is None else bench.y_pred,
        y_true_p=None if prod is None else prod.y_true, y_pred_p=None if prod is None else prod.y_pred,
        proba_b=None if bench is None else bench.proba, proba_p=None if prod is None else prod.proba,
        positive=None if getattr(ctx.pack, "positive_class", None) is None else str(ctx.pack.positive_class),
        metric=METRIC_ALIASES.get(metric, metric), alpha=ctx.alpha, min_slice_size=ctx.min_slice_size,
        seed=ctx.seed, n_tests=max(1, int(state.n_tests)),
        prior_estimate=_prior_estimate(state))


def one_limitation_per_fact(evidence: AuditEvidence, state: Any,
                            production: pd.DataFrame) -> tuple[list[LimitationRecord], list[Step]]:
    """The audit's limitations, ranked, each fact once and each change by its cause (and the causes in
    the order the claim layer accepted them)."""
    return decide_claims(evidence, claim_data(state, production),
                         saturation_threshold=state.ctx.options.saturation_threshold)
