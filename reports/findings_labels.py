"""Limitations found in the labels and the metric: label (prior) shift, concept shift (a measured
performance drop with production labels), label quality (:mod:`reports.findings_quality`), and
benchmark saturation."""
from __future__ import annotations

from collections.abc import Mapping

from detectors.metric_registry import saturated
from reports.findings_base import make_limitation, test_decision
from reports.findings_data import slice_shares
from reports.shift_loss import shift_loss
from reports.formatting import (
    as_list, ci_pair, fmt_metric, fmt_n, fmt_num, fmt_p, fmt_share, get, lower_is_better,
    metric_label, num, shorten,
)
from reports.findings_quality import label_quality_findings, share_ci as _share_ci
from reports.records import Limitation, RankingContext, make_decision
from reports.result import ShiftTest, SliceRecord

__all__ = ["label_findings", "performance_estimates", "saturation_note", "estimate_checks", "contradiction_sentence"]


def _from_performance_estimate(node: Mapping, metric: str | None, name: str | None) -> list:
    """``PerformanceEstimate.to_dict()``: ``{method, metrics: {key: MetricEstimate}}`` → the primary metric."""
    metrics = node["metrics"]
    items = list(metrics.items()) if isinstance(metrics, Mapping) else [(None, m) for m in metrics]
    for key, m in items:
        if isinstance(m, Mapping) and (metric is None or metric in (m.get("name"), key)):
            return [(str(node.get("method") or name or "estimate"), num(m.get("value")), *ci_pair(m))]
    return []


Estimate = tuple[str, "float | None", "float | None", "float | None"]  # (method, value, ci_low, ci_high)


def performance_estimates(estimated, metric: str | None = None) -> list[Estimate]:
    """(method, estimate, ci_low, ci_high) from ``label.estimated_performance`` in any accepted
    shape: one ``{estimate, ci_low, ci_high}``; ``{"methods": {name: {...}}}``; ``{name: {...}}``;
    or ``PerformanceEstimate.to_dict()`` records (alone, in a list, or by name), of which the
    entry for ``metric`` is used."""
    found: list = []

    def visit(node, name, depth):
        if depth > 3 or not isinstance(node, (Mapping, list, tuple)):
            return
        if isinstance(node, (list, tuple)):
            for item in node:
                visit(item, None, depth + 1)
        elif "estimate" in node:
            found.append((str(name or node.get("method") or "estimate"), num(node.get("estimate")), *ci_pair(node)))
        elif isinstance(node.get("metrics"), (Mapping, list, tuple)):
            found.extend(_from_performance_estimate(node, metric, name))
        else:
            for key, value in node.items():
                if key not in ("metric", "benchmark_value"):
                    visit(value, key if key != "methods" else None, depth + 1)

    visit(estimated, None, 0)
    return [(name.replace("_", " "), est, lo, hi) for name, est, lo, hi in found]


def _estimate_sentence(label: Mapping, ctx: RankingContext) -> str:
    """A sentence quoting the label-free performance estimates (context, not part of the score:
    a confidence-based estimate mixes every kind of shift, so it is not attributed to this one)."""
    estimated = label.get("estimated_performance")
    metric = (estimated.get("metric") if isinstance(estimated, Mapping) else None) or ctx.metric
    rows = performance_estimates(estimated, metric)
    if not rows:
        return ""
    bench = num(estimated.get("benchmark_value")) if isinstance(estimated, Mapping) else None
    bench = ctx.overall_value if bench is None else bench
    parts = [f"{fmt_metric(est, (lo, hi))} ({shorten(name, 30)})" for name, est, lo, hi in rows[:4]]
    return (f" Label-free estimates of production {metric_label(metric)}: {', '.join(parts)}, "
            f"against {fmt_num(bench)} on the benchmark.")


