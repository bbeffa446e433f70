"""Standing limitations of the benchmark's labels: poor agreement, one annotator's weight, annotators
at chance level, and labelling sources that disagree. They are properties of the benchmark itself,
never changes (``claim="standing"``)."""
from __future__ import annotations

from detectors.intervals import wilson_interval
from reports.findings_base import make_limitation
from reports.formatting import fmt_metric, fmt_n, fmt_num, fmt_share, shorten
from reports.records import RankingContext, make_decision
from reports.result import Annotator, Interval, LabelQuality, LimitationRecord
from reports.result.base import finite

__all__ = ["label_quality_findings", "share_ci", "interval_ends", "KRIPPENDORFF_TENTATIVE"]

KRIPPENDORFF_TENTATIVE = 0.667  # Krippendorff's lowest alpha for tentative conclusions


def share_ci(value, lo, hi) -> str:
    if lo is None or hi is None:
        return fmt_share(value)
    return f"{fmt_share(value)} [{fmt_share(lo)}, {fmt_share(hi)}]"


def interval_ends(interval: Interval) -> tuple[float | None, float | None]:
    """An interval's two ends (finite or None); an interval that is not a pair has none."""
    if interval is None or len(interval) != 2:
        return None, None
    return finite(interval[0]), finite(interval[1])


def label_quality_findings(lq: LabelQuality, ctx: RankingContext) -> list[LimitationRecord]:
    """Poor agreement, an annotator over the cap, annotators at chance level, disagreeing sources."""
    found = []
    alpha = lq.krippendorff_alpha
    lo, hi = interval_ends(lq.alpha_ci)
    n_items = lq.n_items_agreement or lq.n_items
    if alpha is not None and (hi if hi is not None else alpha) < KRIPPENDORFF_TENTATIVE:
        statement = ("Annotators agree poorly on the benchmark labels: Krippendorff's α is "
                     f"{fmt_metric(alpha, (lo, hi))} "
                     f"({fmt_n(n_items)} items, {fmt_num(lq.n_annotators, 0)} annotators), below "
                     f"{KRIPPENDORFF_TENTATIVE}, the lowest value usually accepted even for tentative conclusions.")
        found.append(make_limitation("label_quality", None, f"annotators agree poorly (α {fmt_num(alpha)})", statement,
                                     (1 - alpha) * ctx.priors.shift_gap,
                                     {"krippendorff_alpha": alpha, "alpha_ci": [lo, hi],
                                      "severity_basis":
                                          f"(1 − α {alpha:.2f}) × assumed gap {ctx.priors.shift_gap:.2f}"},
                                     subject="agreement", claim="standing", decision=make_decision(
                                         "Krippendorff's alpha", alpha, interval=[lo, hi],
                                         n=n_items,
                                         rule=f"upper end of the interval below {KRIPPENDORFF_TENTATIVE}")))
    annotators = lq.annotators
    cap = lq.annotator_cap or 0.2
    over = [a for a in annotators if a.over_cap is True or (a.over_cap is None and (a.share or 0) > cap)]
    for a in sorted(over, key=lambda a: -(a.share or 0))[:3]:
        share = a.share or 0.0
        who = shorten(a.id, 40)
        statement = (f"Annotator {who} gave {fmt_share(share)} of the benchmark labels ({fmt_n(a.n_labels)}), "
                     f"above the {fmt_share(cap)} cap, so the benchmark leans on one person's judgement.")
        title = f"one annotator ({who}) gave {fmt_share(share)} of the labels"
        found.append(make_limitation("label_quality", None, title,
                                     statement, (share - cap) * ctx.priors.shift_gap,
                                     {"annotator": a.id, "share": share, "cap": cap,
                                      "severity_basis": f"(share {share:.2f} − cap {cap:.2f}) × assumed gap "
                                                        f"{ctx.priors.shift_gap:.2f}"},
                                     subject=f"annotator {a.id}", claim="standing",
                                     decision=make_decision("annotator's share of the labels", share,
                                                            n=a.n_labels, interval=_share_interval(a, share),
                                                            rule=f"share above the {fmt_share(cap)} cap")))
    chance = [a for a in annotators if a.near_chance is True]
    if chance:
        share = sum(a.share or 0.0 for a in chance)
        agreements = [a.agreement for a in chance if a.agreement is not None]
        mean_agreement = sum(agreements) / len(agreements) if agreements else 0.5
        names = ", ".join(shorten(a.id, 30) for a in chance[:5]) + (" …" if len(chance) > 5 else "")
        statement = (f"Annotators {names} ({fmt_share(share)} of the labels) agree with the consensus no better than "
                     f"chance (mean agreement {fmt_num(mean_agreement)}); their labels look like noise and should be "
                     f"reviewed or removed.")
        title = "some annotators agree with the others only at chance level"
        found.append(make_limitation("label_quality", None, title,
                                     statement, share * (1 - mean_agreement),
                                     {"annotators": [a.id for a in chance[:20]], "label_share": share,
                                      "severity_basis":
                                          f"label share {share:.3f} × (1 − agreement {mean_agreement:.2f})"},
                                     subject="near_chance_annotators", claim="standing",
                                     decision=make_decision("agreement with the consensus", mean_agreement,
                                                            test="label permutation test",
                                                            p_value_adjusted=max((a.p_value or 0.0
                                                                                  for a in chance), default=None),
                                                            rule="not significantly better than chance, or kappa "
                                                                 "interval below the floor")))
    found += _source_disagreement(lq, ctx)
    return found


def _source_disagreement(lq: LabelQuality, ctx: RankingContext) -> list[LimitationRecord]:
    sd = lq.source_disagreement
    if sd is None:
        return []
    rate = sd.rate
    lo, hi = interval_ends(sd.ci)
    if rate is None or rate < ctx.floor("label_disagreement") or not (lo or 0) > 0:
        return []
    sources = [shorten(s, 30) for s in (sd.sources or ["one labelling source", "another"])][:2]
    pair = " and ".join(sources) if len(sources) == 2 else "two labelling sources"
    statement = (f"Labels from {pair} disagree on {share_ci(rate, lo, hi)} of items ({fmt_n(sd.n)}); "
                 f"the benchmark's labels are uncertain at least at that rate.")
    return [make_limitation("label_quality", None, f"labelling sources disagree on {fmt_share(rate)} of items",
                            statement, rate / 2, {"rate": rate, "ci": [lo, hi], "n": sd.n,
                                                  "severity_basis": f"disagreement rate {rate:.3f} / 2"},
                            subject="labelling_sources", claim="standing",
                            decision=make_decision("disagreement rate", rate, interval=[lo, hi], n=sd.n,
                                                   rule=f"rate ≥ the floor {fmt_num(ctx.floor('label_disagreement'))} "
                                                        "and interval above 0"))]


def _share_interval(a: Annotator, share: float) -> list | None:
    """Wilson interval of an annotator's share of the labels, from their count."""
    n_labels = a.n_labels
    if not n_labels or share <= 0:
        return None
    return list(wilson_interval(n_labels, round(n_labels / share)))
