"""Limitations found in the data and its contexts: weak slices, untested contexts and context-mix
shift. Pure functions from the AuditEvidence to :class:`LimitationRecord` s.

A context-mix test that concerns a weak slice or an untested context is folded into that
limitation (one finding, one statement) instead of being listed twice.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping

from scipy.stats import norm

from domains import parse
from domains.expressions import columns_used
from reports.findings_base import (
    credibly_worse,
    detail_number,
    fold_sentence,
    make_limitation,
    metric_rows,
    test_decision,
    test_note,
    untested_name,
)
from reports.findings_untested import untested_limitation
from reports.formatting import (
    capitalise,
    fmt_metric,
    fmt_n,
    fmt_num,
    fmt_p,
    fmt_share,
    lower_is_better,
    metric_label,
    shorten,
)
from reports.records import RankingContext, make_decision
from reports.result import AuditEvidence, LimitationRecord, ShiftTest, SliceRecord, UntestedContextRecord
from reports.result.claims import Claim
from reports.shift_loss import shift_loss

__all__ = ["data_findings", "slice_gap", "slice_shares", "gap_in_production"]


def gap_in_production(s: SliceRecord) -> bool:
    """Was the slice-vs-rest gap measured on labelled production rows (else on the benchmark)?"""
    return s.gap_dataset == "production" and s.production_value is not None


def slice_gap(s: SliceRecord, ctx: RankingContext) -> float | None:
    """How far the slice falls below overall, positive = worse, orientation-corrected, in the
    dataset where the gap was measured: ``gap`` if given, else ``-gap_vs_overall`` (SliceResult),
    else computed from the slice and overall values."""
    if s.gap is not None:
        return s.gap
    metric = s.metric or ctx.metric
    sign = -1.0 if lower_is_better(metric) else 1.0
    if s.gap_vs_overall is not None:
        return -sign * s.gap_vs_overall
    production = gap_in_production(s)
    value = s.production_value if production else s.benchmark_value
    overall = ctx.overall_production_value if production else ctx.overall_value
    if value is None or overall is None or metric != ctx.metric:
        return None
    return sign * (overall - value)


def slice_shares(s: SliceRecord, ctx: RankingContext) -> tuple[float | None, float | None]:
    """(production share, benchmark share), from the slice or from its counts."""
    def share(value: float | None, n: int | None, total: float | None) -> float | None:
        if value is None and n is not None and total:
            value = n / total
        return value
    return (share(s.production_share, s.n_production, ctx.n_production),
            share(s.benchmark_share, s.n_benchmark, ctx.n_benchmark))


def _is_weak(s: SliceRecord) -> bool:
    """The slice detector's ``underperforming`` flag (reports never re-decide it)."""
    return s.status == "ok" and s.underperforming is True


def _columns(definition: str | None) -> set[str]:
    """The columns a slice definition reads (none when it does not parse)."""
    try:
        return set(columns_used(parse(definition))) if definition else set()
    except ValueError:
        return set()


def _fold_targets(tests: list[ShiftTest], weak: list[SliceRecord],
                  untested: list[UntestedContextRecord]) -> tuple[dict, list[ShiftTest]]:
    """Attach each flagged context test to the weak slice / untested context it explains. A column's mix
    folds into a weak slice cut from it only when that slice's own share moved too (the slice is then a
    change claim that states it); beside a weakness whose share held, the column's change is its own claim."""
    weak_names = {s.name: i for i, s in enumerate(weak)}
    moved = {weak_names[t.name] for t in tests if t.kind == "slice_share" and t.name in weak_names}
    folded, standalone = defaultdict(list), []
    for t in tests:
        key = None
        if t.kind == "slice_share" and t.name in weak_names:
            key = ("slice", weak_names[t.name])
        elif t.kind != "slice_share":
            column = str(t.details.get("column") or t.name)
            key = next((("untested", i) for i, u in enumerate(untested) if str(u.column) == column), None)
            key = key or next((("slice", i) for i, s in enumerate(weak)
                               if i in moved and _columns(s.definition) == {column}), None)
        if key is None:
            standalone.append(t)
        else:
            folded[key].append(t)
    return folded, standalone


