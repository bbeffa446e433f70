"""The evidence with its conclusions: what the renderers take.

The pipeline stores an AuditResult whose limitations, verdict and next round were computed once; a
caller that ranks and plans itself (a notebook, a test, a hand-built example) attaches its own with
:func:`conclude` and renders that, so every rendering reads one typed object.

>>> from reports import rank_limitations
>>> audit = {"overall": {"metric": "sensitivity", "benchmark_value": 0.86, "benchmark_ci": [0.84, 0.88], "n": 1400}}
>>> concluded = conclude(audit, rank_limitations(audit))
>>> [lim.kind for lim in concluded.limitations], concluded.verdict.severity, concluded.next_round
(['benchmark_saturation'], 'none', None)
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from reports.limitations import verdict
from reports.result import AuditEvidence, LimitationRecord, NextRound, as_evidence

__all__ = ["conclude"]


def conclude(evidence: AuditEvidence | Mapping, limitations: Sequence[LimitationRecord],
             plan: NextRound | None = None) -> AuditEvidence:
    """``evidence`` with ``limitations`` (in rank order), their verdict and ``plan`` as its conclusions.

    Parameters
    ----------
    evidence : AuditEvidence, AuditResult or its JSON
        Validated once; conclusions it already holds are replaced.
    limitations : sequence of LimitationRecord
        From :func:`reports.rank_limitations` (or a stored result's).
    plan : NextRound, optional
        From :func:`reports.plan_next_round`; without one the report has no next-round section.
    """
    evidence = as_evidence(evidence)
    records = sorted(limitations, key=lambda lim: lim.rank)
    decided = verdict(evidence, records)
    return evidence.model_copy(update={"limitations": records, "verdict": decided, "next_round": plan})
