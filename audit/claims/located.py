"""A change located in a slice keeps its kind: what the model gets right changed there (concept shift).

Labels that changed inside one slice of production show up as a weak slice, as an overall drop, or as
a class-mix change. Two searches restate them as the ``concept_shift`` of that slice:

* **a weak slice whose metric fell** — the slice's production metric is below its own benchmark value,
  tested with :func:`detectors.metric_change.metric_change_test` on the primary metric (on accuracy where
  the primary one cannot move — the model gives every row of the slice one class — or cannot be measured
  there), its p-value Bonferroni-adjusted to the size of the audit's correction family plus the slices
  tried, beyond the practical floor;
* **a whole-population change that lives in one slice** — an observed class-mix change (or an overall
  metric drop), already a claim of the audit, that is significant inside a slice holding at most two
  thirds of production (Bonferroni over the slices tried: a hierarchical test, asked only of a claim
  that passed the audit's correction; beyond the floor) and absent outside it. Under a change of the
  class mix alone (``P(x | y)`` fixed) the classes would
  move inside and outside every slice alike; a change confined to some rows is a change of the labels
  given the inputs there. The tightest such slice is named.

Whether that change is the cause of the audit's other findings (the overall drop, the class mix,
overlapping slices) is decided by the one explaining-away rule (:mod:`audit.claims.explain`), like
every other claim.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audit.claims.data import ClaimData
from detectors.base import DetectorInputError
from detectors.metric_change import MetricChange, metric_change_test
from detectors.reweighted import mix_retest
from domains import evaluate
from reports.formatting import fmt_metric, fmt_n, fmt_num, fmt_p, fmt_share, lower_is_better, metric_label
from reports.records import finding_key, make_decision, severity_label
from reports.result import AuditEvidence, LimitationRecord

__all__ = ["located_changes", "located_whole", "slice_change", "measured_metric"]

SLICE_KINDS = ("underperforming_slice", "concept_shift")
MAX_TRIED = 8


# metrics that cannot move where the model gives every row the same class: the recall of each class is
# then fixed at 0 or 1 whatever the labels, so a change of what the model gets right is invisible to them
ONE_CLASS_SHARE = 0.98
BLIND_TO_ONE_OUTPUT = frozenset({"balanced_accuracy", "sensitivity", "specificity", "recall"})


def measured_metric(metric: str, pred_b: np.ndarray, pred_p: np.ndarray) -> str:
    """The metric a slice's change is measured with: the primary one, or accuracy where the primary one
    cannot move because the model gives one class to every row of the slice on both sides.

    >>> import numpy as np
    >>> measured_metric("balanced_accuracy", np.array(["a", "a"]), np.array(["a"]))
    'accuracy'
    >>> measured_metric("balanced_accuracy", np.array(["a", "b"]), np.array(["a"]))
    'balanced_accuracy'
    """
    if metric not in BLIND_TO_ONE_OUTPUT or pred_b.size == 0 or pred_p.size == 0:
        return metric
    # (nearly) one class: the other classes' predictions are at most 2 % of the rows, so each class's
    # recall can move by no more than that share whatever the labels do
    _, counts = np.unique(np.concatenate([pred_b.astype(str), pred_p.astype(str)]), return_counts=True)
    return "accuracy" if counts.max() >= ONE_CLASS_SHARE * counts.sum() else metric


def slice_change(data: ClaimData, keep_b: np.ndarray, keep_p: np.ndarray, name: str,
                 metric: str | None = None) -> MetricChange | None:
    """The benchmark → production test of ``metric`` on some rows of each side; by default the primary
    metric, or accuracy where the primary one is blind or cannot be measured there (:func:`measured_metric`)."""
    yb, pb, yp, pp = data.y_true_b, data.y_pred_b, data.y_true_p, data.y_pred_p
    if yb is None or pb is None or yp is None or pp is None:
        return None  # a metric change needs labels and outputs on both sides
    scores_b = None if data.proba_b is None or data.proba_b.shape[1] != 2 else data.proba_b[keep_b, 1]
    scores_p = None if data.proba_p is None or data.proba_p.shape[1] != 2 else data.proba_p[keep_p, 1]
    chosen = measured_metric(data.metric, pb[keep_b], pp[keep_p]) if metric is None else metric

    def test(measured: str) -> MetricChange | None:
        try:
            return metric_change_test(measured, yb[keep_b], pb[keep_b], yp[keep_p], pp[keep_p], scores_b=scores_b,
                                      scores_p=scores_p, positive=data.positive, alpha=data.alpha,
                                      effect_floor=data.floor("performance_drop", 0.05),
                                      min_samples=min(30, data.min_slice_size), random_state=data.seed, name=name)
        except DetectorInputError:
            return None

    change = test(chosen)
    if metric is None and chosen != "accuracy" and (change is None or change.test.status != "ok"):
        # the primary metric has too few rows of a class here to be measured: accuracy still is
        return test("accuracy")
    return change


def _dropped(change: MetricChange | None, n_family: int, alpha: float) -> tuple[bool, float]:
    """Did the metric drop (beyond the floor, Bonferroni-adjusted p below alpha)? And the adjusted p."""
    if change is None or change.test.status != "ok":
        return False, float("nan")
    diff = change.test.effect_size  # production − benchmark
    worse = diff > 0 if lower_is_better(change.metric) else diff < 0
    p_adj = min(1.0, float(change.test.p_value) * n_family)
    return bool(worse and abs(diff) >= change.test.effect_floor and p_adj < alpha), p_adj


@dataclass(frozen=True)
class _Drop:
    change: MetricChange
    p_adj: float
    why: str


def _drop_of(data: ClaimData, name: str, mb: np.ndarray, mp: np.ndarray, n_family: int) -> _Drop | None:
    """The drop of a slice's metric (the primary one, or accuracy where the primary one is blind or cannot
    be measured there: :func:`slice_change`), Bonferroni over ``n_family``, or None when it did not drop.

    Accuracy is not asked beside a primary metric that can move: it also moves when the mix of rows
    inside a slice changes (more of a weak part of it), which is that mix's fact, not a concept shift."""
    if data.y_pred_b is None or data.y_pred_p is None:
        return None
    change = slice_change(data, mb, mp, name)
    dropped, p_adj = _dropped(change, n_family, data.alpha)
    if not dropped or change is None:
        return None
    why = ""
    if change.metric != data.metric:
        if measured_metric(data.metric, data.y_pred_b[mb], data.y_pred_p[mp]) != data.metric:
            why = (f"{metric_label(data.metric)} cannot move here: the model gives (nearly) every row of this context "
                   "the same class")
        else:
            why = f"{metric_label(data.metric)} cannot be measured here: one class has too few rows in this context"
    return _Drop(change, p_adj, why)