def _weak_slice(s: SliceRecord, ctx: RankingContext, folded: list[ShiftTest]) -> LimitationRecord:
    name = shorten(s.title or s.name)
    metric = metric_label(s.metric or ctx.metric)
    gap = slice_gap(s, ctx) or 0.0
    prod_share, bench_share = slice_shares(s, ctx)
    p_text = fmt_p(s.gap_p_value_adjusted, "adjusted p")
    if gap_in_production(s):
        where, key, overall = "In production, ", "production", ctx.overall_production_value
        value, ci = s.production_value, s.production_ci
    else:
        where, key, overall = "", "benchmark", ctx.overall_value
        value, ci = s.benchmark_value, s.benchmark_ci
    n = metric_rows(s, key)
    statement = (
        f"{where}{metric if where else capitalise(metric)} on {name} is {fmt_metric(value, ci)} "
        f"({fmt_n(n)}) against {fmt_num(overall)} overall ({p_text}); this context is {fmt_share(prod_share)} "
        f"of production and {fmt_share(bench_share)} of the benchmark."
    )
    if where:
        statement += (f" On the benchmark it is {fmt_metric(s.benchmark_value, s.benchmark_ci)} "
                      f"({fmt_n(metric_rows(s, 'benchmark'))}).")
    prevalence = prod_share if prod_share is not None else (bench_share or 0.0)
    evidence = {
        "metric": s.metric or ctx.metric, "definition": s.definition, "source": s.source,
        "dataset": key, "value": value, "ci": ci, "overall_value": overall, "gap": gap,
        "gap_p_value_adjusted": s.gap_p_value_adjusted,
        "n_benchmark": s.n_benchmark, "n_production": s.n_production,
        "production_share": prod_share, "benchmark_share": bench_share, "gap_measured": True,
        "context_tests": [t.name for t in folded],
        "severity_basis": f"production share {prevalence:.3f} × gap {gap:.3f}",
    }
    title = (f"the model is weak on {name} ({metric} {fmt_num(value)} vs {fmt_num(overall)} overall; "
             f"{fmt_share(prod_share)} of production)")
    claim, why = _weak_claim(s, ctx)
    grew = next((t for t in folded if t.kind == "slice_share" and t.name == s.name), None)
    if claim == "standing" and grew is not None and (prod_share or 0.0) > (bench_share or 0.0):
        # more of production is where the model is weak: the weakness is old, its weight is new
        delta = (prod_share or 0.0) - (bench_share or 0.0)
        why = (f" More of production is here than on the benchmark ({fmt_share(bench_share)} → "
               f"{fmt_share(prod_share)}; {test_note(grew)}): a change of the mix towards a context where the model "
               "is weak.")
        evidence.update(change_basis="share", share_change=delta)
        statement += fold_sentence([t for t in folded if t is not grew]) + why
        title = (f"more of production is on {name}, where the model is weak ({fmt_share(bench_share)} → "
                 f"{fmt_share(prod_share)}; {metric} {fmt_num(value)} vs {fmt_num(overall)} overall)")
        return make_limitation("underperforming_slice", s.name, title, statement, prevalence * gap,
                               {**evidence, "claim_reason": why}, definition=s.definition, claim="change",
                               decision=test_decision(grew, ctx))
    statement += fold_sentence(folded) + why
    evidence["claim_reason"] = why
    # the interval is the slice's value's (the gap test's p decides): stated beside that value, not the gap
    decision = make_decision(f"{s.metric or ctx.metric} on the slice ({key}; {fmt_num(gap)} below overall)", value,
                             test="gap test", p_value_adjusted=s.gap_p_value_adjusted, interval=ci, n=n,
                             rule=f"adjusted p < α = {fmt_num(ctx.alpha)} and gap ≥ the floor "
                                  f"{fmt_num(ctx.floor('slice_gap'))}; a change claim only when its benchmark → "
                                  "production change test is significant too")
    return make_limitation("underperforming_slice", s.name, title, statement, prevalence * gap, evidence,
                           definition=s.definition, claim=claim, decision=decision)


