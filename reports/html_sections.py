"""The data behind each section of the HTML report (covariate, label, context, slices, next
round), read from the AuditResult JSON alone. Only aggregates; every table capped.

A cell with no value shows ``—`` (:data:`MISSING`) and the section says why values can be
missing; ``n/a`` never appears without a reason.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from reports import charts
from reports.derived_note import derived_note
from reports.distribution_charts import distribution_note, histogram_svg
from reports.findings_labels import performance_estimates
from reports.formatting import (
    as_list, effect_label, fmt_metric, fmt_n, fmt_num, fmt_p, fmt_share, get, lower_is_better, metric_label, num,
    shorten,
)
from reports.records import KIND_LABELS
from reports.result import EstimatedPerformance

__all__ = ["MISSING", "TABLE_CAP", "ROW_CAP", "DIST_CAP", "covariate", "label", "context", "slices", "plan",
           "capped", "trusted_svg", "generated_text"]

MISSING = "—"
TABLE_CAP = 50
ROW_CAP = 20  # rows to label shown in the report; the exports hold all of them
DIST_CAP = 12  # histograms of drifted columns (each 2–4 kB)
CHART_SLICES = 30


_NEGATIVE_ZERO = re.compile(r"(?<![\w.])-(0(?:\.0+)?)(?![\d.])")


def generated_text(text: Any, limit: int) -> str:
    """Generated sentences (statements, titles, reasons) without a "-0.000": a value that
    rounds to zero has no sign worth printing."""
    return _NEGATIVE_ZERO.sub(r"\1", shorten(text or "", limit))


def trusted_svg(svg: str):
    """Only chart SVG is trusted markup (built by :mod:`reports.charts` or
    :mod:`reports.distribution_charts`, text XML-escaped there and checked); all else is escaped."""
    from markupsafe import Markup
    return Markup(svg) if svg else ""


def capped(items: Sequence, cap: int = TABLE_CAP) -> tuple[list, int]:
    items = list(items)
    return items[:cap], max(0, len(items) - cap)


def _count(value) -> str:
    return fmt_n(value)[2:] if num(value) is not None else MISSING


def _p_cell(value) -> str:
    return fmt_p(value, "").lstrip(" =").strip() if num(value) is not None else MISSING


def _stat(value) -> str:
    f = num(value)
    if f is None:
        return ""
    return fmt_num(f, 1) if abs(f) >= 100 else fmt_num(f, 3)


def _test_row(t: Mapping) -> dict:
    return {
        "name": t.get("name"), "kind": str(t.get("kind") or ""), "method": str(t.get("method") or ""),
        "statistic": _stat(t.get("statistic")), "effect": fmt_num(t.get("effect_size"), 3, MISSING),
        "effect_name": effect_label(t.get("effect_name")).replace(" distance", ""),
        "floor": fmt_num(t.get("effect_floor"), 3, MISSING),
        "p": _p_cell(t.get("p_value")), "p_adj": _p_cell(t.get("p_value_adjusted")),
        "n": f"{_count(t.get('n_reference'))} / {_count(t.get('n_current'))}",
        "drifted": t.get("drifted") is True, "status": str(t.get("status") or "ok"),
    }


def _sorted_tests(tests: list) -> list:
    return sorted(tests, key=lambda t: (t.get("drifted") is not True, -(num(t.get("effect_size")) or -1.0)))


def _panels(tests: Sequence[Mapping], distributions) -> tuple[list, int]:
    """A histogram per drifted column that has a distribution summary, largest effect first."""
    if not isinstance(distributions, Mapping):
        return [], 0
    panels = []
    for t in tests:
        summary = distributions.get(str(t.get("name")))
        svg = histogram_svg(summary) if t.get("drifted") is True and isinstance(summary, Mapping) else ""
        if svg:
            panels.append({"name": t.get("name"), "svg": trusted_svg(svg), "note": distribution_note(summary),
                           "effect": f"{effect_label(t.get('effect_name'))} {fmt_num(t.get('effect_size'), 3)}"})
    return capped(panels, DIST_CAP)


def covariate(audit: Mapping) -> dict:
    features = _sorted_tests(as_list(get(audit, "covariate", "features")))
    shown, more = capped(features)
    missing, missing_more = capped(_sorted_tests(as_list(get(audit, "covariate", "missing"))))
    mv = get(audit, "covariate", "multivariate", default={})
    multivariate = _test_row(mv) if isinstance(mv, Mapping) and mv else None
    if multivariate is not None:
        method = str(mv.get("method") or "").lower()
        multivariate["label"] = "AUC" if ("classifier" in method or "auc" in method) else "statistic"
        multivariate["ci"] = fmt_metric(mv.get("statistic"), get(mv, "details", "auc_ci"), missing=MISSING)
    panels, panels_more = _panels(features, get(audit, "covariate", "distributions"))
    return {
        "is_shift": get(audit, "covariate", "is_shift"), "n_features": len(features),
        "n_drifted": sum(1 for f in features if f.get("drifted") is True),
        "rows": [_test_row(f) for f in shown], "more": more, "multivariate": multivariate,
        "missing": [_test_row(m) for m in missing], "missing_more": missing_more,
        "chart": trusted_svg(charts.drift_chart(features[:15])), "panels": panels, "panels_more": panels_more,
        "has_distributions": isinstance(get(audit, "covariate", "distributions"), Mapping),
    }


def _priors(label: Mapping) -> tuple[list, int, bool]:
    bench = label.get("benchmark_prior") if isinstance(label.get("benchmark_prior"), Mapping) else {}
    prod = label.get("production_prior_estimate") if isinstance(label.get("production_prior_estimate"), Mapping) else {}
    observed = label.get("observed_prior") if isinstance(label.get("observed_prior"), Mapping) else {}
    classes, more = capped(sorted(set(map(str, bench)) | set(map(str, prod)) | set(map(str, observed))))
    rows = []
    for c in classes:
        est = prod.get(c) if isinstance(prod.get(c), Mapping) else {}
        lo, hi = num(est.get("ci_low")), num(est.get("ci_high"))
        interval = f" [{fmt_share(lo)}, {fmt_share(hi)}]" if lo is not None and hi is not None else ""
        estimate = fmt_share(est.get("estimate"), MISSING)
        rows.append({"cls": c, "benchmark": fmt_share(bench.get(c), MISSING),
                     "production": estimate + (interval if estimate != MISSING else ""),
                     "observed": fmt_share(observed.get(c), MISSING)})
    return rows, more, bool(observed)


def label(audit: Mapping) -> dict:
    lab = get(audit, "label", default={})
    lab = lab if isinstance(lab, Mapping) else {}
    metric_name = get(audit, "overall", "metric") or get(audit, "parameters", "primary_metric")
    priors, more, has_observed = _priors(lab)
    estimated = lab.get("estimated_performance") if isinstance(lab.get("estimated_performance"), Mapping) else {}
    observed = lab.get("observed_performance") if isinstance(lab.get("observed_performance"), Mapping) else {}
    return {
        "present": bool(lab), "is_shift": lab.get("is_shift"),
        "p": fmt_p(lab.get("p_value_adjusted") if num(lab.get("p_value_adjusted")) is not None else lab.get("p_value"),
                   "adjusted p" if num(lab.get("p_value_adjusted")) is not None else "p"),
        "p_known": num(lab.get("p_value")) is not None or num(lab.get("p_value_adjusted")) is not None,
        "method": str(lab.get("method") or ""), "priors": priors, "more": more, "has_observed": has_observed,
        "chart": trusted_svg(charts.prior_chart(lab.get("benchmark_prior") or {},
                                                lab.get("production_prior_estimate") or {},
                                                observed=lab.get("observed_prior"))),
        "estimates": [{"method": m, "value": fmt_metric(v, (lo, hi), missing=MISSING)}
                      for m, v, lo, hi in performance_estimates(EstimatedPerformance.model_validate(estimated),
                                                                metric_name)][:TABLE_CAP],
        "estimate_metric": metric_label(metric_name),
        "contradictions": [f"The label-free estimate {fmt_metric(c.get('estimate'), c.get('ci'))} "
                           f"({shorten(c.get('method'), 40)}) contradicts the observed {fmt_num(c.get('observed'))}: "
                           "its assumption (only covariate or only label shift) does not hold here."
                           for c in as_list(lab.get("estimate_checks")) if c.get("contradicts") is True][:TABLE_CAP],
        "change": _overall_change(audit),
        "observed": {
            "metric": metric_label(metric_name),
            "benchmark": fmt_metric(observed.get("benchmark_value"), observed.get("benchmark_ci"), missing=MISSING),
            "production": fmt_metric(observed.get("production_value"), observed.get("production_ci"), missing=MISSING),
            "n": fmt_n(observed.get("n_production")) if num(observed.get("n_production")) is not None else "",
            "p": fmt_p(observed.get("p_value_adjusted"), "adjusted p")
            if num(observed.get("p_value_adjusted")) is not None else "not tested",
            "excluded": [shorten(c, 60) for c in (observed.get("excluded_contexts") or []) if isinstance(c, str)][:8],
        } if observed else None,
    }


def _overall_change(audit: Mapping) -> str:
    """The plain benchmark → production test of the overall metric, as one line (empty when not run)."""
    overall = get(audit, "overall", default={})
    if not isinstance(overall, Mapping) or "change_test" not in overall:
        return ""
    if num(overall.get("change_p_value")) is None:
        return "not tested (too few labelled rows)"
    method = {"two_proportion_z": "two-proportion z-test", "delong_z": "DeLong z-test",
              "bootstrap": "bootstrap test"}.get(str(overall.get("change_method")), "change test")
    verdict = "changed" if overall.get("changed") is True else "no significant change"
    return (f"{fmt_metric(overall.get('change_difference'), overall.get('change_difference_ci'))} production − "
            f"benchmark ({method}, {fmt_p(overall.get('change_p_value_adjusted'), 'adjusted p')}): {verdict}")


def _region_contexts(top) -> str:
    if isinstance(top, Mapping):
        return ", ".join(f"{shorten(k, 30)} = {shorten(v, 30)}" for k, v in list(top.items())[:4])
    if isinstance(top, (list, tuple)):
        return ", ".join(shorten(c, 60) for c in top[:4])
    return ""


def _attribution(a, metric_name) -> dict | None:
    if not isinstance(a, Mapping) or not a:
        return None

    def optional(key: str, ci_key: str) -> str | None:
        return fmt_metric(a.get(key), a.get(ci_key)) if num(a.get(key)) is not None else None

    return {
        # the pack's primary metric, whatever the attribution block calls it
        "metric": metric_label(metric_name or a.get("metric")),
        "metric_differs": bool(a.get("metric") and metric_name and a.get("metric") != metric_name),
        "own_metric": metric_label(a.get("metric")),
        "benchmark": fmt_metric(a.get("benchmark_value"), a.get("benchmark_ci"), missing=MISSING),
        "expected": fmt_metric(a.get("expected_production_value"),
                               a.get("expected_production_ci", a.get("expected_ci")), missing=MISSING),
        "observed": fmt_metric(a.get("observed_production_value"), a.get("observed_production_ci", a.get("observed_ci")))
        if num(a.get("observed_production_value")) is not None else "not measured (production is not labelled)",
        "mix": optional("mix_effect", "mix_ci"), "within": optional("within_effect", "within_ci"),
        "uncovered": fmt_share(a.get("uncovered_share")) if num(a.get("uncovered_share")) is not None else None,
    }


def _untested_name(u: Mapping) -> str:
    for key in ("name", "slice"):
        if u.get(key) not in (None, ""):
            return str(u[key])
    return f"{u.get('column', 'context')} = {u.get('value', '?')}"


def context(audit: Mapping) -> dict:
    contexts = _sorted_tests(as_list(get(audit, "semantic", "contexts")))
    tests, more = capped(contexts)
    untested, untested_more = capped(sorted(as_list(get(audit, "semantic", "untested_contexts")),
                                            key=lambda u: -(num(u.get("production_share")) or 0)))
    emb = get(audit, "semantic", "embedding", default={})
    regions, regions_more = capped(as_list(emb.get("novel_regions")) if isinstance(emb, Mapping) else [], 20)
    metric_name = get(audit, "parameters", "primary_metric") or get(audit, "overall", "metric")
    panels, panels_more = _panels(contexts, get(audit, "covariate", "distributions"))
    return {
        "is_shift": get(audit, "semantic", "is_shift"), "tests": [_test_row(t) for t in tests], "more": more,
        "untested": [{"name": _untested_name(u), "definition": shorten(u.get("definition") or "", 160),
                      "n_benchmark": _count(u.get("n_benchmark")), "n_production": _count(u.get("n_production")),
                      "share": fmt_share(u.get("production_share"), MISSING)} for u in untested],
        "untested_more": untested_more,
        "embedding": _test_row(emb) if isinstance(emb, Mapping) and emb else None,
        "regions": [{"cluster": r.get("cluster"), "n": _count(r.get("n_production")),
                     "production": fmt_share(r.get("production_share"), MISSING),
                     "benchmark": fmt_share(r.get("benchmark_share"), MISSING),
                     "contexts": _region_contexts(r.get("top_contexts"))} for r in regions],
        "regions_more": regions_more, "panels": panels, "panels_more": panels_more,
        "attribution": _attribution(get(audit, "semantic", "attribution", default={}), metric_name),
        "derived": derived_note(audit),
    }


def _gap(s: Mapping, audit: Mapping) -> float | None:
    """Positive = the slice is worse than overall, in the dataset where the gap was measured."""
    if num(s.get("gap")) is not None:
        return num(s.get("gap"))
    metric = s.get("metric") or get(audit, "overall", "metric")
    sign = -1.0 if lower_is_better(metric) else 1.0
    if num(s.get("gap_vs_overall")) is not None:
        return -sign * num(s.get("gap_vs_overall"))
    production = s.get("gap_dataset") == "production" and num(s.get("production_value")) is not None
    value = num(s.get("production_value" if production else "benchmark_value"))
    overall = num(get(audit, "overall", "production_value" if production else "benchmark_value"))
    return None if value is None or overall is None else sign * (overall - value)


def slices(audit: Mapping, weak_names: Sequence[str]) -> dict:
    weak = set(map(str, weak_names))
    everything = as_list(get(audit, "slices"))
    for s in everything:
        if s.get("underperforming") is True:
            weak.add(str(s.get("name")))
    gaps = {id(s): _gap(s, audit) for s in everything}
    ordered = sorted(everything, key=lambda s: (str(s.get("name")) not in weak,
                                                -(gaps[id(s)] if gaps[id(s)] is not None else -9.0)))
    shown, more = capped(ordered)
    metric = metric_label(get(audit, "overall", "metric") or get(audit, "parameters", "primary_metric"))
    rows = [{
        "name": s.get("title") or s.get("name"),
        # a discovered slice is named by its definition: do not print it twice
        "definition": "" if str(s.get("definition")) == str(s.get("title") or s.get("name"))
        else shorten(s.get("definition"), 160),
        "source": str(s.get("source") or ""),
        "n_benchmark": _count(s.get("n_benchmark")), "n_production": _count(s.get("n_production")),
        "benchmark_share": fmt_share(s.get("benchmark_share"), ""), "production_share": fmt_share(s.get("production_share"), ""),
        "benchmark": fmt_metric(s.get("benchmark_value"), s.get("benchmark_ci"), missing=MISSING),
        "production": fmt_metric(s.get("production_value"), s.get("production_ci"), missing=MISSING),
        "gap": fmt_num(gaps[id(s)], missing=MISSING),
        "gap_where": "production" if s.get("gap_dataset") == "production" and num(s.get("production_value")) is not None
        else "benchmark",
        "p_gap": _p_cell(s.get("gap_p_value_adjusted")), "p_change": _p_cell(s.get("p_value_adjusted")),
        "weak": str(s.get("name")) in weak, "status": str(s.get("status") or "ok").replace("_", " "),
        "metric": metric_label(s.get("metric") or get(audit, "overall", "metric")),
    } for s in shown]
    chart = charts.slice_chart(ordered[:CHART_SLICES], overall_value=get(audit, "overall", "benchmark_value"),
                               metric=str(get(audit, "overall", "metric") or "metric"), highlight=sorted(weak),
                               max_slices=CHART_SLICES)
    labelled = any(num(s.get("production_value")) is not None for s in everything)
    return {"rows": rows, "more": more, "chart": trusted_svg(chart), "n": len(ordered), "labelled": labelled,
            "metric": metric, "not_charted": max(0, len(ordered) - CHART_SLICES),
            "production_only": sum(1 for s in ordered[:CHART_SLICES] if num(s.get("benchmark_value")) is None
                                   and num(s.get("production_value")) is not None)}


def plan(p: Mapping | None) -> dict | None:
    """The next-round plan section from ``NextRoundPlan.to_dict()`` (or the AuditResult's ``next_round``)."""
    if not isinstance(p, Mapping) or "allocations" not in p:
        return None
    allocations = as_list(p.get("allocations"))
    shown, more = capped([a for a in allocations if (num(a.get("n_to_label")) or 0) > 0] or allocations)
    rows, rows_more = capped(as_list(p.get("rows")), ROW_CAP)

    def n(value) -> str:
        return f"{int(num(value) or 0):,}"

    return {
        "budget": n(p.get("budget")), "allocated": n(p.get("n_allocated")), "unallocated": p.get("n_unallocated"),
        "min_size": p.get("min_slice_size"), "rule": str(p.get("diversity_rule") or ""),
        "notes": [generated_text(note, 300) for note in (p.get("notes") or []) if isinstance(note, str)][:10],
        "allocations": [{"slice": a.get("slice"), "kind": KIND_LABELS.get(a.get("kind"), str(a.get("kind") or "").replace("_", " ")),
                         "n": n(a.get("n_to_label")), "selected": n(a.get("n_selected")),
                         "reason": generated_text(a.get("reason"), 160), "definition": shorten(a.get("definition") or "", 160),
                         "share": fmt_share(a.get("production_share"), MISSING),
                         "width": fmt_num(a.get("ci_width"), missing=MISSING)} for a in shown],
        "more": more, "has_rows": bool(rows),
        "rows": [{"rank": r.get("rank"), "id": shorten(r.get("id"), 60), "slice": r.get("slice"),
                  "uncertainty": fmt_num(r.get("uncertainty"), 3, MISSING), "group": shorten(r.get("group") or "", 40),
                  "tags": shorten(", ".join(str(t) for t in (r.get("tags") or []) if t != r.get("slice")), 160)}
                 for r in rows],
        "rows_more": rows_more,
    }