def located_changes(found: list[LimitationRecord], masks: dict[str, np.ndarray], bench_masks: dict[str, np.ndarray],
                    data: ClaimData) -> list[LimitationRecord]:
    """``found`` with every weak slice whose metric dropped restated as the concept shift in it; when the
    within-context test already claimed the same slice's concept shift, that one claim is kept."""
    if not data.labelled or data.y_pred_b is None or data.y_pred_p is None:
        return found
    tried = sorted((lim for lim in found if lim.kind == "underperforming_slice" and lim.key in masks
                    and lim.key in bench_masks), key=lambda lim: -lim.score)[:MAX_TRIED]
    n_family = max(1, int(data.n_tests)) + len(tried)
    keys = {lim.key for lim in found}
    out = list(found)
    for lim in tried:
        mb, mp = bench_masks[lim.key], masks[lim.key]
        drop = _drop_of(data, str(lim.slice), mb, mp, n_family)
        if drop is None:
            continue
        head = _as_concept(lim, drop.change, drop.p_adj, n_family, float(mp.mean()), drop.why)
        if head.key in keys:
            continue  # the within-context test claimed it: one key, one claim (the slice folds into it by rows)
        out[out.index(lim)] = head
        keys.add(head.key)
        masks[head.key], bench_masks[head.key] = mp, mb
    return out