def _weak_claim(s: SliceRecord, ctx: RankingContext) -> tuple[Claim, str]:
    """("change" | "standing", sentence): a weak slice is a change only when its own benchmark →
    production change test found it significantly worse; otherwise it is as weak as the benchmark
    shows (decided by the slice's benchmark interval, never by point values) or untested as a change."""
    metric = s.metric or ctx.metric
    b, p = s.benchmark_value, s.production_value
    dropped = b is not None and p is not None and ((p > b) if lower_is_better(metric) else (p < b))
    adjusted = fmt_p(s.p_value_adjusted, "adjusted p")
    if s.changed is True and dropped and s.p_value_test != "gap":  # without p_value_test it tested the change
        return "change", (f" It got worse in production: its benchmark → production change test is significant "
                          f"({adjusted}).")
    on_bench = credibly_worse(s.benchmark_ci, ctx.overall_value, metric)
    if on_bench:
        return "standing", (" The benchmark shows the same weakness (its benchmark interval lies below the "
                            f"benchmark's overall {fmt_num(ctx.overall_value)}): a standing limitation, not a change.")
    if s.p_value_test == "change" and s.p_value_adjusted is not None:
        if dropped:  # weaker in production, the benchmark not credibly weak: maybe new, not decided
            return "standing", (" The benchmark does not show this weakness clearly and the benchmark → production "
                                f"change test is not significant ({adjusted}): "
                                "whether it is new cannot be told from this audit" + _rows_to_decide(s, ctx)
                                + ". It is stated as a weakness in production, not as a change.")
        return "standing", (" Its benchmark → production change test is not significant "
                            f"({adjusted}): a standing limitation, not a change.")
    return "standing", " No benchmark → production change test decides it, so it is stated as a standing limitation."


def _rows_to_decide(s: SliceRecord, ctx: RankingContext) -> str:
    """", about N rows of it per side would decide a difference this large": the z-score the change test
    reached, scaled to the one its adjusted p-value needs (a rough, normal-theory guide, not a promise)."""
    raw, adj = s.p_value, s.p_value_adjusted
    n = min(s.n_benchmark or 0, s.n_production or 0)
    if not raw or not adj or raw <= 0 or adj <= raw * 0.999 or adj >= 1 or n <= 0:
        return ""
    z_now, z_need = norm.isf(raw / 2), norm.isf(ctx.alpha * raw / adj / 2)
    if z_now <= 0:
        return ""
    need = n * (z_need / z_now) ** 2
    need = round(need, -int(math.floor(math.log10(need))) + 1)  # two significant digits: a guide
    return f"; about {need:,.0f} rows of it per side would decide a difference this large"


