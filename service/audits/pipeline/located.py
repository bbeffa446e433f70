"""A change located in a slice keeps its kind and absorbs what it explains.

Labels flipped inside one slice of production (a concept shift there) show up several times: the
slice is weak, the overall metric dropped, the class mix moved, discovered slices inside or around
it are weak. :func:`located_concept_shifts` finds such a slice and states it once, as a
``concept_shift`` with the slice's definition:

* **located**: the slice's production metric is below its own benchmark value, tested with
  :func:`detectors.metric_change.metric_change_test` (its p-value Bonferroni-adjusted to the size of
  the audit's correction family plus the slices tried here, so the claim is at least as strict as
  the family's), beyond the practical floor;
* **explains**: without the slice's rows the overall metric shows no significant drop, and the
  class mix no change; those findings, and slices whose rows nest in it or contain it with no drop
  left outside it, fold into it as ``related`` evidence.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from detectors.base import DetectorInputError
from detectors.concept import observed_label_shift
from detectors.metric_change import metric_change_test
from detectors.slices import METRIC_ALIASES
from reports.formatting import fmt_metric, fmt_n, fmt_num, fmt_p, fmt_share, lower_is_better, metric_label
from reports.grouping import Relation
from reports.records import Limitation, finding_key, make_decision, severity_label

SLICE_KINDS = ("underperforming_slice", "concept_shift")
MAX_TRIED = 8


def _change(state: Any, keep_b: np.ndarray, keep_p: np.ndarray, name: str):
    ctx, b, p = state.ctx, state.bench_out, state.prod_out
    metric = METRIC_ALIASES.get(state.overall_eval.metric, state.overall_eval.metric)
    floors = ctx.options.get("effect_floors") or {}
    floor = float(floors.get("performance_drop", 0.05)) if isinstance(floors, dict) else 0.05
    scores_b = None if b.positive_scores is None else b.positive_scores[keep_b]
    scores_p = None if p.positive_scores is None else p.positive_scores[keep_p]
    try:
        return metric_change_test(metric, b.y_true[keep_b], b.y_pred[keep_b], p.y_true[keep_p], p.y_pred[keep_p],
                                  scores_b=scores_b, scores_p=scores_p, positive=getattr(ctx.pack, "positive_class", None),
                                  alpha=ctx.alpha, effect_floor=floor, min_samples=min(30, ctx.min_slice_size),
                                  random_state=ctx.seed, name=name)
    except DetectorInputError:
        return None


def _dropped(change: Any, metric: str, n_family: int, alpha: float) -> tuple[bool, float]:
    """Did the metric drop (beyond the floor, Bonferroni-adjusted p below alpha)? And the adjusted p."""
    if change is None or change.test.status != "ok":
        return False, float("nan")
    diff = change.test.effect_size  # production − benchmark
    worse = diff > 0 if lower_is_better(metric) else diff < 0
    p_adj = min(1.0, float(change.test.p_value) * n_family)
    return bool(worse and abs(diff) >= change.test.effect_floor and p_adj < alpha), p_adj


def located_concept_shifts(found: list[Limitation], masks: dict[str, np.ndarray],
                           bench_masks: dict[str, np.ndarray], state: Any) -> tuple[list[Limitation], list]:
    """``found`` with each located concept shift as one ``concept_shift`` limitation, and the relations
    (``reports.grouping.Relation``) folding what it explains into it."""
    b, p = state.bench_out, state.prod_out
    if b is None or p is None or b.y_true is None or p.y_true is None or state.overall_eval is None:
        return found, []
    metric = state.overall_eval.metric
    tried = sorted((lim for lim in found if lim.kind in SLICE_KINDS and lim.key in masks and lim.key in bench_masks),
                   key=lambda lim: -lim.score)[:MAX_TRIED]
    n_family = max(1, int(state.n_tests)) + len(tried)
    overall = next((lim for lim in found if lim.kind == "concept_shift" and lim.slice is None), None)
    label = next((lim for lim in found if lim.kind == "label_shift"), None)
    for lim in tried:
        mb, mp = bench_masks[lim.key], masks[lim.key]
        change = _change(state, mb, mp, str(lim.slice))
        dropped, p_adj = _dropped(change, metric, n_family, state.ctx.alpha)
        if not dropped:
            continue
        rest, _ = _dropped(_change(state, ~mb, ~mp, "without " + str(lim.slice)), metric, n_family, state.ctx.alpha)
        if rest:
            continue  # a drop remains outside the slice: the change is not located there
        head = _as_concept(lim, change, p_adj, n_family, float(mp.mean()), metric)
        # the within-context test may have claimed the same slice's concept shift already: one key, one claim
        head = next((x for x in found if x.key == head.key and x is not lim), head)
        relations = [] if head.key == lim.key else [Relation(lim.key, head.key, "same_rows")]
        if overall is not None:
            relations.append(Relation(overall.key, head.key, "located",
                                      note=f"without its rows the overall {metric_label(metric)} does not drop"))
        if label is not None:
            test = observed_label_shift(b.y_true[~mb], p.y_true[~mp], state.ctx.classes, alpha=state.ctx.alpha)
            if test.status == "ok" and not test.drifted:
                relations.append(Relation(label.key, head.key, "explains",
                                          note=f"without its rows the class mix does not change "
                                               f"(p = {fmt_num(test.p_value, 3)})"))
        for other in found:  # discovered slices inside it or around it: restatements of the same change
            if other is lim or other.kind not in ("underperforming_slice", "concept_shift") or other.key not in masks:
                continue
            mo = masks[other.key]
            if other.key == head.key:
                continue
            if (mo & ~mp).any():  # it contains or overlaps the slice: is its drop the slice's spill-over?
                contains = not (mp & ~mo).any()
                if not contains and other.claim != "change":
                    continue  # overlapping, and weak without a decided drop (standing): a fact of its own
                if other.key not in bench_masks:
                    if not contains:
                        continue  # overlapping, and nothing to test outside the slice: a finding of its own
                elif not _spill_over(state, bench_masks[other.key] & ~mb, mo & ~mp, str(lim.slice), metric, n_family,
                                     contains=contains):
                    continue
            relations.append(Relation(other.key, head.key, "located", note=f"{int(mo.sum()):,} rows"))
        if any(x is head for x in found):
            return found, relations
        replaced = [head if x is lim else x for x in found]
        if head.key != lim.key:
            replaced.append(lim)
        return replaced, relations
    return found, []


def _spill_over(state: Any, keep_b: np.ndarray, keep_p: np.ndarray, name: str, metric: str, n_family: int, *,
                contains: bool) -> bool:
    """Does a slice's drop vanish outside the located slice? A slice that contains the located one folds
    unless a drop remains outside it; one that only overlaps it (and is itself a decided drop) folds only
    when its rows outside were enough to measure the metric on both sides and show no drop (untestable,
    it stays a finding)."""
    if min(int(keep_b.sum()), int(keep_p.sum())) < state.ctx.min_slice_size and not contains:
        return False
    outside = _change(state, keep_b, keep_p, "outside " + name)
    if not contains and (outside is None or outside.test.status != "ok"):
        return False
    return not _dropped(outside, metric, n_family, state.ctx.alpha)[0]


def _as_concept(lim: Limitation, change: Any, p_adj: float, n_family: int, share: float, metric: str) -> Limitation:
    """The slice's limitation restated as the concept shift located in it."""
    if lim.kind == "concept_shift":
        return lim

    drop = abs(float(change.test.effect_size))
    d_lo, d_hi = change.difference_ci  # production − benchmark
    lo, hi = (d_lo, d_hi) if lower_is_better(metric) else (-d_hi, -d_lo)
    name = lim.slice or lim.definition
    statement = (f"Within {name}, {metric_label(metric)} fell from {fmt_num(change.benchmark_value)} on the benchmark "
                 f"to {fmt_num(change.production_value)} in production: a drop of {fmt_metric(drop, (lo, hi))} "
                 f"({change.test.method}, {fmt_p(p_adj, 'p')} Bonferroni-adjusted over {n_family:,} tests, "
                 f"{fmt_n(change.test.n_reference + change.test.n_current)}); this context is {fmt_share(share)} of "
                 "production. Without its rows no significant drop remains: what the model gets right changed here "
                 "(concept shift).")
    evidence = {**lim.evidence, "metric": metric, "drop": drop, "drop_ci": [lo, hi], "p_value_adjusted": p_adj,
                "benchmark_value": change.benchmark_value, "production_value": change.production_value,
                "production_share": share, "gap_measured": True, "located": True,
                "severity_basis": f"production share {share:.3f} × measured drop {drop:.3f}"}
    score = round(share * drop, 6)
    fields = {"kind": "concept_shift", "key": finding_key("concept_shift", lim.definition, lim.slice),
              "title": f"{metric_label(metric)} dropped on {name} in production", "statement": statement,
              "evidence": evidence, "score": score, "severity": severity_label(score)}
    names = {f.name for f in dataclasses.fields(lim)}
    if "claim" in names:
        fields["claim"] = "change"
    if "decision" in names:  # what made it a claim: the slice's own benchmark → production test

        fields["decision"] = make_decision(
            f"{metric} difference (benchmark − production) on the slice", drop, test=change.test.method,
            p_value_adjusted=p_adj, interval=[lo, hi], n=change.test.n_reference + change.test.n_current,
            rule=f"Bonferroni-adjusted p (over {n_family:,} tests) < α and drop ≥ the floor "
                 f"{fmt_num(change.test.effect_floor)}, with no significant drop outside the slice")
    return dataclasses.replace(lim, **fields)
