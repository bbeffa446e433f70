"""What every data finding is built from: a limitation with its key, a test's decision, the
comparison of two intervals, and the sentences that name folded tests."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from reports.formatting import capitalise, effect_label, finite_number, fmt_num, fmt_p, lower_is_better, shorten
from reports.records import RankingContext, finding_key, make_decision, severity_label
from reports.result import Decision, LimitationRecord, ShiftTest, SliceRecord, UntestedContextRecord
from reports.result.claims import Claim, LimitationKind

__all__ = ["make_limitation", "test_decision", "credibly_worse", "untested_name", "test_note", "fold_sentence",
           "measured_in_production", "metric_rows", "detail_number"]


def make_limitation(kind: LimitationKind, slice_name: str | None, title: str, statement: str,
                    score: float, evidence: dict, *, definition: str | None = None,
                    subject: str | None = None, claim: Claim = "change",
                    decision: Decision | None = None) -> LimitationRecord:
    """A limitation with its stable key: the rows' ``definition`` when it concerns rows, else ``subject``;
    ``claim`` says whether it rests on a change test ("change") or holds on the benchmark too ("standing")."""
    score = max(0.0, float(score))
    return LimitationRecord(rank=0, kind=kind, slice=slice_name, title=title, statement=statement,
                      score=round(score, 6), severity=severity_label(score), evidence=evidence,
                      key=finding_key(kind, definition, subject if subject is not None else slice_name),
                      definition=definition or None, claim=claim, decision=decision)


def test_decision(t: ShiftTest, ctx: RankingContext, *, statistic: str | None = None) -> Decision:
    """The decision of one flagged detector test: effect, test, adjusted p, rows, and the audit's rule."""
    effect = effect_label(t.effect_name)
    rule = (f"adjusted p < α = {fmt_num(ctx.alpha)} and {effect} ≥ the floor"
            + (f" {fmt_num(t.effect_floor)}" if t.effect_floor is not None else ""))
    n = sum(v for v in (t.n_reference, t.n_current) if v is not None)
    return make_decision(statistic or effect, t.effect_size, test=t.method or "test",
                         p_value_adjusted=t.p_value_adjusted, interval=t.details.get("ci"), n=n or None, rule=rule)


def _pair(ci: Sequence[float | None] | None) -> tuple[float | None, float | None]:
    return (ci[0], ci[1]) if ci is not None and len(ci) == 2 else (None, None)


def credibly_worse(value_ci: Sequence[float | None] | None, reference: float | None, metric: str, *,
                   value: float | None = None, reference_ci: Sequence[float | None] | None = None) -> bool | None:
    """Does the interval lie entirely on the worse side of ``reference``? None when it cannot tell.

    With ``value`` and ``reference_ci`` (two independent samples, e.g. production rows against the
    benchmark), the difference's MOVER interval (Newcombe's square-and-add of the two intervals)
    must exclude 0: a reference measured on 2,000 rows is not a known constant."""
    lo, hi = _pair(value_ci)
    if reference is None or lo is None or hi is None:
        return None
    r_lo, r_hi = _pair(reference_ci)
    if value is None or r_lo is None or r_hi is None:
        return lo > reference if lower_is_better(metric) else hi < reference
    d = value - reference
    if lower_is_better(metric):
        return d - math.sqrt((value - lo) ** 2 + (r_hi - reference) ** 2) > 0
    return d + math.sqrt((hi - value) ** 2 + (reference - r_lo) ** 2) < 0


def untested_name(u: UntestedContextRecord) -> str:
    """The untested context's ``name``, else ``"column = value"``."""
    return u.name or f"{u.column or 'context'} = {'?' if u.value is None else u.value}"


def test_note(t: ShiftTest) -> str:
    return f"{effect_label(t.effect_name)} {fmt_num(t.effect_size)}, {fmt_p(t.p_value_adjusted, 'adjusted p')}"


def fold_sentence(tests: Sequence[ShiftTest]) -> str:
    parts = []
    for t in tests:
        if t.kind == "slice_share":
            parts.append(f"its share differs significantly between benchmark and production ({test_note(t)})")
        else:
            parts.append(f"the mix of {shorten(t.name)} changed significantly ({test_note(t)})")
    return (" " + capitalise("; ".join(parts)) + ".") if parts else ""


def measured_in_production(s: SliceRecord | None, ctx: RankingContext) -> bool:
    return s is not None and s.production_value is not None and ctx.overall_value is not None


def metric_rows(s: SliceRecord, dataset: str) -> int | None:
    """The rows behind the slice's metric on ``dataset`` ("benchmark" or "production"): the positives
    for sensitivity, else all its rows."""
    if dataset == "production":
        return s.metric_n_production if s.metric_n_production is not None else s.n_production
    return s.metric_n_benchmark if s.metric_n_benchmark is not None else s.n_benchmark


def detail_number(details: Mapping[str, Any], key: str) -> float | None:
    """A finite number from an open mapping (a test's ``details``), else None: the contract validates
    the records' fields, not what a detector puts in their open mappings."""
    return finite_number(details.get(key))