def _label_shift(label: Mapping, ctx: RankingContext) -> list[Limitation]:
    if label.get("is_shift") is not True:
        return []
    bench = label.get("benchmark_prior") if isinstance(label.get("benchmark_prior"), Mapping) else {}
    observed = label.get("observed_prior") if isinstance(label.get("observed_prior"), Mapping) else None
    estimated = label.get("production_prior_estimate") if isinstance(label.get("production_prior_estimate"),
                                                                      Mapping) else {}
    if observed:
        return [_observed_label_shift(label, bench, observed, estimated, ctx)]
    rows = {str(c): (num(bench.get(c)), v) for c, v in estimated.items() if isinstance(v, Mapping)}
    diffs = {c: (num(v.get("estimate")) or 0.0) - (p or 0.0) for c, (p, v) in rows.items() if p is not None}
    tv = 0.5 * sum(abs(d) for d in diffs.values())
    p_text = fmt_p(label.get("p_value_adjusted", label.get("p_value")), "adjusted p")
    if diffs:
        top = _top_change(diffs)
        p, est = rows[top]
        lo, hi = ci_pair(est)
        statement = (f"The class mix has changed: {shorten(top, 40)} is estimated at "
                     f"{_share_ci(num(est.get('estimate')), lo, hi)} of production against {fmt_share(p)} "
                     f"of the benchmark (BBSE, from the model's predictions, without production labels; "
                     f"{p_text}, {fmt_n(ctx.n_production)}).")
        title = f"the class mix has changed ({shorten(top, 30)}: {fmt_share(p)} → {fmt_share(num(est.get('estimate')))})"
    else:
        statement = f"The distribution of the model's predictions has changed ({p_text}, {fmt_n(ctx.n_production)})."
        title = "the class mix has changed"
    if label.get("reliable") is False:
        statement += (" This estimate assumes that only the class mix changed (P(x|y) fixed), which the audit's own "
                      "covariate tests contradict" + (f" ({label.get('unreliable_reason')})"
                                                       if label.get("unreliable_reason") else "") + "; treat it as "
                      "indicative only.")
    score, basis, sentence = shift_loss(ctx, tv, ctx.priors.label_shift_gap)
    evidence = {"total_variation": tv, "p_value_adjusted": num(label.get("p_value_adjusted")), "class_changes": diffs,
                "source": "bbse_estimate",
                "severity_basis": basis if ctx.measured is not None else
                f"total variation {tv:.3f} × assumed recall spread {ctx.priors.label_shift_gap:.2f} "
                "(the assumed spread between per-class recalls)"}
    decision = make_decision("total variation of the class priors (BBSE)", tv, test=str(label.get("method") or "bbse"),
                             p_value_adjusted=label.get("p_value_adjusted", label.get("p_value")), n=ctx.n_production,
                             rule=f"adjusted p < α = {fmt_num(ctx.alpha)} and the prior change passes the floor")
    return [make_limitation("label_shift", None, title, statement + _estimate_sentence(label, ctx)
                            + (sentence if ctx.measured is not None else ""), score, evidence,
                            subject="all", decision=decision)]


def _top_change(diffs: Mapping) -> str:
    return max(sorted(diffs), key=lambda c: (round(abs(diffs[c]), 9), diffs[c]))  # ties: the class that grew


