"""Which findings of an audit a monitor alerts on, and under what stable key.

Alerts are for what changed against the benchmark. Standing limitations -- what the benchmark
already had before any production data arrived -- go to the trend page and never alert:
a saturated benchmark, the benchmark's label quality, and a slice that is as weak on the
benchmark as it is in production. The audit decides which is which (each limitation's ``claim``);
a monitor reads it from the run's :class:`~reports.result.AuditResult`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domains import evaluate
from reports.result import AuditResult, LimitationRecord

SEVERITY_ORDER = {"none": 0, "low": 1, "medium": 2, "high": 3}
STANDING_KINDS = frozenset({"benchmark_saturation", "label_quality"})


@dataclass(frozen=True)
class Finding:
    key: str
    kind: str
    severity: str
    statement: str
    definition: str | None = None  # slice expression of the production rows concerned, when it concerns rows


MATCH_OVERLAP = 0.5  # Jaccard overlap of two findings' rows in this run's batch that makes them one population


def finding_key(lim: LimitationRecord) -> str:
    """The stable ``"<kind>:<canonical subject>"`` of a limitation."""
    return lim.key or f"{lim.kind}:{lim.slice or ''}"


def is_standing(lim: LimitationRecord) -> bool:
    """True unless the limitation claims a change against the benchmark: standing ones go to the trend page.

    A change claim rests on a benchmark → production change test of the audit; the audit states
    which it is (``claim``: a weak slice is a change only when its own change test found it worse,
    ``reports.findings_data``). Results stored before ``claim`` existed get it from their kind when
    they are read (:class:`~reports.result.LimitationRecord`); a monitor only decides on the result
    its run just produced.
    """
    return lim.kind in STANDING_KINDS or lim.claim == "standing"


def alertable(result: AuditResult, min_severity: str) -> tuple[list[Finding], list[Finding]]:
    """Split the audit's limitations into ``(alert-worthy changes, standing or below threshold)``."""
    floor = SEVERITY_ORDER.get(min_severity, 2)
    changes: list[Finding] = []
    others: list[Finding] = []
    for lim in result.limitations:
        finding = Finding(key=finding_key(lim), kind=lim.kind, severity=lim.severity, statement=lim.statement,
                          definition=lim.definition)
        worthy = not is_standing(lim) and SEVERITY_ORDER.get(finding.severity, 0) >= floor
        (changes if worthy else others).append(finding)
    return changes, others


def _rows(definition: str | None, frame: Any):
    if not definition or frame is None:
        return None

    try:
        mask = evaluate(definition, frame).to_numpy()
    except (ValueError, KeyError, TypeError):  # a definition over columns this batch lacks
        return None
    return mask if mask.any() else None


def match_open_alerts(found: list[Finding], open_keys: list[str], frame: Any) -> list[Finding]:
    """Give a finding the key of an open alert about the same population, judged by rows.

    Discovered boundaries and row definitions can differ from run to run for one population
    (``5 <= age < 12`` then ``10 <= age < 19``); each new key opened a new alert. A finding whose
    rows in this run's batch overlap an open alert's rows (same kind, Jaccard >= :data:`MATCH_OVERLAP`)
    takes that alert's key, so the alert stays one. Keys are ``"<kind>:<definition>"``.
    """
    candidates = []
    for key in open_keys:
        kind, _, definition = key.partition(":")
        rows = _rows(definition, frame)
        if rows is not None:
            candidates.append((key, kind, rows))
    out, taken = [], set()
    for f in found:
        rows = None if f.key in open_keys else _rows(f.definition, frame)
        best, best_overlap = None, MATCH_OVERLAP
        for key, kind, other in candidates if rows is not None else ():
            if kind != f.kind or key in taken:
                continue
            overlap = (rows & other).sum() / max((rows | other).sum(), 1)
            if overlap >= best_overlap:
                best, best_overlap = key, overlap
        if best is not None:
            taken.add(best)
            f = Finding(key=best, kind=f.kind, severity=f.severity, statement=f.statement, definition=f.definition)
        out.append(f)
    return out


def trend_summary(result: AuditResult) -> dict[str, Any]:
    """The numbers the trend page plots for one run (small: stored with the run)."""
    overall, cov = result.overall, result.covariate
    drifted = [f for f in cov.features if f.drifted]
    top = max(cov.features, key=lambda f: f.effect_size or 0, default=None)
    estimated = result.label.estimated_performance
    estimate = next(({"value": m.estimate, "ci": [m.ci_low, m.ci_high], "method": m.method}
                     for m in (estimated.methods.values() if estimated else ())
                     if m.status == "ok" and m.estimate is not None), None)
    gaps = sorted(((s.gap, s) for s in result.slices if s.gap is not None), key=lambda pair: -pair[0])
    slices = [s for _, s in gaps[:3]]
    return {
        "severity": result.verdict.severity,
        "metric": overall.metric if overall else None, "benchmark_value": overall.benchmark_value if overall else None,
        "observed": None if overall is None or overall.production_value is None else
        {"value": overall.production_value, "ci": overall.production_ci},
        "estimated": estimate,
        "n_drifted_features": len(drifted), "n_features": len(cov.features),
        "top_feature": None if top is None else {"name": top.name, "effect_size": top.effect_size},
        "classifier_auc": cov.multivariate.auc if cov.multivariate else None,
        "worst_slices": [{"name": s.name, "gap": s.gap, "production_value": s.production_value} for s in slices],
        "limitations": [{"key": finding_key(lim), "kind": lim.kind, "severity": lim.severity,
                         "standing": is_standing(lim)} for lim in result.limitations],
    }
