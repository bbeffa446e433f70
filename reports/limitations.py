"""The limitation ranking and the verdict (SPEC §7).

``rank_limitations`` reads an AuditResult dict (see ``reports/SCHEMA.md``) and returns ranked,
evidenced :class:`Limitation` records. It never computes a test: a finding becomes a limitation
only when the detectors flagged it (``drifted``, ``underperforming``, ``changed``, ``is_shift``:
reports never re-decide), except untested contexts (unevaluable by definition) and benchmark
saturation. Severity is production prevalence × gap (see :mod:`reports.records`).

>>> audit = {"overall": {"metric": "sensitivity", "benchmark_value": 0.86, "benchmark_ci": [0.84, 0.88], "n": 1400},
...          "slices": [{"name": "Fitzpatrick V–VI", "benchmark_value": 0.61, "benchmark_ci": [0.52, 0.70],
...                      "n_benchmark": 212, "gap_p_value_adjusted": 0.0004, "production_share": 0.18,
...                      "benchmark_share": 0.03, "underperforming": True}]}
>>> [(l.rank, l.kind, l.severity) for l in rank_limitations(audit)]
[(1, 'underperforming_slice', 'high'), (2, 'benchmark_saturation', 'low')]
>>> verdict(audit, rank_limitations(audit))["severity"]
'high'
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from reports.findings_data import data_findings
from reports.findings_labels import label_findings
from reports.formatting import get
from reports.records import (
    SEVERITY_ORDER, SHIFT_KINDS, STANDING_KINDS, Limitation, RankingContext, SeverityPriors, rank_order,
)

__all__ = ["Limitation", "SeverityPriors", "rank_limitations", "verdict", "fails_gate", "GATE_LEVELS"]

GATE_LEVELS = ("shift", "low", "medium", "high")



def rank_limitations(audit: Mapping, *, saturation_threshold: float | None = None,
                     alpha: float | None = None, priors: SeverityPriors | None = None) -> list[Limitation]:
    """Rank the audit's supported findings by severity score, highest first.

    Parameters
    ----------
    audit : mapping
        The AuditResult as JSON-ready data (SPEC §9; fields in ``reports/SCHEMA.md``).
    saturation_threshold : float, optional
        Primary-metric value at or above which the benchmark counts as saturated; default
        ``audit["parameters"]["saturation_threshold"]``, else 0.8.
    alpha : float, optional
        Significance level for adjusted p-values; default ``audit["parameters"]["alpha"]``, else 0.05.
    priors : SeverityPriors, optional
        Gaps assumed where none can be measured.

    Returns
    -------
    list of Limitation
        Ranks 1..n; ties in score are broken by kind (SPEC §7 order) and then by slice name.
    """
    if not isinstance(audit, Mapping):
        raise TypeError(f"audit must be a mapping (the AuditResult JSON), got {type(audit).__name__}.")
    ctx = RankingContext.from_audit(audit, saturation_threshold=saturation_threshold, alpha=alpha, priors=priors)
    found = data_findings(audit, ctx) + label_findings(audit, ctx)
    found.sort(key=rank_order)
    return [dataclasses.replace(lim, rank=i) for i, lim in enumerate(found, start=1)]


def verdict(audit: Mapping, limitations: Sequence[Limitation]) -> dict:
    """``{"shift_detected", "severity", "summary"}`` — the one-sentence answer a newcomer reads first.

    ``shift_detected`` is true when any detector section reports ``is_shift`` or any shift-kind
    limitation exists; ``severity`` is the highest limitation severity ("none" without any).
    """
    sections = ("covariate", "label", "semantic")
    shift = any(get(audit, s, "is_shift") is True for s in sections) or any(
        lim.kind in SHIFT_KINDS for lim in limitations)
    if not limitations:
        summary = ("A shift was detected, but none of it is large enough to change the benchmark's conclusions."
                   if shift else "No shift, weak context or untested context was found: the benchmark results "
                                 "should hold for this production data.")
        return {"shift_detected": shift, "severity": "none", "summary": summary}
    ordered = sorted(limitations, key=lambda lim: lim.rank)
    severity = max((lim.severity for lim in limitations), key=lambda s: SEVERITY_ORDER.get(s, 0))
    lead = {
        "high": "Do not rely on the benchmark score for this production data",
        "medium": "Use the model with care on this production data",
        "low": "The benchmark score mostly holds for this production data, with a caveat",
    }[severity]
    top = next(lim for lim in ordered if lim.severity == severity)
    others = len(limitations) - 1
    more = f", and {others} more issue{'s were' if others != 1 else ' was'} found" if others else ""
    return {"shift_detected": shift, "severity": severity, "summary": f"{lead}: {top.title}{more}."}


def fails_gate(result: Mapping, level: str) -> bool:
    """Should a CI job fail on this AuditResult at ``level`` (``contextshift audit --fail-on``)?

    ``"shift"``: the verdict says a shift was detected. ``"low" | "medium" | "high"``: some limitation at
    least that severe, other than a saturated benchmark (a property of the benchmark, not of production).

    >>> fails_gate({"verdict": {"shift_detected": False}, "limitations": [
    ...     {"kind": "benchmark_saturation", "severity": "low"}]}, "low")
    False
    """
    if level not in GATE_LEVELS:
        raise ValueError(f"level must be one of {GATE_LEVELS}, got {level!r}.")
    if level == "shift":
        return bool(get(result, "verdict", "shift_detected"))
    floor = SEVERITY_ORDER[level]
    return any(SEVERITY_ORDER.get(str(lim.get("severity")), 0) >= floor
               for lim in result.get("limitations") or () if lim.get("kind") not in STANDING_KINDS)