def _as_concept(lim: LimitationRecord, change: MetricChange, p_adj: float, n_family: int, share: float,
                why: str) -> LimitationRecord:
    """The slice's limitation restated as the concept shift located in it (``why``: why its change is
    measured with another metric than the audit's primary one, "" when it is not)."""
    metric = change.metric
    drop = abs(float(change.test.effect_size))
    d_lo, d_hi = change.difference_ci  # production − benchmark
    lo, hi = (d_lo, d_hi) if lower_is_better(metric) else (-d_hi, -d_lo)
    name = lim.slice or lim.definition
    note = f" ({why})" if why else ""
    statement = (f"Within {name}, {metric_label(metric)} fell from {fmt_num(change.benchmark_value)} on the benchmark "
                 f"to {fmt_num(change.production_value)} in production{note}: a drop of {fmt_metric(drop, (lo, hi))} "
                 f"({change.test.method}, {fmt_p(p_adj, 'p')} Bonferroni-adjusted over {n_family:,} tests, "
                 f"{fmt_n(change.test.n_reference + change.test.n_current)}); this context is {fmt_share(share)} of "
                 "production: what the model gets right changed here (concept shift).")
    evidence = {**lim.evidence, "metric": metric, "drop": drop, "drop_ci": [lo, hi], "p_value_adjusted": p_adj,
                "benchmark_value": change.benchmark_value, "production_value": change.production_value,
                "production_share": share, "gap_measured": True, "located": True,
                "severity_basis": f"production share {share:.3f} × measured drop {drop:.3f}"}
    score = round(share * drop, 6)
    decision = make_decision(
        f"{metric} difference (benchmark − production) on the slice", drop, test=change.test.method,
        p_value_adjusted=p_adj, interval=[lo, hi], n=change.test.n_reference + change.test.n_current,
        rule=f"Bonferroni-adjusted p (over {n_family:,} tests) < α and drop ≥ the floor "
             f"{fmt_num(change.test.effect_floor)}")
    return lim.replaced(kind="concept_shift", key=finding_key("concept_shift", lim.definition, lim.slice),
                        title=f"{metric_label(metric)} dropped on {name} in production", statement=statement,
                        evidence=evidence, score=score, severity=severity_label(score), claim="change",
                        decision=decision)


LABEL_FLOOR = 0.05  # total variation of a class mix (the observed label test's floor)
MAX_SLICES = 16  # slices tried as the location of a whole-population change
MAX_LOCATED_SHARE = 2 / 3  # the rows outside, where "no change" is asked, are at least half as many as inside


def _slices(evidence: AuditEvidence, data: ClaimData) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """(name, definition, benchmark rows, production rows) of the audit's expert and discovered slices
    with at least ``min_slice_size`` rows on each side, smallest first."""
    out, seen = [], set()
    for s in evidence.slices:
        if not s.definition or s.source not in ("expert", "discovered") or s.definition in seen:
            continue
        seen.add(s.definition)
        try:
            mb = evaluate(s.definition, data.benchmark).to_numpy()
            mp = evaluate(s.definition, data.production).to_numpy()
        except (ValueError, KeyError):
            continue
        # "the change is absent outside" must rest on enough rows to have been seen there
        if min(int(mb.sum()), int(mp.sum())) >= data.min_slice_size and mp.mean() <= MAX_LOCATED_SHARE:
            out.append((s.title or s.name, s.definition, mb, mp))
    return sorted(out, key=lambda x: int(x[3].sum()))[:MAX_SLICES]


def _absent(test, alpha: float) -> bool:
    """No change outside a slice: not significant, or smaller than half the practical floor (a location
    is only named when the rest shows nothing, not merely nothing above the floor)."""
    if test.status != "ok" or not np.isfinite(test.p_value):
        return False
    return bool(test.p_value >= alpha or abs(test.effect_size) < 0.5 * test.effect_floor)


def _label_mix(data: ClaimData, mb: np.ndarray, mp: np.ndarray):
    if data.y_true_b is None or data.y_true_p is None:
        raise ValueError("the class mix inside a slice needs labels on both sides")
    return mix_retest(mb.astype(float), data.y_true_b, data.y_true_p[mp], floor=LABEL_FLOOR,
                      effect="total_variation")


