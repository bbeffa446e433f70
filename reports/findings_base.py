"""What every data finding is built from: a limitation with its key, a test's decision, the
comparison of two intervals, and the sentences that name folded tests."""
from __future__ import annotations

import math
from collections.abc import Mapping

from reports.formatting import capitalise, ci_pair, effect_label, fmt_num, fmt_p, get, lower_is_better, num, shorten
from reports.records import Limitation, RankingContext, finding_key, make_decision, severity_label

__all__ = ["make_limitation", "test_decision", "credibly_worse", "untested_name", "test_note", "fold_sentence",
           "measured_in_production"]


def make_limitation(kind: str, slice_name: str | None, title: str, statement: str,
                    score: float, evidence: dict, *, definition: str | None = None,
                    subject: str | None = None, claim: str = "change", decision: dict | None = None) -> Limitation:
    """A limitation with its stable key: the rows' ``definition`` when it concerns rows, else ``subject``;
    ``claim`` says whether it rests on a change test ("change") or holds on the benchmark too ("standing")."""
    score = max(0.0, float(score))
    return Limitation(rank=0, kind=kind, slice=slice_name, title=title, statement=statement,
                      score=round(score, 6), severity=severity_label(score), evidence=evidence,
                      key=finding_key(kind, definition, subject if subject is not None else slice_name),
                      definition=definition or None, claim=claim, decision=decision)


def test_decision(t: Mapping, ctx: RankingContext, *, statistic: str | None = None) -> dict:
    """The decision of one flagged detector test: effect, test, adjusted p, rows, and the audit's rule."""
    floor = num(t.get("effect_floor"))
    effect = effect_label(t.get("effect_name"))
    rule = (f"adjusted p < α = {fmt_num(ctx.alpha)} and {effect} ≥ the floor"
            + (f" {fmt_num(floor)}" if floor is not None else ""))
    n = [num(t.get("n_reference")), num(t.get("n_current"))]
    return make_decision(statistic or effect, t.get("effect_size"), test=str(t.get("method") or "test"),
                         p_value_adjusted=t.get("p_value_adjusted"), interval=get(t, "details", "ci"),
                         n=sum(v for v in n if v is not None) or None, rule=rule)


def credibly_worse(value_ci, reference: float | None, metric: str, *, value: float | None = None,
                   reference_ci=None) -> bool | None:
    """Does the interval lie entirely on the worse side of ``reference``? None when it cannot tell.

    With ``value`` and ``reference_ci`` (two independent samples, e.g. production rows against the
    benchmark), the difference's MOVER interval (Newcombe's square-and-add of the two intervals)
    must exclude 0: a reference measured on 2,000 rows is not a known constant."""
    lo, hi = ci_pair(value_ci)
    if reference is None or lo is None or hi is None:
        return None
    r_lo, r_hi = ci_pair(reference_ci) if reference_ci is not None else (None, None)
    if value is None or r_lo is None or r_hi is None:
        return lo > reference if lower_is_better(metric) else hi < reference
    d = value - reference
    if lower_is_better(metric):
        return d - math.sqrt((value - lo) ** 2 + (r_hi - reference) ** 2) > 0
    return d + math.sqrt((hi - value) ** 2 + (reference - r_lo) ** 2) < 0


def untested_name(u: Mapping) -> str:
    """``name`` (UntestedContext), else ``slice``, else ``"column = value"``."""
    for key in ("name", "slice"):
        if u.get(key) not in (None, ""):
            return str(u[key])
    return f"{u.get('column', 'context')} = {u.get('value', '?')}"


def test_note(t: Mapping) -> str:
    effect = f"{effect_label(t.get('effect_name'))} {fmt_num(t.get('effect_size'))}"
    return f"{effect}, {fmt_p(t.get('p_value_adjusted'), 'adjusted p')}"


def fold_sentence(tests: list) -> str:
    parts = []
    for t in tests:
        if t.get("kind") == "slice_share":
            parts.append(f"its share differs significantly between benchmark and production ({test_note(t)})")
        else:
            parts.append(f"the mix of {shorten(t.get('name'))} changed significantly ({test_note(t)})")
    return (" " + capitalise("; ".join(parts)) + ".") if parts else ""


def measured_in_production(s: Mapping | None, ctx: RankingContext) -> bool:
    return bool(s) and num(s.get("production_value")) is not None and ctx.overall_value is not None
