"""Limitations found in the labels and the metric: label (prior) shift, concept shift (a measured
performance drop with production labels), label quality (:mod:`reports.findings_quality`), and
benchmark saturation. The label-free estimates quoted here are read in :mod:`reports.findings_estimates`."""
from __future__ import annotations

from detectors.metric_registry import saturated
from reports.findings_base import make_limitation, test_decision
from reports.findings_data import slice_shares
from reports.findings_estimates import contradiction_sentence, estimate_checks, estimate_sentence, performance_estimates
from reports.findings_quality import interval_ends, label_quality_findings, share_ci as _share_ci
from reports.formatting import fmt_metric, fmt_n, fmt_num, fmt_p, fmt_share, lower_is_better, metric_label, shorten
from reports.records import MEDIUM_SCORE, RankingContext, make_decision
from reports.result import AuditEvidence, LabelSection, LimitationRecord, Overall, PriorEstimate
from reports.shift_loss import shift_loss

__all__ = ["label_findings", "performance_estimates", "saturation_note", "estimate_checks", "contradiction_sentence"]


BOUNDARY = 1e-3  # a class estimated within this of 0 or 1 sits on the edge of the possible priors


def _adjusted_or_raw(adjusted: float | None, raw: float | None) -> float | None:
    return raw if adjusted is None else adjusted


def _label_shift(label: LabelSection, ctx: RankingContext) -> list[LimitationRecord]:
    if not label.is_shift:
        return []
    bench, estimated = label.benchmark_prior, label.production_prior_estimate
    if label.observed_prior:
        return [_observed_label_shift(label, label.observed_prior, ctx)]
    rows = {c: (bench.get(c), v) for c, v in estimated.items()}
    diffs = {c: (v.estimate or 0.0) - (p or 0.0) for c, (p, v) in rows.items() if p is not None}
    tv = 0.5 * sum(abs(d) for d in diffs.values())
    p_adjusted = _adjusted_or_raw(label.p_value_adjusted, label.p_value)
    p_text = fmt_p(p_adjusted, "adjusted p")
    if diffs:
        top = _top_change(diffs)
        p, est = rows[top]
        statement = (f"The class mix has changed: {shorten(top, 40)} is estimated at "
                     f"{_share_ci(est.estimate, est.ci_low, est.ci_high)} of production against {fmt_share(p)} "
                     f"of the benchmark (BBSE, from the model's predictions, without production labels; "
                     f"{p_text}, {fmt_n(ctx.n_production)}).")
        title = f"the class mix has changed ({shorten(top, 30)}: {fmt_share(p)} → {fmt_share(est.estimate)})"
    else:
        statement = f"The distribution of the model's predictions has changed ({p_text}, {fmt_n(ctx.n_production)})."
        title = "the class mix has changed"
    if label.reliable is False:
        statement += (" This estimate assumes that only the class mix changed (P(x|y) fixed), which the audit's own "
                      "covariate tests contradict; treat it as indicative only.")
    score, basis, sentence = shift_loss(ctx, tv, ctx.priors.label_shift_gap)
    basis = basis if ctx.measured is not None else (f"total variation {tv:.3f} × assumed recall spread "
                                                    f"{ctx.priors.label_shift_gap:.2f} (the assumed spread between "
                                                    "per-class recalls)")
    boundary = [c for c, v in estimated.items() if v.estimate is not None and not BOUNDARY < v.estimate < 1 - BOUNDARY]
    if boundary and score >= MEDIUM_SCORE:
        # a solve that ends on the edge of the possible priors (a class at 0 % or 100 %) is degenerate: its
        # size is not a measurement, so it never carries more than a low severity
        score = MEDIUM_SCORE * 0.99
        basis += f"; capped at low: the estimate of {shorten(boundary[0], 30)} lies on the boundary (0 % or 100 %)"
        statement += (f" The estimate of {shorten(boundary[0], 40)} lies on the boundary of the possible class mixes "
                      "(a degenerate solve): the change is decided by its test, its size is not measured, so its "
                      "severity is low.")
    evidence = {"total_variation": tv, "p_value_adjusted": label.p_value_adjusted, "class_changes": diffs,
                "source": "bbse_estimate", "severity_basis": basis, "boundary_estimate": bool(boundary)}
    decision = make_decision("total variation of the class priors (BBSE)", tv, test=str(label.method or "bbse"),
                             p_value_adjusted=p_adjusted, n=ctx.n_production,
                             rule=f"adjusted p < α = {fmt_num(ctx.alpha)} and the prior change passes the floor")
    return [make_limitation("label_shift", None, title, statement + estimate_sentence(label, ctx)
                            + (sentence if ctx.measured is not None else ""), score, evidence,
                            subject="all", decision=decision)]


