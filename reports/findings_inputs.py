"""The covariate-shift limitation: which inputs (and model outputs) changed, with the loss measured
on labelled production where it can be (:mod:`reports.measured`), else an assumed one, said so."""
from __future__ import annotations

from reports.findings_base import detail_number, make_limitation, test_decision, test_note
from reports.formatting import effect_label, fmt_mean, fmt_metric, fmt_n, fmt_p, fmt_share, shorten
from reports.records import RankingContext, make_decision
from reports.result import AuditEvidence, LimitationRecord, MultivariateTest, ShiftTest
from reports.shift_loss import shift_loss

__all__ = ["covariate_findings"]


def _no_common_values(t: ShiftTest) -> bool:
    """Production shares no value with the benchmark: every category unseen, or disjoint numeric ranges
    (KS distance 1) - what a year, a date or a batch number does between two periods."""
    if t.kind != "feature":
        return False
    unseen, ks = detail_number(t.details, "unseen_share"), detail_number(t.details, "ks_statistic")
    return (unseen is not None and unseen >= 0.999) or (ks is not None and ks >= 0.999)


def _index_hint(tests: list[ShiftTest]) -> str:
    if not tests:
        return ""
    names = [shorten(t.name, 40) for t in tests[:3]]
    one = len(tests) == 1
    subject, verb, pronoun = ("column", "has", "it") if one else ("columns", "have", "them")
    return (f" The {subject} {', '.join(names)} {verb} no value in common with the benchmark: if "
            f"{'it is' if one else 'they are'} a time or batch index rather than a model input, give {pronoun} "
            f"the role timestamp or ignore.")


def _feature_phrase(t: ShiftTest) -> str:
    name = shorten(t.name, 60)
    if t.kind == "missing_rate":
        ref, cur = detail_number(t.details, "rate_reference"), detail_number(t.details, "rate_current")
        rates = f"{fmt_share(ref)} → {fmt_share(cur)}, " if ref is not None and cur is not None else ""
        return f"the missing-value rate of {name} ({rates}{fmt_p(t.p_value_adjusted, 'adjusted p')})"
    ref, cur = detail_number(t.details, "mean_reference"), detail_number(t.details, "mean_current")
    means = f"mean {fmt_mean(ref)} → {fmt_mean(cur)}, " if ref is not None and cur is not None else ""
    return f"{name} ({means}{test_note(t)})"


def _mv_p(mv: MultivariateTest) -> float | None:
    """The multivariate test's adjusted p-value, its raw one when it was not corrected with the others."""
    return mv.p_value_adjusted if mv.p_value_adjusted is not None else mv.p_value


def _multivariate_sentence(mv: MultivariateTest) -> str:
    method = mv.method or "multivariate"
    note = fmt_p(_mv_p(mv), "adjusted p")
    if "classifier" in method or "c2st" in method:
        auc_ci = mv.details.get("auc_ci") or mv.auc_ci
        return (f" A classifier separates production from benchmark rows with AUC "
                f"{fmt_metric(mv.statistic, auc_ci)} ({note}).")
    return f" The multivariate {shorten(method, 30)} test also detects a shift ({note})."


def _output_tests(audit: AuditEvidence) -> list[ShiftTest]:
    """Flagged BBSD tests on the model's outputs (predicted class, scores)."""
    outputs = audit.covariate.outputs
    return [t for t in (outputs.tests if outputs else []) if t.flagged]


def _output_sentence(tests: list[ShiftTest]) -> str:
    if not tests:
        return ""
    phrases = []
    for t in tests[:3]:
        what = ("the predicted-class mix" if t.name == "predicted_class" else "the model's score" if t.name == "score"
                else f"the score {shorten(t.name, 40)}")
        phrases.append(f"{what} ({_feature_phrase(t).split(' (', 1)[-1]}")
    return f" The model's outputs changed too: {', '.join(phrases)}."