def _observed_label_shift(label: Mapping, bench: Mapping, observed: Mapping, estimated: Mapping,
                          ctx: RankingContext) -> Limitation:
    """With production labels the class mix is measured, not estimated: quote the observed shares."""
    diffs = {str(c): (num(observed.get(c)) or 0.0) - (num(bench.get(c)) or 0.0) for c in set(bench) | set(observed)}
    tv = 0.5 * sum(abs(d) for d in diffs.values())
    top = _top_change(diffs)
    test = label.get("observed_test") if isinstance(label.get("observed_test"), Mapping) else {}
    p_text = fmt_p(test.get("p_value_adjusted", test.get("p_value")), "adjusted p")
    before, after = num(bench.get(top)), num(observed.get(top))
    statement = (f"The class mix has changed: {shorten(top, 40)} is {fmt_share(after)} of the labelled production "
                 f"rows against {fmt_share(before)} of the benchmark (observed; total variation {fmt_num(tv)}, "
                 f"{p_text}, {fmt_n(test.get('n_current') or ctx.n_production)}).")
    est = estimated.get(top) if isinstance(estimated.get(top), Mapping) else None
    if est is not None:
        lo, hi = ci_pair(est)
        statement += (f" The label-free BBSE estimate was {_share_ci(num(est.get('estimate')), lo, hi)}"
                      + (" (unreliable here: the inputs changed too)." if label.get("reliable") is False else "."))
    score, basis, sentence = shift_loss(ctx, tv, ctx.priors.label_shift_gap)
    evidence = {"total_variation": tv, "p_value_adjusted": num(test.get("p_value_adjusted")), "class_changes": diffs,
                "source": "observed_labels", "severity_basis": basis}
    title = f"the class mix has changed ({shorten(top, 30)}: {fmt_share(before)} → {fmt_share(after)})"
    decision = test_decision(ShiftTest.model_validate(test), ctx, statistic="class-mix change (observed labels)") \
        if test else make_decision("total variation of the class priors", tv, n=ctx.n_production,
                                   rule="observed label test flagged")
    return make_limitation("label_shift", None, title, statement + sentence, score, evidence, subject="all",
                           decision=decision)


def _drop(benchmark_value, production_value, metric) -> float | None:
    b, p = num(benchmark_value), num(production_value)
    if b is None or p is None:
        return None
    return (p - b) if lower_is_better(metric) else (b - p)


def estimate_checks(audit: Mapping, ctx: RankingContext) -> list[dict]:
    """Each label-free estimate of the production metric against the observed one, when production is
    labelled: ``contradicts`` when the observed value lies outside the estimate's interval (the
    estimator's assumption does not hold here, so its number must not be read beside the observed one)."""
    observed = num(get(audit, "overall", "production_value"))
    estimated = get(audit, "label", "estimated_performance")
    if observed is None or not isinstance(estimated, Mapping):
        return []
    metric = estimated.get("metric") or ctx.metric
    if metric != (get(audit, "overall", "metric") or ctx.metric):
        return []
    out = []
    for name, est, lo, hi in performance_estimates(estimated, metric):
        if est is None:
            continue
        outside = lo is not None and hi is not None and not lo <= observed <= hi
        out.append({"method": name, "metric": metric, "estimate": est, "ci": [lo, hi], "observed": observed,
                    "contradicts": bool(outside)})
    return out


def contradiction_sentence(checks: list[dict]) -> str:
    bad = [c for c in checks if c["contradicts"]]
    if not bad:
        return ""
    parts = [f"the label-free estimate {fmt_metric(c['estimate'], c['ci'])} ({c['method']}) contradicts the observed "
             f"{fmt_num(c['observed'])}" for c in bad[:3]]
    return (" " + "; ".join(parts)[:1].upper() + "; ".join(parts)[1:]
            + ": the estimators' assumptions (covariate or label shift only) do not hold here, so rely on the "
              "observed value.")