def _top_change(diffs: dict[str, float]) -> str:
    return max(sorted(diffs), key=lambda c: (round(abs(diffs[c]), 9), diffs[c]))  # ties: the class that grew


def _observed_label_shift(label: LabelSection, observed: dict[str, float | None],
                          ctx: RankingContext) -> LimitationRecord:
    """With production labels the class mix is measured, not estimated: quote the observed shares."""
    bench = label.benchmark_prior
    diffs = {c: (observed.get(c) or 0.0) - (bench.get(c) or 0.0) for c in set(bench) | set(observed)}
    tv = 0.5 * sum(abs(d) for d in diffs.values())
    top = _top_change(diffs)
    test = label.observed_test
    p_text = fmt_p(_adjusted_or_raw(test.p_value_adjusted, test.p_value) if test else None, "adjusted p")
    before, after = bench.get(top), observed.get(top)
    statement = (f"The class mix has changed: {shorten(top, 40)} is {fmt_share(after)} of the labelled production "
                 f"rows against {fmt_share(before)} of the benchmark (observed; total variation {fmt_num(tv)}, "
                 f"{p_text}, {fmt_n((test.n_current if test else None) or ctx.n_production)}).")
    est: PriorEstimate | None = label.production_prior_estimate.get(top)
    if est is not None:
        statement += (f" The label-free BBSE estimate was {_share_ci(est.estimate, est.ci_low, est.ci_high)}"
                      + (" (unreliable here: the inputs changed too)." if label.reliable is False else "."))
    score, basis, sentence = shift_loss(ctx, tv, ctx.priors.label_shift_gap)
    evidence = {"total_variation": tv, "p_value_adjusted": test.p_value_adjusted if test else None,
                "class_changes": diffs, "source": "observed_labels", "severity_basis": basis}
    title = f"the class mix has changed ({shorten(top, 30)}: {fmt_share(before)} → {fmt_share(after)})"
    decision = test_decision(test, ctx, statistic="class-mix change (observed labels)") if test else make_decision(
        "total variation of the class priors", tv, n=ctx.n_production, rule="observed label test flagged")
    return make_limitation("label_shift", None, title, statement + sentence, score, evidence, subject="all",
                           decision=decision)


def _drop(benchmark_value: float | None, production_value: float | None, metric: str) -> float | None:
    if benchmark_value is None or production_value is None:
        return None
    return (production_value - benchmark_value) if lower_is_better(metric) else (benchmark_value - production_value)


def _recorded_change(audit: AuditEvidence, ctx: RankingContext) -> Overall | None:
    """The overall change as tested on all rows; without that test, the observed-performance block's."""
    if audit.overall is not None and audit.overall.change_test is not None:
        return audit.overall
    observed = audit.label.observed_performance
    if observed is None:
        return None
    # only the within-context decision is recorded there: it stands for both
    return Overall(metric=observed.metric or ctx.metric, benchmark_value=observed.benchmark_value,
                   benchmark_ci=observed.benchmark_ci, production_value=observed.production_value,
                   production_ci=observed.production_ci,
                   n=observed.n_benchmark if observed.n_benchmark is not None else ctx.overall_n,
                   n_production=observed.n_production, changed=observed.is_shift,
                   within_context_changed=observed.is_shift, change_p_value_adjusted=observed.p_value_adjusted,
                   within_context_p_value_adjusted=observed.p_value_adjusted)


