"""Whether the BBSE estimate of the production class mix can be trusted in this audit.

BBSE assumes that production is the benchmark with another class mix. Two findings of the audit
contradict that: covariate shift the estimated class mix does not explain (checked in the label
stage, :func:`audit.pipeline.stages.label`), and production populations the benchmark lacks —
claimed untested contexts and novel embedding regions — which are only known after the context
and embedding stages, so they are checked here, when the result is assembled. An unreliable
estimate is kept in the label section with its reason but claims nothing: no label-shift
limitation or verdict rests on it, and a note says why.
"""
from __future__ import annotations

from typing import Any

from detectors.assumptions import uncovered_populations
from reports.formatting import fmt_share


def _candidates(context: Any, embedding: Any):
    for u in (getattr(context, "untested_contexts", None) or ()):
        if getattr(u, "claimed", True):
            yield u.name, float(u.production_share), "untested_context"
    for r in (getattr(embedding, "novel_regions", None) or ()):
        yield f"novel embedding region {r.cluster}", float(r.production_share), "novel_region"


def trusted_prior(ctx: Any, prior: Any, context: Any, embedding: Any) -> Any:
    """``prior`` (a ``LabelShiftResult``), marked unreliable when production holds uncovered populations."""
    if prior is None or prior.status != "ok":
        return prior
    found = uncovered_populations(_candidates(context, embedding))
    if found:
        names = ", ".join(f"{p.name} ({fmt_share(p.production_share)} of production)" for p in found[:3])
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        reason = (f"production holds populations the benchmark lacks: {names}{more}; BBSE reads their predictions "
                  "through the benchmark's confusion matrix, which does not describe them, so the estimated "
                  "production class shares are unreliable.")
        previous = prior.reliability_reason if not prior.reliable else None
        prior = prior.with_assumption_check(reliable=False, reason=f"{previous} Also, {reason}" if previous
                                            else reason[0].upper() + reason[1:])
    if not prior.reliable and ctx.columns.production_label is None and prior.is_shift:
        ctx.notes.append({"part": "label shift (BBSE)", "reason": (
            "The label-free estimate of the production class mix is not stated as a limitation: "
            f"{prior.reliability_reason} Label a sample of production to measure the class mix.")})
    return prior
