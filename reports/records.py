"""Typed records of the limitation ranking and the severity scale.

Severity score
--------------
Every limitation gets one number on one scale, so that a weak slice, an untested context and
a drifted feature can be ranked against each other:

    score = production prevalence × gap

read as "expected loss of the overall production metric, in metric units, attributable to this
finding" (0.045 = 4.5 points of sensitivity). Where the gap is measured (a slice metric with a
CI, an observed production drop) it is used as is; where it cannot be measured it is replaced by
a documented prior gap (:class:`SeverityPriors`). Labels: ``high`` when score ≥ 0.03,
``medium`` when ≥ 0.01, else ``low``. The per-kind formulas are listed in ``reports/SCHEMA.md``.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from domains import parse, to_text  # canonical text of the expression
from reports.formatting import lower_is_better
from reports.measured import measured_overall
from reports.result import AuditEvidence, Decision, LimitationRecord, as_evidence
from reports.result.claims import Level

__all__ = [
    "SeverityPriors", "RankingContext", "KINDS", "KIND_LABELS", "CORRECTION_LABELS", "SHIFT_KINDS",
    "HIGH_SCORE", "MEDIUM_SCORE", "STANDING_KINDS", "rank_order", "severity_label", "SEVERITY_ORDER", "finding_key",
    "make_decision", "claim_of", "CLAIMS",
]

# Kinds of limitation, in the order used to break ties between equal scores.
KINDS = (
    "underperforming_slice", "concept_shift", "untested_context", "label_shift",
    "context_mix_shift", "covariate_shift", "label_quality", "benchmark_saturation",
)
KIND_LABELS = {
    "underperforming_slice": "Weak slice", "untested_context": "Untested context",
    "context_mix_shift": "Context mix shift", "covariate_shift": "Covariate shift", "label_shift": "Label shift",
    "concept_shift": "Concept shift", "label_quality": "Label quality", "benchmark_saturation": "Saturated benchmark",
    "slice": "Slice", "production_sample": "Production sample",
}
CORRECTION_LABELS = {"bh": "Benjamini–Hochberg", "holm": "Holm", "bonferroni": "Bonferroni"}
SHIFT_KINDS = frozenset({"concept_shift", "label_shift", "context_mix_shift", "covariate_shift"})
HIGH_SCORE = 0.03  # three points of the primary metric over all of production
MEDIUM_SCORE = 0.01  # one point
SEVERITY_ORDER = {"none": 0, "low": 1, "medium": 2, "high": 3}

DEFAULT_FLOORS = {
    "slice_gap": 0.05,  # a slice must be this much below overall to be "underperforming"
    "performance_drop": 0.05,  # a production drop (with labels) must be at least this large
    "label_disagreement": 0.02,  # disagreement rate between two labelling sources
    "untested_share": 0.10,  # an untested population at least this share of production is never folded away
}
CLAIMS = ("change", "standing")


STANDING_KINDS = frozenset({"benchmark_saturation"})  # properties of the benchmark alone, not of production


def claim_of(lim: Any) -> str:
    """``"change"`` or ``"standing"`` of a Limitation or a stored LimitationRecord."""
    return "standing" if lim.claim == "standing" else "change"


def rank_order(lim: LimitationRecord) -> tuple:
    """Sort key of the ranking: change claims first, then standing limitations (model card), each by
    score (to 0.0001 of the metric), then by evidence (adjusted p-value), kind and name; a saturated
    benchmark is informational and always comes last. Scores that tie (a measured loss of 0 caps
    them all) are ordered by how sure the audit is, not by which kind was listed first."""
    p = lim.decision.p_value_adjusted if lim.decision is not None else None
    return (lim.kind in STANDING_KINDS, claim_of(lim) == "standing", -round(lim.score, 4),
            1.0 if p is None else p, KINDS.index(lim.kind) if lim.kind in KINDS else len(KINDS), str(lim.slice or ""))


def make_decision(statistic: str, value: float | None, *, rule: str, test: str | None = None,
                  p_value_adjusted: float | None = None, interval: Any = None, n: float | None = None) -> Decision:
    """What made a finding a claim: the statistic and its value, the test or interval, the rows, the rule.

    ``interval`` is ``(low, high)``; an interval with an unknown end is no interval."""
    lo, hi = interval if isinstance(interval, (list, tuple)) and len(interval) == 2 else (None, None)
    known = lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi)
    return Decision(statistic=statistic, value=value, test=test, p_value_adjusted=p_value_adjusted,
                    interval=[lo, hi] if known else None, n=None if n is None else int(n), rule=rule)


def severity_label(score: float) -> Level:
    if score >= HIGH_SCORE:
        return "high"
    return "medium" if score >= MEDIUM_SCORE else "low"


@dataclass(frozen=True)
class SeverityPriors:
    """Gaps assumed where the audit cannot measure one (all in metric units).

    untested_gap : an unevaluated context is assumed to lose this much of the primary metric.
    coverage_gap : an untested context that labelled production rows show to be no worse than overall
        still lacks benchmark coverage; it is scored as this small gap so it stays on the list.
    shift_gap : a distribution shift of maximal effect size (1.0) over all of production is
        assumed to cost this much; smaller effects scale linearly.
    label_shift_gap : assumed spread between per-class recalls, multiplied by the total-variation
        distance between benchmark and production class priors.
    saturation_score : fixed score of a saturated benchmark (informational, always "low").
    """

    untested_gap: float = 0.10
    coverage_gap: float = 0.01
    shift_gap: float = 0.05
    label_shift_gap: float = 0.25
    saturation_score: float = 0.005


def __getattr__(name: str):
    # the former builder dataclass's name, now the one limitation type: importable with a warning
    if name == "Limitation":
        warnings.warn("reports.records.Limitation is now reports.LimitationRecord, the type the AuditResult "
                      "stores; the old name will be removed.", DeprecationWarning, stacklevel=2)
        return LimitationRecord
    raise AttributeError(f"module 'reports.records' has no attribute {name!r}")


@dataclass(frozen=True)
class RankingContext:
    """Everything the finding builders need from the audit's ``parameters`` and ``overall``."""

    alpha: float
    floors: dict
    priors: SeverityPriors
    saturation_threshold: float
    metric: str
    higher_is_better: bool
    overall_value: float | None
    overall_ci: Any
    overall_n: int | None
    overall_production_value: float | None
    measured: Any  # reports.measured.MeasuredChange of the overall metric, None without labelled production
    n_benchmark: float | None
    n_production: float | None
    min_slice_size: int

    @classmethod
    def from_audit(cls, audit: AuditEvidence | Mapping, *, saturation_threshold: float | None,
                   alpha: float | None, priors: SeverityPriors | None) -> "RankingContext":
        audit = as_evidence(audit)
        params, overall = audit.parameters, audit.overall
        floors = dict(DEFAULT_FLOORS)
        floors.update({k: v for k, v in params.effect_floors.items() if v is not None})
        threshold = saturation_threshold if saturation_threshold is not None else params.saturation_threshold
        return cls(
            alpha=alpha or params.alpha or 0.05,
            floors=floors,
            priors=priors or _recorded_priors(params.severity_priors),
            saturation_threshold=0.8 if threshold is None else float(threshold),
            metric=audit.metric,
            higher_is_better=not lower_is_better(audit.metric),
            overall_value=overall.benchmark_value if overall else None,
            overall_ci=overall.benchmark_ci if overall else None,
            overall_n=(overall.n if overall else None) or audit.benchmark.n_rows,
            overall_production_value=overall.production_value if overall else None,
            measured=measured_overall(audit),
            n_benchmark=audit.benchmark.n_rows,
            n_production=audit.production.n_rows,
            min_slice_size=params.min_slice_size or 30,
        )

    def floor(self, name: str) -> float:
        return float(self.floors.get(name, DEFAULT_FLOORS.get(name, 0.0)))

    def supported(self, p_adjusted: float | None, effect: float | None, floor: float) -> bool:
        """The decision rule: adjusted p below alpha AND effect at least the practical floor."""
        return p_adjusted is not None and effect is not None and p_adjusted < self.alpha and effect >= floor


def _recorded_priors(recorded: Mapping[str, float | None]) -> SeverityPriors:
    """The severity priors the audit recorded in its parameters (so re-ranking a stored result agrees)."""
    known = {f for f in SeverityPriors.__dataclass_fields__}
    return SeverityPriors(**{k: float(v) for k, v in recorded.items() if k in known and v is not None})


def finding_key(kind: str, definition: str | None = None, subject: str | None = None) -> str:
    """A key that is the same across audits for the same kind of finding about the same rows.

    ``definition`` (a slice expression) is canonicalised by the slice language, so spacing, quoting and
    redundant brackets do not change the key; findings about no particular rows use ``subject``
    (a column, an annotator) or ``"all"``."""
    if definition:
        try:
            return f"{kind}:{to_text(parse(definition))}"
        except ValueError:
            return f"{kind}:{definition.strip()}"
    return f"{kind}:{subject if subject not in (None, '') else 'all'}"