def _overall_drop(audit: AuditEvidence, ctx: RankingContext) -> list[LimitationRecord]:
    """The overall metric fell significantly (two-sample test in the audit's family, beyond the floor):
    a concept shift when it remains within the contexts both datasets share, else a drop the
    ranking attributes to the population that explains it (``evidence["located"]``)."""
    overall = _recorded_change(audit, ctx)
    if overall is None:
        return []
    metric = overall.metric or ctx.metric
    drop = _drop(overall.benchmark_value, overall.production_value, metric)
    within = overall.within_context_changed is True
    if overall.changed is not True or drop is None or drop <= 0:
        return []
    test = overall.change_test
    lo, hi = interval_ends(overall.change_difference_ci or (test.details.get("difference_ci") if test else None))
    oriented = (lo, hi) if lower_is_better(metric) else ((-hi if hi is not None else None),
                                                         (-lo if lo is not None else None))
    method = {"two_proportion_z": "two-proportion z-test, Newcombe interval", "delong_z": "DeLong z-test",
              "bootstrap": "bootstrap test"}.get(str(overall.change_method), "change test")
    floor = overall.change_effect_floor if overall.change_effect_floor is not None else ctx.floor("performance_drop")
    statement = (f"With production labels, {metric_label(metric)} fell from "
                 f"{fmt_metric(overall.benchmark_value, overall.benchmark_ci)} "
                 f"({fmt_n(overall.n if overall.n is not None else ctx.overall_n)}) on the benchmark to "
                 f"{fmt_metric(overall.production_value, overall.production_ci)} "
                 f"({fmt_n(overall.n_production)}) in production: a drop of {fmt_metric(drop, oriented)} "
                 f"({method}, {fmt_p(overall.change_p_value_adjusted, 'adjusted p')}; floor {fmt_num(floor)}).")
    within_p = overall.within_context_p_value_adjusted
    if within and test is None:
        pass  # only the within-context decision is recorded: nothing more to say about where the drop lies
    elif within:
        statement += (f" It remains within the contexts both datasets share ({fmt_p(within_p, 'adjusted p')}, after "
                      "reweighting to the production mix): what the model gets right has changed (concept shift).")
    elif within_p is None:
        statement += (" It cannot be tested within shared contexts: production has too few rows in contexts the "
                      "benchmark covers, so the drop lies in what is new in production.")
    else:
        # not significant is not "explained": the within-context test may have too few shared rows to tell
        statement += (" Within the contexts both datasets share it is not significant "
                      f"({fmt_p(within_p, 'adjusted p')}): the change of the context mix may explain it, or too few "
                      "rows share contexts to tell.")
    statement += contradiction_sentence(estimate_checks(audit, ctx))
    title = (f"{metric_label(metric)} dropped in production ({fmt_num(overall.benchmark_value)} → "
             f"{fmt_num(overall.production_value)})")
    evidence = {"metric": overall.metric, "benchmark_value": overall.benchmark_value,
                "benchmark_ci": overall.benchmark_ci, "production_value": overall.production_value,
                "production_ci": overall.production_ci, "n_production": overall.n_production,
                "change_p_value_adjusted": overall.change_p_value_adjusted}
    evidence.update(drop=drop, drop_ci=list(oriented), within_context=within, located=not within, gap_measured=True,
                    severity_basis=f"all of production × measured drop {drop:.3f}")
    decision = make_decision(f"{metric} difference (benchmark − production)", drop, test=str(overall.change_method),
                             p_value_adjusted=overall.change_p_value_adjusted, interval=list(oriented),
                             n=(overall.n or 0) + (overall.n_production or 0),
                             rule=f"adjusted p < α = {fmt_num(ctx.alpha)} and drop ≥ the floor {fmt_num(floor)}")
    return [make_limitation("concept_shift", None, title, statement, drop, evidence, subject="all",
                            decision=decision)]


def _concept_shift(audit: AuditEvidence, ctx: RankingContext) -> list[LimitationRecord]:
    found = _overall_drop(audit, ctx)
    for s in audit.slices:
        metric = s.metric or ctx.metric
        drop = _drop(s.benchmark_value, s.production_value, metric)
        # SliceResult: p_value_adjusted tests benchmark vs production; ``changed`` is the decision.
        if s.changed is not True or drop is None or drop <= 0 or s.status != "ok":
            continue
        share, _ = slice_shares(s, ctx)
        name = shorten(s.title or s.name)
        statement = (f"Within {name}, {metric_label(metric)} fell from "
                     f"{fmt_metric(s.benchmark_value, s.benchmark_ci)} ({fmt_n(s.n_benchmark)}) "
                     f"on the benchmark to {fmt_metric(s.production_value, s.production_ci)} "
                     f"({fmt_n(s.n_production)}) in production "
                     f"({fmt_p(s.p_value_adjusted, 'adjusted p')}); this context is "
                     f"{fmt_share(share)} of production.")
        title = f"{metric_label(metric)} dropped on {name} in production"
        evidence = {"metric": metric, "drop": drop, "production_share": share,
                    "p_value_adjusted": s.p_value_adjusted, "value": s.production_value, "ci": s.production_ci,
                    "severity_basis": f"production share {share or 0:.3f} × drop {drop:.3f}"}
        decision = make_decision(f"{metric} difference (benchmark − production) on the slice", drop,
                                 test="change test", p_value_adjusted=s.p_value_adjusted,
                                 interval=s.production_ci, n=s.n_production,
                                 rule=f"adjusted p < α = {fmt_num(ctx.alpha)} and drop ≥ the floor "
                                      f"{fmt_num(ctx.floor('performance_drop'))}")
        found.append(make_limitation("concept_shift", s.name, title, statement, (share or 0.0) * drop, evidence,
                                     definition=s.definition, decision=decision))
    return found


