"""The data behind each section of the HTML report (covariate, label, context, slices, next
round), read from the typed AuditEvidence alone. Only aggregates; every table capped. The dicts built
here are the templates' view of the evidence.

A cell with no value shows ``—`` (:data:`MISSING`) and the section says why values can be
missing; ``n/a`` never appears without a reason.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from reports import charts
from reports.derived_note import derived_note
from reports.distribution_charts import distribution_note, histogram_svg
from reports.findings_labels import performance_estimates
from reports.formatting import (
    effect_label,
    fmt_metric,
    fmt_n,
    fmt_num,
    fmt_p,
    fmt_share,
    lower_is_better,
    metric_label,
    shorten,
)
from reports.reading import recorded
from reports.records import KIND_LABELS
from reports.result import (
    Attribution,
    AuditEvidence,
    LabelSection,
    NextRound,
    PriorEstimate,
    ShiftTest,
    SliceRecord,
    UntestedContextRecord,
)

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
    return Markup(svg) if svg else ""


def capped(items: Sequence, cap: int = TABLE_CAP) -> tuple[list, int]:
    items = list(items)
    return items[:cap], max(0, len(items) - cap)


def _count(value: int | None) -> str:
    return fmt_n(value)[2:] if value is not None else MISSING


def _p_cell(value: float | None) -> str:
    return fmt_p(value, "").lstrip(" =").strip() if value is not None else MISSING


def _stat(value: float | None) -> str:
    if value is None:
        return ""
    return fmt_num(value, 1) if abs(value) >= 100 else fmt_num(value, 3)


def _metric_name(audit: AuditEvidence) -> str | None:
    """The primary metric as recorded (overall first), ``None`` when neither side names it."""
    return (audit.overall.metric if audit.overall else None) or audit.parameters.primary_metric


def _test_row(t: ShiftTest) -> dict:
    return {
        "name": t.name, "kind": t.kind, "method": t.method,
        "statistic": _stat(t.statistic), "effect": fmt_num(t.effect_size, 3, MISSING),
        "effect_name": effect_label(t.effect_name).replace(" distance", ""),
        "floor": fmt_num(t.effect_floor, 3, MISSING),
        "p": _p_cell(t.p_value), "p_adj": _p_cell(t.p_value_adjusted),
        "n": f"{_count(t.n_reference)} / {_count(t.n_current)}",
        "drifted": t.drifted, "status": t.status,
    }


def _sorted_tests(tests: Sequence[ShiftTest]) -> list[ShiftTest]:
    return sorted(tests, key=lambda t: (not t.drifted, -(t.effect_size or -1.0)))


def _panels(tests: Sequence[ShiftTest], distributions: Mapping[str, Mapping]) -> tuple[list, int]:
    """A histogram per drifted column that has a distribution summary, largest effect first."""
    panels = []
    for t in tests:
        summary = distributions.get(t.name)
        svg = histogram_svg(summary) if t.drifted and summary is not None else ""
        if svg and summary is not None:
            panels.append({"name": t.name, "svg": trusted_svg(svg), "note": distribution_note(summary),
                           "effect": f"{effect_label(t.effect_name)} {fmt_num(t.effect_size, 3)}"})
    return capped(panels, DIST_CAP)


def covariate(audit: AuditEvidence) -> dict:
    cov = audit.covariate
    features = _sorted_tests(cov.features)
    shown, more = capped(features)
    missing, missing_more = capped(_sorted_tests(cov.missing))
    mv = cov.multivariate
    multivariate = None
    if mv is not None:
        method = mv.method.lower()
        multivariate = {**_test_row(mv), "label": "AUC" if ("classifier" in method or "auc" in method) else "statistic",
                        "ci": fmt_metric(mv.statistic, mv.details.get("auc_ci"), missing=MISSING)}
    panels, panels_more = _panels(features, cov.distributions)
    return {
        "is_shift": recorded(cov, "is_shift"), "n_features": len(features),
        "n_drifted": sum(1 for f in features if f.drifted),
        "rows": [_test_row(f) for f in shown], "more": more, "multivariate": multivariate,
        "missing": [_test_row(m) for m in missing], "missing_more": missing_more,
        "chart": trusted_svg(charts.drift_chart(features[:15])), "panels": panels, "panels_more": panels_more,
    }


def _priors(label: LabelSection) -> tuple[list, int, bool]:
    bench, prod, observed = label.benchmark_prior, label.production_prior_estimate, label.observed_prior or {}
    classes, more = capped(sorted(set(bench) | set(prod) | set(observed)))
    rows = []
    for c in classes:
        est = prod.get(c) or PriorEstimate()
        interval = (f" [{fmt_share(est.ci_low)}, {fmt_share(est.ci_high)}]"
                    if est.ci_low is not None and est.ci_high is not None else "")
        estimate = fmt_share(est.estimate, MISSING)
        rows.append({"cls": c, "benchmark": fmt_share(bench.get(c), MISSING),
                     "production": estimate + (interval if estimate != MISSING else ""),
                     "observed": fmt_share(observed.get(c), MISSING)})
    return rows, more, bool(observed)


def label(audit: AuditEvidence) -> dict:
    lab = audit.label
    metric_name = _metric_name(audit)
    priors, more, has_observed = _priors(lab)
    observed = lab.observed_performance
    adjusted = lab.p_value_adjusted is not None
    return {
        "present": recorded(lab), "is_shift": recorded(lab, "is_shift"),
        "p": fmt_p(lab.p_value_adjusted if adjusted else lab.p_value, "adjusted p" if adjusted else "p"),
        "p_known": lab.p_value is not None or adjusted,
        "method": lab.method or "", "priors": priors, "more": more, "has_observed": has_observed,
        "chart": trusted_svg(charts.prior_chart(lab.benchmark_prior, lab.production_prior_estimate,
                                                observed=lab.observed_prior)),
        "estimates": [{"method": m, "value": fmt_metric(v, (lo, hi), missing=MISSING)}
                      for m, v, lo, hi in performance_estimates(lab.estimated_performance, metric_name)][:TABLE_CAP],
        "estimate_metric": metric_label(metric_name),
        "contradictions": [f"The label-free estimate {fmt_metric(c.estimate, c.ci)} "
                           f"({shorten(c.method, 40)}) contradicts the observed {fmt_num(c.observed)}: "
                           "its assumption (only covariate or only label shift) does not hold here."
                           for c in lab.estimate_checks if c.contradicts][:TABLE_CAP],
        "change": _overall_change(audit),
        "observed": {
            "metric": metric_label(metric_name),
            "benchmark": fmt_metric(observed.benchmark_value, observed.benchmark_ci, missing=MISSING),
            "production": fmt_metric(observed.production_value, observed.production_ci, missing=MISSING),
            "n": fmt_n(observed.n_production) if observed.n_production is not None else "",
            "p": fmt_p(observed.p_value_adjusted, "adjusted p") if observed.p_value_adjusted is not None
            else "not tested",
            "excluded": [shorten(c, 60) for c in observed.excluded_contexts][:8],
        } if observed is not None else None,
    }


def _overall_change(audit: AuditEvidence) -> str:
    """The plain benchmark → production test of the overall metric, as one line (empty when not run)."""
    overall = audit.overall
    if overall is None or overall.change_test is None:
        return ""
    if overall.change_p_value is None:
        return "not tested (too few labelled rows)"
    method = {"two_proportion_z": "two-proportion z-test", "delong_z": "DeLong z-test",
              "bootstrap": "bootstrap test"}.get(str(overall.change_method), "change test")
    verdict = "changed" if overall.changed is True else "no significant change"
    return (f"{fmt_metric(overall.change_difference, overall.change_difference_ci)} production − "
            f"benchmark ({method}, {fmt_p(overall.change_p_value_adjusted, 'adjusted p')}): {verdict}")


def _attribution(a: Attribution | None, metric_name: str | None) -> dict | None:
    if a is None:
        return None

    def optional(value: float | None, ci: list | None) -> str | None:
        return fmt_metric(value, ci) if value is not None else None

    return {
        # the pack's primary metric, whatever the attribution block calls it
        "metric": metric_label(metric_name or a.metric),
        "metric_differs": bool(a.metric and metric_name and a.metric != metric_name),
        "own_metric": metric_label(a.metric),
        "benchmark": fmt_metric(a.benchmark_value, a.benchmark_ci, missing=MISSING),
        "expected": fmt_metric(a.expected_production_value, a.expected_ci, missing=MISSING),
        "observed": fmt_metric(a.observed_production_value, a.observed_ci)
        if a.observed_production_value is not None else "not measured (production is not labelled)",
        "mix": optional(a.mix_effect, a.mix_ci), "within": optional(a.within_effect, a.within_ci),
        "uncovered": fmt_share(a.uncovered_share) if a.uncovered_share is not None else None,
    }


def _untested_name(u: UntestedContextRecord) -> str:
    return u.name or f"{u.column or 'context'} = {'?' if u.value is None else u.value}"


def context(audit: AuditEvidence) -> dict:
    sem = audit.semantic
    contexts = _sorted_tests(sem.contexts)
    tests, more = capped(contexts)
    untested, untested_more = capped(sorted(sem.untested_contexts, key=lambda u: -(u.production_share or 0)))
    emb = sem.embedding
    regions, regions_more = capped(emb.novel_regions if emb is not None else [], 20)
    metric_name = audit.parameters.primary_metric or (audit.overall.metric if audit.overall else None)
    panels, panels_more = _panels(contexts, audit.covariate.distributions)
    return {
        "is_shift": recorded(sem, "is_shift"), "tests": [_test_row(t) for t in tests], "more": more,
        "untested": [{"name": _untested_name(u), "definition": shorten(u.definition or "", 160),
                      "n_benchmark": _count(u.n_benchmark), "n_production": _count(u.n_production),
                      "share": fmt_share(u.production_share, MISSING)} for u in untested],
        "untested_more": untested_more,
        "embedding": _test_row(emb) if emb is not None else None,
        "regions": [{"cluster": r.cluster, "n": _count(r.n_production),
                     "production": fmt_share(r.production_share, MISSING),
                     "benchmark": fmt_share(r.benchmark_share, MISSING),
                     "contexts": ", ".join(shorten(c, 60) for c in r.top_contexts[:4])} for r in regions],
        "regions_more": regions_more, "panels": panels, "panels_more": panels_more,
        "attribution": _attribution(sem.attribution, metric_name),
        "derived": derived_note(audit),
    }


def _gap(s: SliceRecord, audit: AuditEvidence) -> float | None:
    """Positive = the slice is worse than overall, in the dataset where the gap was measured."""
    if s.gap is not None:
        return s.gap
    overall = audit.overall
    sign = -1.0 if lower_is_better(s.metric or (overall.metric if overall else None)) else 1.0
    if s.gap_vs_overall is not None:
        return -sign * s.gap_vs_overall
    production = s.gap_dataset == "production" and s.production_value is not None
    value = s.production_value if production else s.benchmark_value
    reference = None if overall is None else overall.production_value if production else overall.benchmark_value
    return None if value is None or reference is None else sign * (reference - value)


TOO_FEW = "too few rows for an interval"


def _slice_metric(value, ci, n, min_rows: int) -> str:
    """A slice's metric with its interval; under the audit's minimum slice size the value alone and why: a
    bootstrap over 5 rows gives [1.00, 1.00], an interval that claims a certainty 5 rows do not hold."""
    if value is not None and n is not None and n < min_rows:
        return f"{fmt_num(value)} (n={n:,}: {TOO_FEW})"
    return fmt_metric(value, ci, missing=MISSING)


def slices(audit: AuditEvidence, weak_names: Sequence[str]) -> dict:
    weak = set(map(str, weak_names))
    everything = audit.slices
    weak.update(s.name for s in everything if s.underperforming is True)
    gaps = {id(s): _gap(s, audit) for s in everything}

    def order(s: SliceRecord) -> tuple[bool, float]:  # weak first, then by gap; unknown gaps last
        gap = gaps[id(s)]
        return s.name not in weak, -(gap if gap is not None else -9.0)
    ordered = sorted(everything, key=order)
    shown, more = capped(ordered)
    overall_metric = audit.overall.metric if audit.overall else None
    min_rows = audit.parameters.min_slice_size
    rows = [{
        "name": s.title or s.name,
        # a discovered slice is named by its definition: do not print it twice
        "definition": "" if str(s.definition) == (s.title or s.name) else shorten(s.definition, 160),
        "source": s.source,
        "n_benchmark": _count(s.n_benchmark), "n_production": _count(s.n_production),
        "benchmark_share": fmt_share(s.benchmark_share, ""), "production_share": fmt_share(s.production_share, ""),
        "benchmark": _slice_metric(s.benchmark_value, s.benchmark_ci, s.n_benchmark, min_rows),
        "production": _slice_metric(s.production_value, s.production_ci, s.n_production, min_rows),
        "gap": fmt_num(gaps[id(s)], missing=MISSING),
        "gap_where": "production" if s.gap_dataset == "production" and s.production_value is not None
        else "benchmark",
        "p_gap": _p_cell(s.gap_p_value_adjusted), "p_change": _p_cell(s.p_value_adjusted),
        "weak": s.name in weak, "status": s.status.replace("_", " "),
        "metric": metric_label(s.metric or overall_metric),
    } for s in shown]
    chart = charts.slice_chart(ordered[:CHART_SLICES], overall_value=audit.overall.benchmark_value if audit.overall
                               else None, metric=overall_metric or "metric", highlight=sorted(weak),
                               max_slices=CHART_SLICES)
    return {"rows": rows, "more": more, "chart": trusted_svg(chart), "n": len(ordered),
            "metric": metric_label(audit.metric),
            "labelled": any(s.production_value is not None for s in everything),
            "not_charted": max(0, len(ordered) - CHART_SLICES),
            "production_only": sum(1 for s in ordered[:CHART_SLICES] if s.benchmark_value is None
                                   and s.production_value is not None)}


def plan(p: NextRound | None) -> dict | None:
    """The next-round plan section from the AuditResult's ``next_round``."""
    if p is None:
        return None
    shown, more = capped([a for a in p.allocations if a.n_to_label > 0] or p.allocations)
    rows, rows_more = capped(p.rows, ROW_CAP)
    return {
        "budget": f"{p.budget:,}", "allocated": f"{p.n_allocated:,}", "unallocated": p.n_unallocated,
        "min_size": p.min_slice_size, "rule": p.diversity_rule,
        "notes": [generated_text(note, 300) for note in p.notes][:10],
        "allocations": [{"slice": a.slice, "kind": KIND_LABELS.get(a.kind, a.kind.replace("_", " ")),
                         "n": f"{a.n_to_label:,}", "selected": f"{a.n_selected:,}",
                         "reason": generated_text(a.reason, 160), "definition": shorten(a.definition or "", 160),
                         "share": fmt_share(a.production_share, MISSING),
                         "width": fmt_num(a.ci_width, missing=MISSING)} for a in shown],
        "more": more, "has_rows": bool(rows),
        "rows": [{"rank": r.rank, "id": shorten(r.id, 60), "slice": r.slice,
                  "uncertainty": fmt_num(r.uncertainty, 3, MISSING), "group": shorten(r.group or "", 40),
                  "tags": shorten(", ".join(str(t) for t in r.tags if t != r.slice), 160)}
                 for r in rows],
        "rows_more": rows_more,
    }
