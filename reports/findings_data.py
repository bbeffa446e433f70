"""Limitations found in the data and its contexts: weak slices, untested contexts, context-mix
shift and covariate shift. Pure functions from the AuditResult dict to :class:`Limitation` s.

A context-mix test that concerns a weak slice or an untested context is folded into that
limitation (one finding, one statement) instead of being listed twice.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping

from reports.formatting import (
    as_list, capitalise, effect_label, fmt_metric, fmt_n, fmt_num, fmt_p, fmt_share, get,
    lower_is_better, metric_label, num, shorten,
)
from reports.records import Limitation, RankingContext, finding_key, flagged, severity_label

__all__ = ["data_findings", "make_limitation", "slice_gap", "slice_shares", "gap_in_production", "untested_name"]


def make_limitation(kind: str, slice_name: str | None, title: str, statement: str,
                    score: float, evidence: dict, *, definition: str | None = None,
                    subject: str | None = None) -> Limitation:
    """A limitation with its stable key: the rows' ``definition`` when it concerns rows, else ``subject``."""
    score = max(0.0, float(score))
    return Limitation(rank=0, kind=kind, slice=slice_name, title=title, statement=statement,
                      score=round(score, 6), severity=severity_label(score), evidence=evidence,
                      key=finding_key(kind, definition, subject if subject is not None else slice_name),
                      definition=definition or None)


def gap_in_production(s: Mapping) -> bool:
    """Was the slice-vs-rest gap measured on labelled production rows (else on the benchmark)?"""
    return s.get("gap_dataset") == "production" and num(s.get("production_value")) is not None


def slice_gap(s: Mapping, ctx: RankingContext) -> float | None:
    """How far the slice falls below overall, positive = worse, orientation-corrected, in the
    dataset where the gap was measured: ``gap`` if given, else ``-gap_vs_overall`` (SliceResult),
    else computed from the slice and overall values."""
    given = num(s.get("gap"))
    if given is not None:
        return given
    metric = s.get("metric") or ctx.metric
    sign = -1.0 if lower_is_better(metric) else 1.0
    versus = num(s.get("gap_vs_overall"))
    if versus is not None:
        return -sign * versus
    production = gap_in_production(s)
    value = num(s.get("production_value" if production else "benchmark_value"))
    overall = ctx.overall_production_value if production else ctx.overall_value
    if value is None or overall is None or metric != ctx.metric:
        return None
    return sign * (overall - value)


def slice_shares(s: Mapping, ctx: RankingContext) -> tuple[float | None, float | None]:
    """(production share, benchmark share), from the slice or from its counts."""
    def share(key: str, n_key: str, total: float | None) -> float | None:
        value = num(s.get(key))
        n = num(s.get(n_key))
        if value is None and n is not None and total:
            value = n / total
        return value
    return (share("production_share", "n_production", ctx.n_production),
            share("benchmark_share", "n_benchmark", ctx.n_benchmark))


def _is_weak(s: Mapping, ctx: RankingContext) -> bool:
    """The slice detector's ``underperforming`` flag; without it, the §5 rule on the gap test."""
    if str(s.get("status", "ok")) != "ok":
        return False
    return s.get("underperforming") is True


def untested_name(u: Mapping) -> str:
    """``name`` (UntestedContext), else ``slice``, else ``"column = value"``."""
    for key in ("name", "slice"):
        if u.get(key) not in (None, ""):
            return str(u[key])
    return f"{u.get('column', 'context')} = {u.get('value', '?')}"


def _test_note(t: Mapping) -> str:
    effect = f"{effect_label(t.get('effect_name'))} {fmt_num(t.get('effect_size'))}"
    return f"{effect}, {fmt_p(t.get('p_value_adjusted'), 'adjusted p')}"


