"""The claim layer: which findings of an audit are claims, and which cause explains which.

:func:`decide_claims` is the one place where an audit's findings become its limitations:

1. the findings the detectors support (:func:`reports.limitations.candidate_findings`), each with its
   decision (statistic, test or interval, rule) and its claim: a *change* since the benchmark or a
   *standing* weakness the benchmark shows as well;
2. a weak slice whose metric fell is restated as the concept shift located in it, and a class-mix
   change or an overall drop confined to one slice is located there (:mod:`audit.claims.located`);
3. findings that are one fact — the same key, the same rows, nested rows, one column's mix — are
   grouped (:mod:`audit.claims.identity`);
4. change claims are explained away, once, by one rule for every kind (:mod:`audit.claims.explain`):
   a later claim stands only if it is still a change with production adjusted to the benchmark on the
   causes already accepted; what it restates becomes part of the cause ("explains: …").

The result is the ranked list of :class:`~reports.result.LimitationRecord` the verdict, the plan and the
renderings read.
"""
from __future__ import annotations

from audit.claims.candidates import candidates
from audit.claims.data import ClaimData
from audit.claims.explain import Step, explain_away
from audit.claims.identity import column_relations, one_per_key, row_masks, row_relations
from audit.claims.located import located_changes, located_whole
from reports.grouping import fold
from reports.limitations import candidate_findings
from reports.result import AuditEvidence, LimitationRecord

__all__ = ["ClaimData", "decide_claims", "Step"]

MIN_SCORE = 5e-5  # a limitation whose expected loss rounds to 0.000 points of the metric is not a limitation


def decide_claims(evidence: AuditEvidence, data: ClaimData, *,
                  saturation_threshold: float | None = None) -> tuple[list[LimitationRecord], list[Step]]:
    """The audit's limitations, ranked, each fact once and each change by its cause; and the causes in
    the order they were accepted.

    Parameters
    ----------
    evidence : AuditEvidence
        The corrected tests of the audit.
    data : ClaimData
        The rows behind them.
    saturation_threshold : float, optional
        As for :func:`reports.rank_limitations`.
    """
    found = [lim for lim in candidate_findings(evidence, saturation_threshold=saturation_threshold, alpha=data.alpha)
             if lim.score >= MIN_SCORE or lim.claim == "change"]
    found = one_per_key(found)
    masks, bench_masks = row_masks(found, data.benchmark, data.production)
    found = located_changes(found, masks, bench_masks, data)
    found = located_whole(found, evidence, masks, bench_masks, data)
    same = row_relations(found, masks)
    taken = {r.child for r in same}
    grouped = fold(found, same + [r for r in column_relations(found) if r.child not in taken and r.parent not in taken])
    cands = candidates(grouped, data, evidence, masks, bench_masks)
    relations, steps = explain_away(cands, data)
    return fold(grouped, relations), steps