def _mix_shift(t: ShiftTest, ctx: RankingContext, slices_by_name: dict[str, SliceRecord]) -> LimitationRecord:
    name = shorten(t.name)
    note = f"{test_note(t)}; {fmt_n(t.n_reference)} and {fmt_n(t.n_current)}"
    effect = min(t.effect_size or 0.0, 1.0)
    evidence = {k: getattr(t, k) for k in ("name", "kind", "method", "effect_name", "effect_size",
                                           "p_value_adjusted", "n_reference", "n_current")}
    if t.kind == "slice_share":
        s = slices_by_name.get(t.name)
        prod, bench = slice_shares(s, ctx) if s else (None, None)
        prod = detail_number(t.details, "production_share") if prod is None else prod
        bench = detail_number(t.details, "benchmark_share") if bench is None else bench
        statement = (f"The share of {name} changed from {fmt_share(bench)} of the benchmark to {fmt_share(prod)} "
                     f"of production ({note}).")
        gap = slice_gap(s, ctx) if s else None
        if gap is not None and s is not None:
            statement += (f" Its {metric_label(ctx.metric)} on the benchmark is "
                          f"{fmt_metric(s.benchmark_value, s.benchmark_ci)} against "
                          f"{fmt_num(ctx.overall_value)} overall.")
        delta = abs((prod or 0.0) - (bench or 0.0))
        score = delta * max(gap, 0.0) if gap is not None else effect * ctx.priors.shift_gap
        basis = (f"share change {delta:.3f} × max(gap {gap:.3f}, 0)" if gap is not None
                 else f"effect {effect:.3f} × assumed gap {ctx.priors.shift_gap:.2f}")
        m = ctx.measured
        decided = m.loss if m is not None and m.credible else 0.0  # a loss within sampling error is not decided
        if m is not None and decided < score:
            # Measured beats expected: a mix change cannot cost more than everything that changed did.
            score = decided
            basis = (f"measured loss {m.loss:.3f} over all of production (interval {fmt_num(m.loss_ci[0])} to "
                     f"{fmt_num(m.loss_ci[1])}, labelled production; {'decided' if m.credible else 'not decided'}), "
                     f"below the {basis} the mix alone predicts")
            statement += " " + m.sentence() + (" The severity uses this measured loss." if m.credible else
                                               " Its cost cannot be told from this audit.")
        evidence.update(production_share=prod, benchmark_share=bench, gap=gap, severity_basis=basis)
        title = f"the share of {name} changed ({fmt_share(bench)} → {fmt_share(prod)})"
        return make_limitation("context_mix_shift", t.name, title, statement, score, evidence,
                               definition=s.definition if s else None, decision=test_decision(t, ctx))
    bench_shares = t.details.get("benchmark_shares") or {}
    prod_shares = t.details.get("production_shares") or {}
    statement = f"The mix of {name} changed between benchmark and production ({note})"
    if isinstance(bench_shares, Mapping) and isinstance(prod_shares, Mapping) and (bench_shares or prod_shares):
        keys = set(map(str, bench_shares)) | set(map(str, prod_shares))
        def change(k):
            return abs((detail_number(prod_shares, k) or 0.0) - (detail_number(bench_shares, k) or 0.0))
        top = max(sorted(keys), key=change)
        statement += (f": the largest change is {shorten(top, 40)}, "
                      f"{fmt_share(detail_number(bench_shares, top) or 0.0)} "
                      f"→ {fmt_share(detail_number(prod_shares, top) or 0.0)}")
    score, basis, sentence = shift_loss(ctx, effect)
    evidence["severity_basis"] = basis
    title = f"the mix of {name} has changed"
    return make_limitation("context_mix_shift", t.name, title, statement + "." + sentence,
                           score, evidence, subject=f"column {t.name}", decision=test_decision(t, ctx))


def data_findings(audit: AuditEvidence, ctx: RankingContext) -> list[LimitationRecord]:
    """Weak slices, untested contexts, and the flagged context-mix tests that neither explains."""
    weak = [s for s in audit.slices if _is_weak(s)]
    untested = audit.semantic.untested_contexts
    tests = [t for t in audit.semantic.contexts if t.flagged]
    folded, standalone = _fold_targets(tests, weak, untested)
    by_name = {s.name: s for s in audit.slices}
    found = [_weak_slice(s, ctx, folded[("slice", i)]) for i, s in enumerate(weak)]
    found += [untested_limitation(u, ctx, folded[("untested", i)], by_name.get(u.measured_by or untested_name(u)))
              for i, u in enumerate(untested)]
    found += [_mix_shift(t, ctx, by_name) for t in standalone]
    return found