def _fold_targets(tests: list, weak: list, untested: list) -> tuple[dict, list]:
    """Attach each flagged context test to the weak slice / untested context it explains."""
    weak_names = {str(s.get("name")): i for i, s in enumerate(weak)}
    folded, standalone = defaultdict(list), []
    for t in tests:
        name = str(t.get("name"))
        key = None
        if t.get("kind") == "slice_share" and name in weak_names:
            key = ("slice", weak_names[name])
        elif t.get("kind") != "slice_share":
            column = str(get(t, "details", "column") or name)
            key = next((("untested", i) for i, u in enumerate(untested) if str(u.get("column")) == column), None)
            pattern = re.compile(rf"(?<![\w.]){re.escape(column)}(?![\w])")
            key = key or next((("slice", i) for i, s in enumerate(weak)
                               if pattern.search(str(s.get("definition") or ""))), None)
        if key is None:
            standalone.append(t)
        else:
            folded[key].append(t)
    return folded, standalone


def _fold_sentence(tests: list) -> str:
    parts = []
    for t in tests:
        if t.get("kind") == "slice_share":
            parts.append(f"its share differs significantly between benchmark and production ({_test_note(t)})")
        else:
            parts.append(f"the mix of {shorten(t.get('name'))} changed significantly ({_test_note(t)})")
    return (" " + capitalise("; ".join(parts)) + ".") if parts else ""


def _weak_slice(s: Mapping, ctx: RankingContext, folded: list) -> Limitation:
    name = shorten(s.get("title") or s.get("name"))
    metric = metric_label(s.get("metric") or ctx.metric)
    gap = slice_gap(s, ctx) or 0.0
    prod_share, bench_share = slice_shares(s, ctx)
    p_text = fmt_p(s.get("gap_p_value_adjusted"), "adjusted p")
    if gap_in_production(s):
        where, key, n, overall = "In production, ", "production", s.get("metric_n_production", s.get("n_production")), \
            ctx.overall_production_value
    else:
        where, key, n, overall = "", "benchmark", s.get("metric_n_benchmark", s.get("n_benchmark")), ctx.overall_value
    value = s.get(f"{key}_value")
    statement = (
        f"{where}{metric if where else capitalise(metric)} on {name} is {fmt_metric(value, s.get(f'{key}_ci'))} "
        f"({fmt_n(n)}) against {fmt_num(overall)} overall ({p_text}); this context is {fmt_share(prod_share)} "
        f"of production and {fmt_share(bench_share)} of the benchmark."
    )
    if where:
        statement += (f" On the benchmark it is {fmt_metric(s.get('benchmark_value'), s.get('benchmark_ci'))} "
                      f"({fmt_n(s.get('metric_n_benchmark', s.get('n_benchmark')))}).")
    statement += _fold_sentence(folded)
    prevalence = prod_share if prod_share is not None else (bench_share or 0.0)
    evidence = {
        "metric": s.get("metric") or ctx.metric, "definition": s.get("definition"), "source": s.get("source"),
        "dataset": key, "value": num(value), "ci": s.get(f"{key}_ci"), "overall_value": overall, "gap": gap,
        "gap_p_value_adjusted": num(s.get("gap_p_value_adjusted")),
        "n_benchmark": s.get("n_benchmark"), "n_production": s.get("n_production"),
        "production_share": prod_share, "benchmark_share": bench_share, "gap_measured": True,
        "context_tests": [t.get("name") for t in folded],
        "severity_basis": f"production share {prevalence:.3f} × gap {gap:.3f}",
    }
    title = (f"the model is weak on {name} ({metric} {fmt_num(value)} vs {fmt_num(overall)} overall; "
             f"{fmt_share(prod_share)} of production)")
    return make_limitation("underperforming_slice", str(s.get("name")), title, statement, prevalence * gap, evidence,
                           definition=s.get("definition"))


def _measured_in_production(s: Mapping | None, ctx: RankingContext) -> bool:
    return bool(s) and gap_in_production(s) and ctx.overall_production_value is not None