def _overall_drop(audit: Mapping, ctx: RankingContext) -> list[Limitation]:
    """The overall metric fell significantly (two-sample test in the audit's family, beyond the floor):
    a concept shift when it remains within the contexts both datasets share, else a drop the
    ranking attributes to the population that explains it (``evidence["located"]``)."""
    overall = get(audit, "overall", default={})
    if not isinstance(overall, Mapping):
        return []
    if "change_test" not in overall:  # no plain change test recorded: the observed-performance block decides
        observed = get(audit, "label", "observed_performance", default={})
        if not isinstance(observed, Mapping) or not observed:
            return []
        flag = observed.get("is_shift") is True
        overall = {**observed, "n": observed.get("n_benchmark", ctx.overall_n), "changed": flag,
                   "within_context_changed": flag, "change_p_value_adjusted": observed.get("p_value_adjusted"),
                   "within_context_p_value_adjusted": observed.get("p_value_adjusted")}
    metric = overall.get("metric") or ctx.metric
    drop = _drop(overall.get("benchmark_value"), overall.get("production_value"), metric)
    changed = overall.get("changed") is True
    within = overall.get("within_context_changed") is True
    if not changed or (drop or 0) <= 0:
        return []
    test = overall.get("change_test") if isinstance(overall.get("change_test"), Mapping) else {}
    diff_ci = overall.get("change_difference_ci") or get(test, "details", "difference_ci")
    lo, hi = ci_pair(diff_ci)
    oriented = (lo, hi) if lower_is_better(metric) else ((-hi if hi is not None else None),
                                                         (-lo if lo is not None else None))
    method = {"two_proportion_z": "two-proportion z-test, Newcombe interval", "delong_z": "DeLong z-test",
              "bootstrap": "bootstrap test"}.get(str(overall.get("change_method")), "change test")
    statement = (f"With production labels, {metric_label(metric)} fell from "
                 f"{fmt_metric(overall.get('benchmark_value'), overall.get('benchmark_ci'))} "
                 f"({fmt_n(overall.get('n', ctx.overall_n))}) on the benchmark to "
                 f"{fmt_metric(overall.get('production_value'), overall.get('production_ci'))} "
                 f"({fmt_n(overall.get('n_production'))}) in production: a drop of {fmt_metric(drop, oriented)} "
                 f"({method}, {fmt_p(overall.get('change_p_value_adjusted'), 'adjusted p')}; floor "
                 f"{fmt_num(overall.get('change_effect_floor', ctx.floor('performance_drop')))}).")
    within_p = overall.get("within_context_p_value_adjusted", overall.get("change_p_value_adjusted"))
    if within and "change_test" not in get(audit, "overall", default={}):
        pass  # only the within-context decision is recorded: nothing more to say about where the drop lies
    elif within:
        statement += (f" It remains within the contexts both datasets share ({fmt_p(within_p, 'adjusted p')}, after "
                      "reweighting to the production mix): what the model gets right has changed (concept shift).")
    elif num(within_p) is None:
        statement += (" It cannot be tested within shared contexts: production has too few rows in contexts the "
                      "benchmark covers, so the drop lies in what is new in production.")
    else:
        statement += (f" Within the contexts both datasets share it is not significant ({fmt_p(within_p, 'adjusted p')}):"
                      " the change of the context mix explains it.")
    statement += contradiction_sentence(estimate_checks(audit, ctx))
    title = (f"{metric_label(metric)} dropped in production ({fmt_num(overall.get('benchmark_value'))} → "
             f"{fmt_num(overall.get('production_value'))})")
    evidence = {k: overall.get(k) for k in ("metric", "benchmark_value", "benchmark_ci", "production_value",
                                            "production_ci", "n_production", "change_p_value_adjusted")}
    evidence.update(drop=drop, drop_ci=list(oriented), within_context=within, located=not within, gap_measured=True,
                    severity_basis=f"all of production × measured drop {drop:.3f}")
    decision = make_decision(f"{metric} difference (benchmark − production)", drop, test=str(overall.get("change_method")),
                             p_value_adjusted=overall.get("change_p_value_adjusted"), interval=list(oriented),
                             n=(num(overall.get("n")) or 0) + (num(overall.get("n_production")) or 0),
                             rule=f"adjusted p < α = {fmt_num(ctx.alpha)} and drop ≥ the floor "
                                  f"{fmt_num(overall.get('change_effect_floor', ctx.floor('performance_drop')))}")
    return [make_limitation("concept_shift", None, title, statement, drop, evidence, subject="all",
                            decision=decision)]