def located_whole(found: list[LimitationRecord], evidence: AuditEvidence, masks: dict[str, np.ndarray],
                  bench_masks: dict[str, np.ndarray], data: ClaimData) -> list[LimitationRecord]:
    """``found`` with a concept shift added where an observed class-mix change, or an overall drop, lives
    in one slice: significant inside it, absent outside it (the tightest such slice)."""
    if not data.labelled or data.y_pred_b is None or data.y_pred_p is None:
        return found
    label = next((lim for lim in found if lim.kind == "label_shift" and lim.claim == "change"
                  and lim.evidence.get("source") == "observed_labels"), None)
    drop = next((lim for lim in found if lim.kind == "concept_shift" and lim.claim == "change"
                 and lim.slice is None and not lim.definition), None)
    if label is None and drop is None:
        return found
    slices = _slices(evidence, data)
    # hierarchical: the whole-population claim passed the audit's correction; where it lies is asked of
    # the slices tried, Bonferroni over them (one question per whole-population claim and slice)
    n_family = max(1, len(slices) * ((label is not None) + (drop is not None)))
    keys = {lim.key for lim in found}
    for name, definition, mb, mp in slices:
        key = finding_key("concept_shift", definition, name)
        if key in keys:
            continue
        head = None
        if label is not None:
            inside, outside = _label_mix(data, mb, mp), _label_mix(data, ~mb, ~mp)
            if inside.changed(alpha=data.alpha, multiplier=n_family) and _absent(outside, data.alpha):
                head = _labels_changed(name, definition, inside, outside, n_family, data, mb, mp)
        if head is None and drop is not None:
            head = _drop_inside(data, name, definition, mb, mp, n_family)
        if head is not None:
            masks[head.key], bench_masks[head.key] = mp, mb
            return [*found, head]
    return found


def _drop_inside(data: ClaimData, name: str, definition: str, mb: np.ndarray, mp: np.ndarray,
                 n_family: int) -> LimitationRecord | None:
    """The concept shift of a slice where the overall drop lives: the slice's metric dropped, the rest's
    did not."""
    rest = slice_change(data, ~mb, ~mp, "outside " + name)
    if rest is None or not _absent(rest.test, data.alpha):
        return None
    drop = _drop_of(data, name, mb, mp, n_family)
    if drop is None:
        return None
    base = LimitationRecord(rank=0, kind="underperforming_slice", slice=name, title=name, statement="", score=0.0,
                      severity="low", definition=definition, key="")  # its key is the concept shift's
    return _as_concept(base, drop.change, drop.p_adj, n_family, float(mp.mean()), drop.why)


def _labels_changed(name: str, definition: str, inside, outside, n_family: int, data: ClaimData,
                    mb: np.ndarray, mp: np.ndarray) -> LimitationRecord:
    """The concept shift of a slice whose class mix changed while the rest held."""
    share = float(mp.mean())
    change = slice_change(data, mb, mp, name)
    drop = 0.0
    measured = ""
    if change is not None and change.test.status == "ok":
        diff = float(change.test.effect_size)
        drop = max(0.0, diff if lower_is_better(change.metric) else -diff)
        measured = (f" There, {metric_label(change.metric)} went from {fmt_num(change.benchmark_value)} on the "
                    f"benchmark to {fmt_num(change.production_value)} in production.")
    p_adj = min(1.0, inside.p_value * n_family)
    statement = (f"Within {name}, the class mix changed (total variation {fmt_num(inside.effect_size)}, "
                 f"{fmt_p(p_adj, 'p')} Bonferroni-adjusted over {n_family:,} tests, {fmt_n(int(mp.sum()))} in "
                 f"production) while outside it it held (total variation {fmt_num(outside.effect_size)}, "
                 f"{fmt_p(outside.p_value, 'p')}): a change of the class mix alone would move the classes everywhere, "
                 f"so the labels changed given the inputs here (concept shift); this context is {fmt_share(share)} of "
                 f"production.{measured}")
    score = round(share * drop, 6)
    evidence = {"definition": definition, "production_share": share, "located": True, "located_by": "class_mix",
                "total_variation": inside.effect_size, "total_variation_outside": outside.effect_size,
                "p_value_adjusted": p_adj, "metric": change.metric if change is not None else data.metric, "drop": drop,
                "gap_measured": True,
                "severity_basis": f"production share {share:.3f} × measured drop {drop:.3f}"}
    decision = make_decision("class-mix change inside the slice (total variation)", inside.effect_size,
                             test="weighted_wald_chi2", p_value_adjusted=p_adj, n=int(mb.sum() + mp.sum()),
                             rule=f"Bonferroni-adjusted p (over {n_family:,} tests) < α and total variation ≥ "
                                  f"{fmt_num(LABEL_FLOOR)} inside; no change outside")
    return LimitationRecord(rank=0, kind="concept_shift", slice=name,
                      title=f"the labels changed given the inputs on {name}", statement=statement, score=score,
                      severity=severity_label(score), evidence=evidence,
                      key=finding_key("concept_shift", definition, name), definition=definition, claim="change",
                      decision=decision)
