"""An untested context as a limitation: a population production holds and the benchmark lacks (or
holds too rarely to measure), with its measured metric when production is labelled."""
from __future__ import annotations

from typing import Any

from detectors.intervals import wilson_interval
from reports.findings_base import (
    credibly_worse,
    fold_sentence,
    make_limitation,
    measured_in_production,
    metric_rows,
    untested_name,
)
from reports.formatting import fmt_metric, fmt_n, fmt_num, fmt_share, lower_is_better, metric_label, shorten
from reports.records import RankingContext, make_decision
from reports.result import LimitationRecord, ShiftTest, SliceRecord, UntestedContextRecord

__all__ = ["untested_limitation"]


def untested_limitation(u: UntestedContextRecord, ctx: RankingContext, folded: list[ShiftTest],
                        measured: SliceRecord | None) -> LimitationRecord:
    """An untested context; with labelled production rows its metric there is measured and compared
    with the benchmark's overall metric (what the benchmark promised), never with production's own
    overall (which these rows are part of, and which they may be all of)."""
    full_name = untested_name(u)
    name = shorten(full_name)
    share = u.production_share
    if share is None and ctx.n_production:
        share = u.n_production / ctx.n_production
    n_bench = u.n_benchmark
    min_size = u.min_slice_size or ctx.min_slice_size
    metric = metric_label(ctx.metric)
    n_values = u.n_values
    if u.kind == "pooled_values" and n_values > 1:  # many rare values of one column, tested as one group
        bench_clause = (f"these {n_values:,} values are each too rare in the benchmark to measure {metric} "
                        f"(fewer than {min_size:,} rows each; {n_bench:,} in all)")
    else:
        bench_clause = ("the benchmark has no such cases" if n_bench == 0 else
                        f"the benchmark has only {n_bench:,}, fewer than the {min_size:,} needed to measure {metric}")
    statement = f"Context {name} is {fmt_share(share)} of production ({fmt_n(u.n_production)}), but {bench_clause}."
    large = share is not None and share >= ctx.floor("untested_share")
    evidence: dict[str, Any] = {"column": u.column, "value": None, "n_benchmark": n_bench,
                "n_production": u.n_production, "production_share": share, "min_size": min_size,
                "context_tests": [t.name for t in folded], "metric": ctx.metric, "gap_measured": False,
                "large_population": large}
    decision = make_decision("production share", share, test="exact test of its benchmark count" if
                             u.p_value_adjusted is not None else None,
                             p_value_adjusted=u.p_value_adjusted, interval=_share_ci(u, share, ctx),
                             n=u.n_production,
                             rule=f"fewer than {min_size:,} benchmark rows (improbable by chance) and a production "
                                  "share above the floor: a population new in production")
    if measured is not None and measured_in_production(measured, ctx):
        value, ci, overall_value = measured.production_value, measured.production_ci, ctx.overall_value
        assert value is not None and overall_value is not None  # what measured_in_production checked
        sign = -1.0 if lower_is_better(ctx.metric) else 1.0
        gap = sign * (overall_value - value)
        worse = credibly_worse(ci, ctx.overall_value, ctx.metric, value=value, reference_ci=ctx.overall_ci)
        # the benchmark credibly worse than these rows: measured, no loss (an assumed one would contradict it)
        better = not worse and credibly_worse(ctx.overall_ci, value, ctx.metric, value=ctx.overall_value,
                                              reference_ci=ci)
        statement += (f" Measured on the labelled production rows, {metric} there is {fmt_metric(value, ci)} "
                      f"({fmt_n(metric_rows(measured, 'production'))}) against "
                      f"{fmt_metric(ctx.overall_value, ctx.overall_ci)} overall on the benchmark.")
        if worse:
            statement += (f" The difference's interval lies below 0: a measured loss of {fmt_num(gap)} "
                          "on these rows.")
            basis = f"production share {share or 0:.3f} × measured gap to the benchmark {gap:.3f}"
        elif gap > ctx.priors.coverage_gap:
            statement += (f" It is {fmt_num(gap)} below the benchmark, within sampling error; the benchmark needs "
                          "cases of it to tell.")
            basis = (f"production share {share or 0:.3f} × coverage gap {ctx.priors.coverage_gap:.2f} (the measured "
                     f"point gap {gap:.3f} is within sampling error)")
        elif better:
            statement += (" It is credibly better than the benchmark here (the difference's interval lies above 0): "
                          "nothing measured is lost, but the benchmark still needs cases of it.")
            basis = "measured better than the benchmark: no loss to weigh (no coverage gap is assumed)"
        else:
            statement += " It is no worse than the benchmark here, but the benchmark still needs cases of it."
            basis = (f"production share {share or 0:.3f} × coverage gap {ctx.priors.coverage_gap:.2f} "
                     "(measured no worse than the benchmark)")
        # a loss within sampling error is not a measured loss: the severity rests on the coverage gap
        # then (all of production in a new context read "Do not rely" on a 0.05 drop whose interval
        # reached past 0)
        used_gap = max(gap, ctx.priors.coverage_gap) if worse else (0.0 if better else ctx.priors.coverage_gap)
        score = (share or 0.0) * used_gap
        evidence.update(value=value, ci=ci, dataset="production", overall_value=ctx.overall_value,
                        overall_dataset="benchmark", gap=gap, gap_measured=True, credibly_worse=bool(worse),
                        severity_basis=basis)
        decision = make_decision(f"{ctx.metric} on these production rows", value, test=decision.test,
                                 p_value_adjusted=decision.p_value_adjusted, interval=ci,
                                 n=metric_rows(measured, "production"),
                                 rule=decision.rule + "; its loss is measured against the benchmark's overall "
                                      "value (credible when the difference's interval lies below 0)")
        title = (f"the context {name} ({fmt_share(share)} of production) was never tested; in production its "
                 f"{metric} is {fmt_num(value)} vs {fmt_num(ctx.overall_value)} on the benchmark"
                 if n_bench == 0 else f"the context {name} is barely tested (n={n_bench:,}); in production its "
                 f"{metric} is {fmt_num(value)} vs {fmt_num(ctx.overall_value)} on the benchmark")
    else:
        prior = ctx.priors.untested_gap
        statement += (f" Its {metric} there cannot be measured without labels, so the severity assumes it is "
                      f"{fmt_num(prior)} below overall (an assumption, not a measurement).")
        score = (share or 0.0) * prior
        evidence["severity_basis"] = f"production share {share or 0:.3f} × assumed gap {prior:.2f}"
        title = (f"the context {name} is {fmt_share(share)} of production but "
                 + ("was never tested" if n_bench == 0 else f"barely tested (n={n_bench:,})"))
    statement += fold_sentence(folded)
    return make_limitation("untested_context", full_name, title, statement, score, evidence,
                           definition=u.definition, claim="change", decision=decision)


def _share_ci(u: UntestedContextRecord, share: float | None, ctx: RankingContext) -> list[float | None] | None:
    """The untested context's production share interval: as the detector gave it, else Wilson from the counts."""
    given = u.production_share_ci
    if given is not None and len(given) == 2 and given[0] is not None:
        return given
    n = u.n_production
    total = ctx.n_production or (n / share if share else None)
    if not total:
        return None
    return list(wilson_interval(n, round(total)))