def covariate_findings(audit: AuditEvidence, ctx: RankingContext) -> list[LimitationRecord]:
    """One covariate-shift limitation when an input, the inputs jointly or the model's outputs changed."""
    covariate = audit.covariate
    drifted = sorted((t for t in covariate.features + covariate.missing if t.flagged),
                     key=lambda t: (-(t.effect_size or 0.0), t.name))
    outputs = _output_tests(audit)
    mv = covariate.multivariate
    mv_flag = mv is not None and (mv.drifted or mv.is_shift)
    if not drifted and not mv_flag and not outputs:
        return []
    # a feature's distribution and its missing-value rate are two tests of one column: the column is named once
    columns = list(dict.fromkeys(t.name for t in drifted))
    n_features = len({t.name for t in covariate.features} | set(columns))
    names = [shorten(name, 40) for name in columns[:3]]
    if drifted:
        listed = ", ".join(_feature_phrase(t) for t in drifted[:3])
        more = f" and {len(drifted) - 3:,} more" if len(drifted) > 3 else ""
        statement = (f"{len(columns):,} of {n_features:,} input features changed between benchmark and production: "
                     f"{listed}{more}.")
        statement += _index_hint([t for t in drifted if _no_common_values(t)])
        statement += _output_sentence(outputs)
    elif mv_flag:
        statement = "No single input feature changed significantly, but their joint distribution did."
        statement += _output_sentence(outputs)
    else:
        statement = _output_sentence(outputs).strip().replace("changed too:", "changed:")
        statement += (" Black-box shift detection (BBSD) reads this as a change of the inputs the model sees, "
                      "even where no input column is tabulated.")
    if mv is not None and mv_flag:
        statement += _multivariate_sentence(mv)
    statement += f" Rows compared: {fmt_n(ctx.n_benchmark)} benchmark, {fmt_n(ctx.n_production)} production."
    effects = [t.effect_size for t in drifted + outputs] or [(mv.effect_size if mv else None) or 0.5]
    effect = min(max((e for e in effects if e is not None), default=0.0), 1.0)
    score, basis, sentence = shift_loss(ctx, effect)
    measured = ctx.measured
    statement += sentence
    evidence = {
        "n_drifted": len(columns), "n_features": n_features,
        "features": [{k: getattr(t, k) for k in ("name", "kind", "method", "effect_name", "effect_size",
                                                 "p_value_adjusted")} for t in drifted[:20]],
        "outputs": [{k: getattr(t, k) for k in ("name", "method", "effect_name", "effect_size", "p_value_adjusted")}
                    for t in outputs],
        "multivariate": {k: getattr(mv, k) for k in ("method", "statistic", "p_value", "p_value_adjusted",
                                                     "effect_size")} if mv_flag else None,
        "severity_basis": basis,
        "measured": None if measured is None else {
            "metric": measured.metric, "benchmark_value": measured.benchmark, "production_value": measured.production,
            "loss": measured.loss, "loss_ci": list(measured.loss_ci)},
    }
    if drifted:
        title = "the inputs have changed" + (f" ({', '.join(names)})" if names else "")
    elif outputs and not mv_flag:
        title = "the model's outputs have changed"
    else:
        title = "the inputs have changed jointly"
    top = max(drifted + outputs, key=lambda t: t.effect_size or 0.0) if drifted or outputs else None
    if top is not None:
        decision = test_decision(top, ctx, statistic=f"{effect_label(top.effect_name)} of {top.name}")
    else:
        assert mv is not None  # no feature or output flagged: the multivariate test was
        decision = make_decision(mv.effect_name or "AUC", mv.statistic, test=mv.method or "multivariate",
                                 p_value_adjusted=_mv_p(mv), interval=mv.details.get("auc_ci"),
                                 n=(ctx.n_benchmark or 0) + (ctx.n_production or 0),
                                 rule=f"adjusted p < α = {ctx.alpha:g} and effect ≥ the floor")
    return [make_limitation("covariate_shift", None, title, statement, score, evidence, subject="inputs",
                            decision=decision)]
