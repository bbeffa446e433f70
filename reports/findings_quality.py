"""Standing limitations of the benchmark's labels: poor agreement, one annotator's weight, annotators
at chance level, and labelling sources that disagree. They are properties of the benchmark itself,
never changes (``claim="standing"``)."""
from __future__ import annotations

from collections.abc import Mapping

from detectors.intervals import wilson_interval
from reports.findings_base import make_limitation
from reports.formatting import as_list, ci_pair, fmt_metric, fmt_n, fmt_num, fmt_share, num, shorten
from reports.records import Limitation, RankingContext, make_decision

__all__ = ["label_quality_findings", "share_ci", "KRIPPENDORFF_TENTATIVE"]

KRIPPENDORFF_TENTATIVE = 0.667  # Krippendorff's lowest alpha for tentative conclusions


def share_ci(value, lo, hi) -> str:
    if lo is None or hi is None:
        return fmt_share(value)
    return f"{fmt_share(value)} [{fmt_share(lo)}, {fmt_share(hi)}]"


def label_quality_findings(lq: Mapping, ctx: RankingContext) -> list[Limitation]:
    found = []
    alpha = num(lq.get("krippendorff_alpha"))
    lo, hi = ci_pair(lq.get("alpha_ci"))
    if alpha is not None and (hi if hi is not None else alpha) < KRIPPENDORFF_TENTATIVE:
        statement = (f"Annotators agree poorly on the benchmark labels: Krippendorff's α is {fmt_metric(alpha, (lo, hi))} "
                     f"({fmt_n(lq.get('n_items_agreement') or lq.get('n_items'))} items, {fmt_num(lq.get('n_annotators'), 0)} annotators), below "
                     f"{KRIPPENDORFF_TENTATIVE}, the lowest value usually accepted even for tentative conclusions.")
        found.append(make_limitation("label_quality", None, f"annotators agree poorly (α {fmt_num(alpha)})", statement,
                                     (1 - alpha) * ctx.priors.shift_gap,
                                     {"krippendorff_alpha": alpha, "alpha_ci": [lo, hi],
                                      "severity_basis": f"(1 − α {alpha:.2f}) × assumed gap {ctx.priors.shift_gap:.2f}"},
                                     subject="agreement", claim="standing", decision=make_decision(
                                         "Krippendorff's alpha", alpha, interval=[lo, hi],
                                         n=lq.get("n_items_agreement") or lq.get("n_items"),
                                         rule=f"upper end of the interval below {KRIPPENDORFF_TENTATIVE}")))
    annotators = as_list(lq.get("annotators"))
    cap = num(lq.get("annotator_cap")) or 0.2
    over = [a for a in annotators if a.get("over_cap") is True
            or (a.get("over_cap") is None and (num(a.get("share")) or 0) > cap)]
    for a in sorted(over, key=lambda a: -(num(a.get("share")) or 0))[:3]:
        share = num(a.get("share")) or 0.0
        who = shorten(a.get("id"), 40)
        statement = (f"Annotator {who} gave {fmt_share(share)} of the benchmark labels ({fmt_n(a.get('n_labels'))}), "
                     f"above the {fmt_share(cap)} cap, so the benchmark leans on one person's judgement.")
        found.append(make_limitation("label_quality", None, f"one annotator ({who}) gave {fmt_share(share)} of the labels",
                                     statement, (share - cap) * ctx.priors.shift_gap,
                                     {"annotator": a.get("id"), "share": share, "cap": cap,
                                      "severity_basis": f"(share {share:.2f} − cap {cap:.2f}) × assumed gap "
                                                        f"{ctx.priors.shift_gap:.2f}"},
                                     subject=f"annotator {a.get('id')}", claim="standing",
                                     decision=make_decision("annotator's share of the labels", share,
                                                            n=a.get("n_labels"), interval=_share_interval(a, share),
                                                            rule=f"share above the {fmt_share(cap)} cap")))
    chance = [a for a in annotators if a.get("near_chance") is True]
    if chance:
        share = sum(num(a.get("share")) or 0.0 for a in chance)
        agreements = [num(a.get("agreement")) for a in chance if num(a.get("agreement")) is not None]
        mean_agreement = sum(agreements) / len(agreements) if agreements else 0.5
        names = ", ".join(shorten(a.get("id"), 30) for a in chance[:5]) + (" …" if len(chance) > 5 else "")
        statement = (f"Annotators {names} ({fmt_share(share)} of the labels) agree with the consensus no better than "
                     f"chance (mean agreement {fmt_num(mean_agreement)}); their labels look like noise and should be "
                     f"reviewed or removed.")
        found.append(make_limitation("label_quality", None, "some annotators agree with the others only at chance level",
                                     statement, share * (1 - mean_agreement),
                                     {"annotators": [a.get("id") for a in chance[:20]], "label_share": share,
                                      "severity_basis": f"label share {share:.3f} × (1 − agreement {mean_agreement:.2f})"},
                                     subject="near_chance_annotators", claim="standing",
                                     decision=make_decision("agreement with the consensus", mean_agreement,
                                                            test="label permutation test",
                                                            p_value_adjusted=max((num(a.get("p_value")) or 0.0
                                                                                  for a in chance), default=None),
                                                            rule="not significantly better than chance, or kappa "
                                                                 "interval below the floor")))
    found += _source_disagreement(lq, ctx)
    return found


def _source_disagreement(lq: Mapping, ctx: RankingContext) -> list[Limitation]:
    sd = lq.get("source_disagreement")
    if not isinstance(sd, Mapping):
        return []
    rate = num(sd.get("rate"))
    lo, hi = ci_pair(sd.get("ci"))
    if rate is None or rate < ctx.floor("label_disagreement") or not (lo or 0) > 0:
        return []
    sources = [shorten(s, 30) for s in (sd.get("sources") or ["one labelling source", "another"])][:2]
    pair = " and ".join(sources) if len(sources) == 2 else "two labelling sources"
    statement = (f"Labels from {pair} disagree on {share_ci(rate, lo, hi)} of items ({fmt_n(sd.get('n'))}); "
                 f"the benchmark's labels are uncertain at least at that rate.")
    return [make_limitation("label_quality", None, f"labelling sources disagree on {fmt_share(rate)} of items",
                            statement, rate / 2, {"rate": rate, "ci": [lo, hi], "n": sd.get("n"),
                                                  "severity_basis": f"disagreement rate {rate:.3f} / 2"},
                            subject="labelling_sources", claim="standing",
                            decision=make_decision("disagreement rate", rate, interval=[lo, hi], n=sd.get("n"),
                                                   rule=f"rate ≥ the floor {fmt_num(ctx.floor('label_disagreement'))} "
                                                        "and interval above 0"))]


def _share_interval(a: Mapping, share: float) -> list | None:
    """Wilson interval of an annotator's share of the labels, from their count."""
    n_labels = num(a.get("n_labels"))
    if not n_labels or share <= 0:
        return None
    return list(wilson_interval(n_labels, round(n_labels / share)))
