"""Which findings of an audit a monitor alerts on, and under what stable key.

Alerts are for what changed against the benchmark. Standing limitations -- what the benchmark
already had before any production data arrived -- go to the trend page and never alert:
a saturated benchmark, the benchmark's label quality, and a slice that is as weak on the
benchmark as it is in production.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from detectors.metric_registry import lower_is_better
from domains import evaluate

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


def finding_key(lim: dict[str, Any]) -> str:
    """The stable ``"<kind>:<canonical subject>"`` of a limitation (one place to switch when keys land)."""
    return lim.get("key") or f"{lim['kind']}:{lim.get('slice') or ''}"


def is_standing(lim: dict[str, Any], result: dict[str, Any]) -> bool:
    """True unless the limitation claims a change against the benchmark: standing ones go to the trend page.

    A change claim rests on a benchmark → production change test of the audit. The limitation says
    which it is (``claim``); without that field, a weak slice counts as a change only when its own
    change test (``changed``) found it worse than on the benchmark -- a point value that dips below
    the benchmark's proves nothing, and a slice tested against the rest of production is as weak
    on the benchmark as it ever was.
    """
    if lim.get("kind") in STANDING_KINDS:
        return True
    if lim.get("claim") in ("change", "standing"):
        return lim["claim"] == "standing"
    if lim.get("kind") != "underperforming_slice":
        return False
    sl = next((s for s in result.get("slices") or [] if s.get("name") == lim.get("slice")), None)
    if sl is None or sl.get("changed") is not True or sl.get("benchmark_value") is None \
            or sl.get("production_value") is None:
        return True
    drop = float(sl["benchmark_value"]) - float(sl["production_value"])
    return (drop >= 0) if lower_is_better(sl.get("metric")) else (drop <= 0)  # changed, but for the better


def alertable(result: dict[str, Any], min_severity: str) -> tuple[list[Finding], list[Finding]]:
    """Split the audit's limitations into ``(alert-worthy changes, standing or below threshold)``."""
    floor = SEVERITY_ORDER.get(min_severity, 2)
    changes, others = [], []
    for lim in result.get("limitations") or []:
        finding = Finding(key=finding_key(lim), kind=str(lim.get("kind")), severity=str(lim.get("severity", "low")),
                          statement=str(lim.get("statement", "")), definition=lim.get("definition"))
        worthy = not is_standing(lim, result) and SEVERITY_ORDER.get(finding.severity, 0) >= floor
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


def trend_summary(result: dict[str, Any]) -> dict[str, Any]:
    """The numbers the trend page plots for one run (small: stored with the run)."""
    overall = result.get("overall") or {}
    cov = result.get("covariate") or {}
    multi = cov.get("multivariate") or {}
    multi = multi.get("test") or multi  # older results nest the classifier test one level down
    drifted = [f for f in cov.get("features") or [] if f.get("drifted")]
    top = max(cov.get("features") or [], key=lambda f: f.get("effect_size") or 0, default=None)
    estimate = None
    for method in (((result.get("label") or {}).get("estimated_performance") or {}).get("methods") or {}).values():
        if method.get("status") == "ok" and method.get("estimate") is not None:
            estimate = {"value": method["estimate"], "ci": [method.get("ci_low"), method.get("ci_high")],
                        "method": method.get("method")}
            break
    slices = sorted((s for s in result.get("slices") or [] if s.get("gap") is not None),
                    key=lambda s: -(s.get("gap") or 0))[:3]
    return {
        "severity": (result.get("verdict") or {}).get("severity", "none"),
        "metric": overall.get("metric"), "benchmark_value": overall.get("benchmark_value"),
        "observed": None if overall.get("production_value") is None else
        {"value": overall["production_value"], "ci": overall.get("production_ci")},
        "estimated": estimate,
        "n_drifted_features": len(drifted), "n_features": len(cov.get("features") or []),
        "top_feature": None if top is None else {"name": top.get("name"), "effect_size": top.get("effect_size")},
        "classifier_auc": multi.get("auc", multi.get("statistic")),
        "worst_slices": [{"name": s.get("name"), "gap": s.get("gap"), "production_value": s.get("production_value")}
                         for s in slices],
        "limitations": [{"key": finding_key(lim), "kind": lim.get("kind"), "severity": lim.get("severity"),
                         "standing": is_standing(lim, result)} for lim in result.get("limitations") or []],
    }
