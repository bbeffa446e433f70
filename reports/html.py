"""The HTML audit report: one self-contained, offline file (SPEC §7).

* No JavaScript, no external style, font or image: inline CSS and inline SVG charts only.
* Jinja2 with autoescape ON: every user string (column, value, slice and domain names) is
  escaped by the template; only the SVG produced by :mod:`reports.charts` (text XML-escaped by
  matplotlib, then checked by :func:`reports.charts.clean_svg`) is marked safe.
* Bounded size whatever the data: every table is capped (:data:`TABLE_CAP` rows, with an
  "N more" note), every user string shortened, and only aggregates are shown.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from reports import charts
from reports.findings_data import gap_in_production, slice_gap, untested_name
from reports.findings_labels import performance_estimates
from reports.formatting import (
    as_list, effect_label, fmt_metric, fmt_n, fmt_num, fmt_p, fmt_share, get, metric_label, num, shorten,
)
from reports.limitations import Limitation, verdict
from reports.next_round import NextRoundPlan
from reports.normalise import normalise_audit
from reports.records import CORRECTION_LABELS, HIGH_SCORE, KIND_LABELS, MEDIUM_SCORE, RankingContext, SeverityPriors

__all__ = ["render_html", "TABLE_CAP", "ROW_CAP"]

TABLE_CAP = 50
ROW_CAP = 20  # rows to label shown in the report; the exports hold all of them
LIMITATION_CAP = 30
NAME_LIMIT, TEXT_LIMIT = 80, 700


@lru_cache(maxsize=1)
def _environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined
    env = Environment(loader=FileSystemLoader(str(Path(__file__).with_name("templates"))),
                      autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["short"] = lambda text, limit=NAME_LIMIT: shorten(text, limit)
    return env


def _svg(svg: str):
    """Only chart SVG is trusted markup (see module docstring); everything else is escaped."""
    from markupsafe import Markup
    return Markup(svg) if svg else ""


def _capped(items: Sequence, cap: int = TABLE_CAP) -> tuple[list, int]:
    items = list(items)
    return items[:cap], max(0, len(items) - cap)


def _test_row(t: Mapping) -> dict:
    return {
        "name": t.get("name"), "kind": str(t.get("kind") or ""), "method": str(t.get("method") or ""),
        "statistic": _stat(t.get("statistic")), "effect": fmt_num(t.get("effect_size"), 3),
        "effect_name": effect_label(t.get("effect_name")).replace(" distance", ""),
        "floor": fmt_num(t.get("effect_floor"), 3),
        "p": _p_cell(t.get("p_value")), "p_adj": _p_cell(t.get("p_value_adjusted")),
        "n": f"{fmt_n(t.get('n_reference'))[2:]} / {fmt_n(t.get('n_current'))[2:]}",
        "drifted": t.get("drifted") is True, "status": str(t.get("status") or "ok"),
    }


def _stat(value) -> str:
    f = num(value)
    if f is None:
        return ""
    return f"{f:,.1f}" if abs(f) >= 100 else f"{f:.3f}"


def _p_cell(value) -> str:
    return fmt_p(value, "").lstrip(" =").strip() if num(value) is not None else "n/a"


def _sorted_tests(tests: list) -> list:
    return sorted(tests, key=lambda t: (t.get("drifted") is not True, -(num(t.get("effect_size")) or -1.0)))


def _covariate(audit: Mapping) -> dict:
    features = _sorted_tests(as_list(get(audit, "covariate", "features")))
    shown, more = _capped(features)
    missing, missing_more = _capped(_sorted_tests(as_list(get(audit, "covariate", "missing"))))
    mv = get(audit, "covariate", "multivariate", default={})
    multivariate = _test_row(mv) if isinstance(mv, Mapping) and mv else None
    if multivariate is not None:
        method = str(mv.get("method") or "").lower()
        multivariate["label"] = "AUC" if ("classifier" in method or "auc" in method) else "statistic"
        multivariate["ci"] = fmt_metric(mv.get("statistic"), get(mv, "details", "auc_ci"))
    return {
        "is_shift": get(audit, "covariate", "is_shift"), "n_features": len(features),
        "n_drifted": sum(1 for f in features if f.get("drifted") is True),
        "rows": [_test_row(f) for f in shown], "more": more, "multivariate": multivariate,
        "missing": [_test_row(m) for m in missing], "missing_more": missing_more,
        "chart": _svg(charts.drift_chart(features[:15])),
    }


def _label(audit: Mapping) -> dict:
    label = get(audit, "label", default={})
    label = label if isinstance(label, Mapping) else {}
    bench = label.get("benchmark_prior") if isinstance(label.get("benchmark_prior"), Mapping) else {}
    prod = label.get("production_prior_estimate") if isinstance(label.get("production_prior_estimate"), Mapping) else {}
    classes, more = _capped(sorted(set(map(str, bench)) | set(map(str, prod))))
    priors = []
    for c in classes:
        est = prod.get(c) if isinstance(prod.get(c), Mapping) else {}
        lo, hi = num(est.get("ci_low")), num(est.get("ci_high"))
        interval = f" [{fmt_share(lo)}, {fmt_share(hi)}]" if lo is not None and hi is not None else ""
        priors.append({"cls": c, "benchmark": fmt_share(bench.get(c)),
                       "production": fmt_share(est.get("estimate")) + interval})
    estimated = label.get("estimated_performance") if isinstance(label.get("estimated_performance"), Mapping) else {}
    observed = label.get("observed_performance") if isinstance(label.get("observed_performance"), Mapping) else {}
    return {
        "present": bool(label), "is_shift": label.get("is_shift"), "p": fmt_p(label.get("p_value")),
        "method": str(label.get("method") or ""), "priors": priors, "more": more,
        "chart": _svg(charts.prior_chart(bench, prod)),
        "estimates": [{"method": m, "value": fmt_metric(v, (lo, hi))} for m, v, lo, hi in performance_estimates(
            estimated, estimated.get("metric") or get(audit, "overall", "metric"))][:TABLE_CAP],
        "estimate_metric": metric_label(estimated.get("metric") or get(audit, "overall", "metric")),
        "observed": {
            "metric": metric_label(observed.get("metric") or get(audit, "overall", "metric")),
            "benchmark": fmt_metric(observed.get("benchmark_value"), observed.get("benchmark_ci")),
            "production": fmt_metric(observed.get("production_value"), observed.get("production_ci")),
            "n": fmt_n(observed.get("n_production")), "p": fmt_p(observed.get("p_value_adjusted"), "adjusted p"),
            "excluded": [shorten(c, 60) for c in (observed.get("excluded_contexts") or []) if isinstance(c, str)][:8],
        } if observed else None,
    }


def _region_contexts(top) -> str:
    if isinstance(top, Mapping):
        return ", ".join(f"{shorten(k, 30)} = {shorten(v, 30)}" for k, v in list(top.items())[:4])
    if isinstance(top, (list, tuple)):
        return ", ".join(shorten(c, 60) for c in top[:4])
    return ""


def _optional_metric(a: Mapping, key: str, ci_key: str) -> str | None:
    return fmt_metric(a.get(key), a.get(ci_key)) if num(a.get(key)) is not None else None


def _attribution(attribution, audit: Mapping) -> dict | None:
    if not isinstance(attribution, Mapping) or not attribution:
        return None
    a = attribution
    return {
        "metric": metric_label(a.get("metric") or get(audit, "overall", "metric")),
        "benchmark": fmt_metric(a.get("benchmark_value"), a.get("benchmark_ci")),
        "expected": fmt_metric(a.get("expected_production_value"), a.get("expected_production_ci", a.get("expected_ci"))),
        "observed": fmt_metric(a.get("observed_production_value"), a.get("observed_production_ci", a.get("observed_ci")))
        if num(a.get("observed_production_value")) is not None else "unknown (no production labels)",
        "mix": _optional_metric(a, "mix_effect", "mix_ci"),
        "within": _optional_metric(a, "within_effect", "within_ci"),
        "uncovered": fmt_share(a.get("uncovered_share")) if num(a.get("uncovered_share")) is not None else None,
    }


def _context(audit: Mapping) -> dict:
    tests, more = _capped(_sorted_tests(as_list(get(audit, "semantic", "contexts"))))
    untested, untested_more = _capped(sorted(as_list(get(audit, "semantic", "untested_contexts")),
                                             key=lambda u: -(num(u.get("production_share")) or 0)))
    emb = get(audit, "semantic", "embedding", default={})
    regions, regions_more = _capped(as_list(emb.get("novel_regions")) if isinstance(emb, Mapping) else [], 20)
    attribution = get(audit, "semantic", "attribution", default={})
    return {
        "is_shift": get(audit, "semantic", "is_shift"), "tests": [_test_row(t) for t in tests], "more": more,
        "untested": [{"name": untested_name(u),
                      "n_benchmark": fmt_n(u.get("n_benchmark"))[2:], "n_production": fmt_n(u.get("n_production"))[2:],
                      "share": fmt_share(u.get("production_share"))} for u in untested],
        "untested_more": untested_more,
        "embedding": _test_row(emb) if isinstance(emb, Mapping) and emb else None,
        "regions": [{"cluster": r.get("cluster"), "n": fmt_n(r.get("n_production"))[2:],
                     "production": fmt_share(r.get("production_share")), "benchmark": fmt_share(r.get("benchmark_share")),
                     "contexts": _region_contexts(r.get("top_contexts"))} for r in regions],
        "regions_more": regions_more,
        "attribution": _attribution(attribution, audit),
    }


def _slices(audit: Mapping, limitations: Sequence[Limitation]) -> dict:
    ctx = RankingContext.from_audit(audit, saturation_threshold=None, alpha=None, priors=None)
    weak = [lim.slice for lim in limitations if lim.kind == "underperforming_slice"]
    gaps = {id(s): slice_gap(s, ctx) for s in as_list(get(audit, "slices"))}
    slices = sorted(as_list(get(audit, "slices")),
                    key=lambda s: (str(s.get("name")) not in weak, -(gaps[id(s)] if gaps[id(s)] is not None else -9.0)))
    shown, more = _capped(slices)
    rows = [{
        "name": s.get("title") or s.get("name"), "definition": shorten(s.get("definition"), 120), "source": str(s.get("source") or ""),
        "n_benchmark": fmt_n(s.get("n_benchmark"))[2:], "n_production": fmt_n(s.get("n_production"))[2:],
        "benchmark_share": fmt_share(s.get("benchmark_share")), "production_share": fmt_share(s.get("production_share")),
        "benchmark": fmt_metric(s.get("benchmark_value"), s.get("benchmark_ci")),
        "production": fmt_metric(s.get("production_value"), s.get("production_ci")),
        "gap": fmt_num(gaps[id(s)]), "gap_where": "production" if gap_in_production(s) else "benchmark",
        "p_gap": _p_cell(s.get("gap_p_value_adjusted")), "p_change": _p_cell(s.get("p_value_adjusted")),
        "weak": str(s.get("name")) in weak, "status": str(s.get("status") or "ok").replace("_", " "),
        "metric": metric_label(s.get("metric") or get(audit, "overall", "metric")),
    } for s in shown]
    chart = charts.slice_chart(slices[:25], overall_value=get(audit, "overall", "benchmark_value"),
                               metric=str(get(audit, "overall", "metric") or "metric"), highlight=weak)
    labelled = any(num(s.get("production_value")) is not None for s in shown)
    return {"rows": rows, "more": more, "chart": _svg(chart), "n": len(slices), "labelled": labelled}


def _plan(plan: NextRoundPlan | None) -> dict | None:
    if plan is None:
        return None
    allocations, more = _capped([a for a in plan.allocations if a.n_to_label > 0] or plan.allocations)
    rows, rows_more = _capped(plan.rows, ROW_CAP)
    return {
        "budget": f"{plan.budget:,}", "allocated": f"{plan.n_allocated:,}", "unallocated": plan.n_unallocated,
        "min_size": plan.min_slice_size, "rule": plan.diversity_rule, "notes": list(plan.notes)[:10],
        "allocations": [{"slice": a.slice, "kind": KIND_LABELS.get(a.kind, a.kind.replace("_", " ")),
                         "n": f"{a.n_to_label:,}", "selected": f"{a.n_selected:,}", "reason": shorten(a.reason, 160),
                         "share": fmt_share(a.production_share), "width": fmt_num(a.ci_width)} for a in allocations],
        "more": more, "has_rows": bool(plan.rows),
        "rows": [{"rank": r.rank, "id": shorten(r.id, 60), "slice": r.slice, "uncertainty": fmt_num(r.uncertainty, 3),
                  "group": shorten(r.group or "", 40),
                  "tags": shorten(", ".join(t for t in r.tags if t != r.slice), 160)} for r in rows],
        "rows_more": rows_more,
    }


def _flatten(value, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, Mapping):
        return [item for k, v in value.items() for item in _flatten(v, f"{prefix}{k}." if prefix or k else "")]
    key = prefix.rstrip(".")
    if isinstance(value, (list, tuple)):
        return [(key, shorten(", ".join(map(str, value[:20])), 160))]
    return [(key, shorten(value if value is not None else "—", 160))]


def _headline(audit: Mapping, limitations: Sequence[Limitation]) -> dict:
    metric = metric_label(get(audit, "overall", "metric") or get(audit, "parameters", "primary_metric"))
    production = fmt_metric(get(audit, "overall", "production_value"), get(audit, "overall", "production_ci"))
    production_note = "observed with production labels"
    if production == "n/a":
        estimated = get(audit, "label", "estimated_performance", default={})
        estimates = performance_estimates(estimated, (estimated.get("metric") if isinstance(estimated, Mapping) else None)
                                          or get(audit, "overall", "metric"))
        if estimates:
            name, value, lo, hi = estimates[0]
            production, production_note = "≈ " + fmt_metric(value, (lo, hi)), f"label-free estimate ({name})"
        else:
            production, production_note = "unknown", "no production labels"
    counts = {s: sum(1 for lim in limitations if lim.severity == s) for s in ("high", "medium", "low")}
    return {
        "metric": metric, "production": production, "production_note": production_note,
        "benchmark": fmt_metric(get(audit, "overall", "benchmark_value"), get(audit, "overall", "benchmark_ci")),
        "benchmark_n": fmt_n(get(audit, "overall", "n") or get(audit, "benchmark", "n_rows")),
        "n_benchmark": fmt_n(get(audit, "benchmark", "n_rows"))[2:],
        "n_production": fmt_n(get(audit, "production", "n_rows"))[2:],
        "counts": counts, "shifts": [(name, get(audit, key, "is_shift")) for name, key in
                                     (("Covariate", "covariate"), ("Label", "label"), ("Context", "semantic"))],
    }


def _limitation_rows(limitations: Sequence[Limitation]) -> tuple[list, int]:
    shown, more = _capped(sorted(limitations, key=lambda lim: lim.rank), LIMITATION_CAP)
    return [{"rank": lim.rank, "kind": KIND_LABELS.get(lim.kind, lim.kind), "severity": lim.severity,
             "title": shorten(lim.title[:1].upper() + lim.title[1:], 240), "statement": shorten(lim.statement, TEXT_LIMIT),
             "score": f"{lim.score:.3f}", "basis": shorten(get(lim.evidence, "severity_basis") or "", 160)}
            for lim in shown], more


def render_html(audit: Mapping, limitations: Sequence[Limitation], plan: NextRoundPlan | None = None) -> str:
    """Render the whole report as one self-contained HTML string (well under 1 MB)."""
    audit = normalise_audit(audit)
    rows, more = _limitation_rows(limitations)
    params = get(audit, "parameters", default={})
    context = {
        "audit_id": shorten(get(audit, "id") or "unsaved audit", NAME_LIMIT), "status": str(get(audit, "status") or ""),
        "domain": get(audit, "domain") or get(params, "domain_pack") or "generic",
        "created": shorten(get(audit, "created_at") or "", 40), "synthetic": get(audit, "synthetic") is True,
        "benchmark_name": get(audit, "benchmark", "name") or get(audit, "benchmark", "id") or "benchmark",
        "production_name": get(audit, "production", "name") or get(audit, "production", "id") or "production",
        "verdict": verdict(audit, limitations), "headline": _headline(audit, limitations),
        "limitations": rows, "limitations_more": more,
        "covariate": _covariate(audit), "label": _label(audit), "context": _context(audit),
        "slices": _slices(audit, limitations), "plan": _plan(plan),
        "parameters": _flatten(params)[:60], "timings": _flatten(get(audit, "timings", default={}))[:20],
        "companion": get(params, "evidently_companion") is True,
        "notes": [{"part": shorten(n.get("part"), 80), "reason": shorten(n.get("reason"), 300)}
                  for n in as_list(get(audit, "notes"))][:TABLE_CAP],
        "priors": SeverityPriors(), "high_score": HIGH_SCORE, "medium_score": MEDIUM_SCORE,
        "alpha": num(get(params, "alpha")) or 0.05,
        "correction": CORRECTION_LABELS.get(str(get(params, "correction") or "bh"), shorten(get(params, "correction"), 40)),
    }
    return _environment().get_template("report.html.j2").render(**context)