def _untested(u: Mapping, ctx: RankingContext, folded: list, measured: Mapping | None) -> Limitation:
    """An untested context; with labelled production rows its metric there is measured and quoted."""
    full_name = untested_name(u)
    name = shorten(full_name)
    share = num(u.get("production_share"))
    if share is None and num(u.get("n_production")) is not None and ctx.n_production:
        share = num(u.get("n_production")) / ctx.n_production
    n_bench = int(num(u.get("n_benchmark")) or 0)
    min_size = int(num(u.get("min_slice_size", u.get("min_size"))) or ctx.min_slice_size)
    metric = metric_label(ctx.metric)
    bench_clause = ("the benchmark has no such cases" if n_bench == 0 else
                    f"the benchmark has only {n_bench:,}, fewer than the {min_size:,} needed to measure {metric}")
    statement = f"Context {name} is {fmt_share(share)} of production ({fmt_n(u.get('n_production'))}), but {bench_clause}."
    evidence = {"column": u.get("column"), "value": None, "n_benchmark": n_bench,
                "n_production": u.get("n_production"), "production_share": share, "min_size": min_size,
                "context_tests": [t.get("name") for t in folded], "metric": ctx.metric, "gap_measured": False}
    if _measured_in_production(measured, ctx):
        value, ci = num(measured.get("production_value")), measured.get("production_ci")
        gap = max(0.0, slice_gap(measured, ctx) or 0.0)  # the point gap, as for a weak slice
        statement += (f" Measured on the labelled production rows, {metric} there is {fmt_metric(value, ci)} "
                      f"({fmt_n(measured.get('metric_n_production', measured.get('n_production')))}) against "
                      f"{fmt_num(ctx.overall_production_value)} overall in production.")
        basis = f"production share {share or 0:.3f} × measured gap {gap:.3f}"
        if gap < ctx.priors.coverage_gap:
            statement += " It is no worse than overall here, but the benchmark still needs cases of it."
            gap, basis = ctx.priors.coverage_gap, (f"production share {share or 0:.3f} × coverage gap "
                                                   f"{ctx.priors.coverage_gap:.2f} (measured no worse than overall)")
        score = (share or 0.0) * gap
        evidence.update(value=value, ci=ci, dataset="production", overall_value=ctx.overall_production_value,
                        gap=slice_gap(measured, ctx), gap_measured=True, severity_basis=basis)
        title = (f"the context {name} ({fmt_share(share)} of production) was never tested; in production its "
                 f"{metric} is {fmt_num(value)} vs {fmt_num(ctx.overall_production_value)} overall"
                 if n_bench == 0 else f"the context {name} is barely tested (n={n_bench:,}); in production its "
                 f"{metric} is {fmt_num(value)}")
    else:
        prior = ctx.priors.untested_gap
        statement += (f" Its {metric} there cannot be measured without labels, so the severity assumes it is "
                      f"{fmt_num(prior)} below overall (an assumption, not a measurement).")
        score = (share or 0.0) * prior
        evidence["severity_basis"] = f"production share {share or 0:.3f} × assumed gap {prior:.2f}"
        title = (f"the context {name} is {fmt_share(share)} of production but "
                 + ("was never tested" if n_bench == 0 else f"barely tested (n={n_bench:,})"))
    statement += _fold_sentence(folded)
    return make_limitation("untested_context", full_name, title, statement, score, evidence,
                           definition=u.get("definition"))