def _concept_shift(audit: Mapping, ctx: RankingContext) -> list[Limitation]:
    found = _overall_drop(audit, ctx)
    for s in as_list(get(audit, "slices")):
        metric = s.get("metric") or ctx.metric
        drop = _drop(s.get("benchmark_value"), s.get("production_value"), metric)
        # SliceResult: p_value_adjusted tests benchmark vs production; ``changed`` is the decision.
        flag = s.get("changed")
        if flag is not True or (drop or 0) <= 0 or str(s.get("status", "ok")) != "ok":
            continue
        share, _ = slice_shares(SliceRecord.model_validate(s), ctx)
        name = shorten(s.get("title") or s.get("name"))
        statement = (f"Within {name}, {metric_label(metric)} fell from "
                     f"{fmt_metric(s.get('benchmark_value'), s.get('benchmark_ci'))} ({fmt_n(s.get('n_benchmark'))}) "
                     f"on the benchmark to {fmt_metric(s.get('production_value'), s.get('production_ci'))} "
                     f"({fmt_n(s.get('n_production'))}) in production "
                     f"({fmt_p(s.get('p_value_adjusted'), 'adjusted p')}); this context is "
                     f"{fmt_share(share)} of production.")
        title = f"{metric_label(metric)} dropped on {name} in production"
        evidence = {"metric": metric, "drop": drop, "production_share": share,
                    "p_value_adjusted": num(s.get("p_value_adjusted")), "value": num(s.get("production_value")),
                    "ci": s.get("production_ci"),
                    "severity_basis": f"production share {share or 0:.3f} × drop {drop:.3f}"}
        decision = make_decision(f"{metric} difference (benchmark − production) on the slice", drop,
                                 test="change test", p_value_adjusted=s.get("p_value_adjusted"),
                                 interval=s.get("production_ci"), n=s.get("n_production"),
                                 rule=f"adjusted p < α = {fmt_num(ctx.alpha)} and drop ≥ the floor "
                                      f"{fmt_num(ctx.floor('performance_drop'))}")
        found.append(make_limitation("concept_shift", str(s.get("name")), title, statement,
                                     (share or 0.0) * drop, evidence, definition=s.get("definition"),
                                     decision=decision))
    return found


def _majority_baseline(audit: Mapping, ctx: RankingContext) -> tuple[str, float] | None:
    """``(class, share)`` of the benchmark's majority class when the primary metric is accuracy and its CI
    does not lie above that share: the model is then not credibly better than always predicting it, and a
    high accuracy reflects class imbalance, not a saturated benchmark."""
    prior = get(audit, "label", "benchmark_prior")
    if ctx.metric != "accuracy" or not isinstance(prior, Mapping) or not prior:
        return None
    cls, share = max(((str(k), num(v)) for k, v in prior.items()), key=lambda kv: kv[1] or 0.0)
    low = ci_pair(ctx.overall_ci)[0]
    bound = ctx.overall_value if low is None else low
    return (cls, share) if share is not None and bound is not None and bound <= share else None


def _within_sampling_error_of_threshold(ctx: RankingContext) -> bool:
    """The point value passes the saturation threshold but the one saturation rule (the interval's) does not."""
    low, high = ci_pair(ctx.overall_ci)
    return not saturated(ctx.metric, low, high, threshold=ctx.saturation_threshold)


def saturation_note(audit: Mapping, ctx: RankingContext) -> dict[str, str] | None:
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


def _saturation(audit: Mapping, ctx: RankingContext) -> list[Limitation]:
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


def label_findings(audit: Mapping, ctx: RankingContext) -> list[Limitation]:
    label = get(audit, "label", default={})
    found = _label_shift(label, ctx) if isinstance(label, Mapping) else []
    found += _concept_shift(audit, ctx)
    lq = get(audit, "label_quality")
    if isinstance(lq, Mapping):
        found += label_quality_findings(lq, ctx)
    return found + _saturation(audit, ctx)