def _majority_baseline(audit: AuditEvidence, ctx: RankingContext) -> tuple[str, float] | None:
    """``(class, share)`` of the benchmark's majority class when the primary metric is accuracy and its CI
    does not lie above that share: the model is then not credibly better than always predicting it, and a
    high accuracy reflects class imbalance, not a saturated benchmark."""
    prior = audit.label.benchmark_prior
    if ctx.metric != "accuracy" or not prior:
        return None
    cls, share = max(prior.items(), key=lambda kv: kv[1] or 0.0)
    low = interval_ends(ctx.overall_ci)[0]
    bound = ctx.overall_value if low is None else low
    return (cls, share) if share is not None and bound is not None and bound <= share else None


def _within_sampling_error_of_threshold(ctx: RankingContext) -> bool:
    """The point value passes the saturation threshold but the one saturation rule (the interval's) does not."""
    low, high = interval_ends(ctx.overall_ci)
    return not saturated(ctx.metric, low, high, threshold=ctx.saturation_threshold)


def saturation_note(audit: AuditEvidence, ctx: RankingContext) -> dict[str, str] | None:
    """An audit note when the saturation rule is withheld: accuracy only matches the majority class, or the
    benchmark's interval reaches below the threshold (too few rows to call it saturated)."""
    value, baseline = ctx.overall_value, _majority_baseline(audit, ctx)
    if value is None or value < ctx.saturation_threshold or not ctx.higher_is_better:
        return None
    if baseline is None:
        if not _within_sampling_error_of_threshold(ctx):
            return None
        return {"part": "benchmark saturation",
                "reason": f"not flagged: {metric_label(ctx.metric)} {fmt_metric(value, ctx.overall_ci)} "
                          f"({fmt_n(ctx.overall_n)}) passes the {fmt_num(ctx.saturation_threshold)} threshold, but its "
                          "interval reaches below it: too few benchmark rows to call it saturated."}
    cls, share = baseline
    return {"part": "benchmark saturation",
            "reason": f"not flagged: accuracy {fmt_metric(value, ctx.overall_ci)} is not credibly above the "
                      f"{fmt_num(share)} scored by always predicting '{cls}', so it reflects class imbalance, "
                      f"not saturation; a class-balanced metric (sensitivity, balanced accuracy) says more."}


def _saturation(audit: AuditEvidence, ctx: RankingContext) -> list[LimitationRecord]:
    value = ctx.overall_value
    if value is None or not ctx.higher_is_better or value < ctx.saturation_threshold:
        return []
    if _majority_baseline(audit, ctx) is not None or _within_sampling_error_of_threshold(ctx):
        return []  # see saturation_note: decided by the interval, not the point value
    metric = metric_label(ctx.metric)
    statement = (f"The benchmark is close to saturated: {metric} is {fmt_metric(value, ctx.overall_ci)} "
                 f"({fmt_n(ctx.overall_n)}), above the {fmt_num(ctx.saturation_threshold)} saturation threshold, "
                 f"so it can hardly tell better models apart; the next round should add harder cases from the "
                 f"weak and untested contexts.")
    title = f"the benchmark is nearly saturated ({metric} {fmt_num(value)} ≥ {fmt_num(ctx.saturation_threshold)})"
    evidence = {"metric": ctx.metric, "benchmark_value": value, "benchmark_ci": ctx.overall_ci,
                "threshold": ctx.saturation_threshold, "severity_basis": "fixed informational score"}
    return [make_limitation("benchmark_saturation", None, title, statement,
                            ctx.priors.saturation_score, evidence, subject="all", claim="standing",
                            decision=make_decision(f"benchmark {ctx.metric}", value, interval=ctx.overall_ci,
                                                   n=ctx.overall_n,
                                                   rule=f"interval at or above the saturation threshold "
                                                        f"{fmt_num(ctx.saturation_threshold)} and above the "
                                                        "majority-class share"))]


def label_findings(audit: AuditEvidence, ctx: RankingContext) -> list[LimitationRecord]:
    """Label shift, concept shift (overall and per slice), label quality and benchmark saturation."""
    found = _label_shift(audit.label, ctx) + _concept_shift(audit, ctx)
    if audit.label_quality is not None:
        found += label_quality_findings(audit.label_quality, ctx)
    return found + _saturation(audit, ctx)