def _mix_shift(t: Mapping, ctx: RankingContext, slices_by_name: dict) -> Limitation:
    name = shorten(t.get("name"))
    note = f"{_test_note(t)}; {fmt_n(t.get('n_reference'))} and {fmt_n(t.get('n_current'))}"
    effect = min(num(t.get("effect_size")) or 0.0, 1.0)
    evidence = {k: t.get(k) for k in ("name", "kind", "method", "effect_name", "effect_size",
                                      "p_value_adjusted", "n_reference", "n_current")}
    if t.get("kind") == "slice_share":
        s = slices_by_name.get(str(t.get("name")), {})
        prod, bench = slice_shares(s, ctx) if s else (None, None)
        prod = num(get(t, "details", "production_share")) if prod is None else prod
        bench = num(get(t, "details", "benchmark_share")) if bench is None else bench
        statement = (f"The share of {name} changed from {fmt_share(bench)} of the benchmark to {fmt_share(prod)} "
                     f"of production ({note}).")
        gap = slice_gap(s, ctx) if s else None
        if gap is not None:
            statement += (f" Its {metric_label(ctx.metric)} on the benchmark is "
                          f"{fmt_metric(s.get('benchmark_value'), s.get('benchmark_ci'))} against "
                          f"{fmt_num(ctx.overall_value)} overall.")
        delta = abs((prod or 0.0) - (bench or 0.0))
        score = delta * max(gap, 0.0) if gap is not None else effect * ctx.priors.shift_gap
        evidence.update(production_share=prod, benchmark_share=bench, gap=gap, severity_basis=(
            f"share change {delta:.3f} × max(gap {gap:.3f}, 0)" if gap is not None
            else f"effect {effect:.3f} × assumed gap {ctx.priors.shift_gap:.2f}"))
        title = f"the share of {name} changed ({fmt_share(bench)} → {fmt_share(prod)})"
        return make_limitation("context_mix_shift", str(t.get("name")), title, statement, score, evidence,
                               definition=s.get("definition") if s else None)
    bench_shares = get(t, "details", "benchmark_shares", default={}) or {}
    prod_shares = get(t, "details", "production_shares", default={}) or {}
    statement = f"The mix of {name} changed between benchmark and production ({note})"
    if isinstance(bench_shares, Mapping) and isinstance(prod_shares, Mapping) and (bench_shares or prod_shares):
        keys = set(map(str, bench_shares)) | set(map(str, prod_shares))
        def change(k):
            return abs((num(prod_shares.get(k)) or 0.0) - (num(bench_shares.get(k)) or 0.0))
        top = max(sorted(keys), key=change)
        statement += (f": the largest change is {shorten(top, 40)}, {fmt_share(num(bench_shares.get(top)) or 0.0)} "
                      f"→ {fmt_share(num(prod_shares.get(top)) or 0.0)}")
    evidence["severity_basis"] = f"effect {effect:.3f} × assumed gap {ctx.priors.shift_gap:.2f}"
    title = f"the mix of {name} has changed"
    return make_limitation("context_mix_shift", str(t.get("name")), title, statement + "." + _assumed(ctx, effect),
                           effect * ctx.priors.shift_gap, evidence, subject=f"column {t.get('name')}")


def _assumed(ctx: RankingContext, effect: float) -> str:
    """The sentence that says a severity rests on an assumed, not a measured, loss."""
    return (f" Nothing here measures the model's loss: the severity assumes {fmt_num(ctx.priors.shift_gap)} of "
            f"{metric_label(ctx.metric)} per unit of effect ({fmt_num(effect)}).")


def data_findings(audit: Mapping, ctx: RankingContext) -> list[Limitation]:
    slices = as_list(get(audit, "slices"))
    weak = [s for s in slices if _is_weak(s, ctx)]
    untested = as_list(get(audit, "semantic", "untested_contexts"))
    tests = [t for t in as_list(get(audit, "semantic", "contexts")) if flagged(t)]
    folded, standalone = _fold_targets(tests, weak, untested)
    by_name = {str(s.get("name")): s for s in slices}
    found = [_weak_slice(s, ctx, folded[("slice", i)]) for i, s in enumerate(weak)]
    found += [_untested(u, ctx, folded[("untested", i)], by_name.get(str(u.get("measured_by") or untested_name(u))))
              for i, u in enumerate(untested)]
    found += [_mix_shift(t, ctx, by_name) for t in standalone]
    from reports.findings_inputs import covariate_findings  # imported here: it builds on this module

    return found + covariate_findings(audit, ctx)
