"""One limitation per fact: which findings restate which.

``reports`` states the findings one by one; this module looks at the production rows behind
them and decides which ones are the same fact:

* **same rows** — an untested context, the slice with the same definition and the mix shift of
  that slice select the same production rows: one limitation, the most telling kind first
  (untested context, weak slice, concept shift, mix shift);
* **nested** — a finding whose rows lie inside another's is folded into it unless it is
  significantly worse than its parent (its CI lies entirely below the parent's value);
* **explains** — a covariate shift that disappears when the rows of one untested or mix-shifted
  context are left out is that context's shift, seen through the features. The re-test uses the
  same detectors on the remaining rows; it only decides the grouping, never claims a shift;
* **class mix** — a covariate shift that disappears against the benchmark resampled to the
  production class mix is the label shift seen through the inputs
  (:mod:`service.audits.pipeline.class_mix`), and so is an overall metric drop when no per-class metric changed;
* **located** — a concept shift located in one slice is one ``concept_shift`` limitation with that
  slice's definition, absorbing the overall drop, the class-mix change and the slices it explains
  (:mod:`service.audits.pipeline.located`).

The folding itself is :func:`reports.grouping.fold`.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import numpy as np
import pandas as pd

from detectors.bbsd import OutputShiftDetector
from detectors.concept import observed_label_shift
from detectors.covariate import CovariateShiftDetector
from domains import evaluate
from reports import rank_limitations
from reports.formatting import fmt_num, lower_is_better
from reports.grouping import Relation, fold
from reports.records import Limitation
from reports.result import AuditEvidence
from service.audits.pipeline.class_mix import class_mix_relations, mix_relations
from service.audits.pipeline.columns import output_columns
from service.audits.pipeline.covariate_mix import columns_of, covariate_mix_relations
from service.audits.pipeline.located import located_concept_shifts
from service.audits.pipeline.reweighted_mix import limitation_mix_explained

MIN_SCORE = 5e-5  # a limitation whose expected loss rounds to 0.000 points of the metric is not a limitation
# most telling first: a change located in a slice (concept shift) says more than the slice being weak
ROW_KINDS = ("untested_context", "concept_shift", "underperforming_slice", "context_mix_shift")
PARENT_KINDS = ("untested_context", "context_mix_shift")  # row groups whose share moved: they can explain inputs
WHOLE_POPULATION = 0.9  # an untested context holding this share of production is production's population


def one_limitation_per_fact(evidence: AuditEvidence, state: Any, production: pd.DataFrame) -> list[Limitation]:
    """The audit's limitations, ranked, with every restatement folded into the fact it restates."""
    ctx = state.ctx
    found = [lim for lim in rank_limitations(evidence, saturation_threshold=ctx.options.get("saturation_threshold"),
                                             alpha=ctx.alpha) if lim.score >= MIN_SCORE or lim.claim == "change"]
    found = _one_per_key(found)
    masks = {lim.key: m for lim in found if (m := _mask(lim, production)) is not None}
    bench_masks = {lim.key: m for lim in found if lim.key in masks and (m := _mask(lim, ctx.benchmark)) is not None}
    found, located = located_concept_shifts(found, masks, bench_masks, state)
    for rel in located:  # the restated slice's rows are the located change's rows
        if rel.parent not in masks and rel.child in masks:
            masks[rel.parent], bench_masks[rel.parent] = masks[rel.child], bench_masks[rel.child]
    heads = {rel.parent for rel in located}
    relations = [r for r in _row_relations(found, masks) if r.child not in heads]
    relations += _explained_inputs(found, masks, bench_masks, state)
    relations += _explained_labels(found, masks, bench_masks, state)
    relations += _explained_mixes(found, masks, bench_masks, relations, state)
    relations += _column_mix_relations(found, relations)
    relations += class_mix_relations(found, relations, state)
    relations += mix_relations(found, masks, bench_masks, relations, state)
    relations += covariate_mix_relations(found, masks, bench_masks, relations, state)
    moved = {rel.child for rel in located}  # a located change absorbs its spill-overs, whatever else held them
    relations = [r for r in relations if r.child not in moved] + located
    return fold(found, relations + _whole_population(found, masks, relations))


def _whole_population(found: list[Limitation], masks: dict[str, np.ndarray], relations: list) -> list[Relation]:
    """When (nearly) all of production is a population the benchmark lacks, no benchmark → production
    test can tell another change of production apart from that population: all of production in a
    new context read as four claims (the context, and the covariate, label and concept shifts it
    brings). Every other change claim folds into the untested context, with its statement kept."""
    taken = {r.child for r in relations}
    roots = [lim for lim in found if lim.kind == "untested_context" and lim.claim == "change" and lim.key in masks
             and lim.key not in taken and float(masks[lim.key].mean()) >= WHOLE_POPULATION]
    if not roots:
        return []
    root = max(roots, key=lambda lim: float(masks[lim.key].mean()))
    share = float(masks[root.key].mean())
    return [Relation(lim.key, root.key, "explains", note=(
        f"{share:.0%} of production is in this context, which the benchmark lacks: no change of production can be "
        "told apart from it")) for lim in found
        if lim is not root and lim.claim == "change" and lim.key not in taken]


def _one_per_key(found: list[Limitation]) -> list[Limitation]:
    """Findings with the same key are the same fact (e.g. an untested value and an expert slice with the
    same definition): the first, highest ranked, keeps the others as related evidence."""
    first: dict[str, int] = {}
    out: list[Limitation] = []
    for lim in found:
        if lim.key not in first:
            first[lim.key] = len(out)
            out.append(lim)
            continue
        head = out[first[lim.key]]
        extra = {"key": lim.key, "kind": lim.kind, "slice": lim.slice, "title": lim.title, "statement": lim.statement,
                 "score": lim.score, "reason": "same_rows", "note": "the same definition"}
        out[first[lim.key]] = dataclasses.replace(head, related=head.related + (extra,) + tuple(lim.related))
    return out


def _mask(lim: Limitation, frame: pd.DataFrame) -> np.ndarray | None:
    if lim.kind not in ROW_KINDS or not lim.definition:
        return None
    try:
        mask = evaluate(lim.definition, frame).to_numpy()
    except (ValueError, KeyError):
        return None
    return mask if mask.any() else None


def _order(lim: Limitation) -> tuple:
    return ROW_KINDS.index(lim.kind), -lim.score


def _row_relations(found: list[Limitation], masks: dict[str, np.ndarray]) -> list[Relation]:
    """Each finding folds into the tightest other finding whose rows contain its own: on equal rows the
    less telling kind folds into the more telling one; on strictly nested rows the inner one folds unless
    it is significantly worse than the outer one."""
    candidates = [lim for lim in found if lim.key in masks]
    relations = []
    for child in candidates:
        if child.evidence.get("large_population"):
            continue  # a large untested population is always a limitation of its own
        mc = masks[child.key]
        parents = []
        for parent in candidates:
            if parent is child:
                continue
            mp = masks[parent.key]
            if (mc & ~mp).any():
                continue
            if child.kind == "untested_context" and parent.kind == "context_mix_shift":
                continue  # a new population says more than the mix it moves (that mix folds into it instead)
            same = int(mp.sum()) == int(mc.sum())
            if same and _order(parent) > _order(child):
                continue  # equal rows: only the more telling finding is a parent
            if not same and _significantly_worse(child, parent):
                continue
            parents.append((int(mp.sum()), _order(parent), parent, same))
        if parents:
            _, _, parent, same = min(parents, key=lambda p: p[:2])
            relations.append(Relation(child.key, parent.key, "same_rows" if same else "nested",
                                      note="" if same else f"{int(mc.sum()):,} of its {int(masks[parent.key].sum()):,} rows"))
    return relations


def _significantly_worse(child: Limitation, parent: Limitation) -> bool:
    """Is the child's measured metric credibly worse than the parent's (its CI excludes the parent's value)?"""
    # evidence values come from the typed result: finite numbers or None
    value, ci = parent.evidence.get("value"), child.evidence.get("ci")
    if child.kind in ("underperforming_slice", "concept_shift") and (value is None or not ci):
        return True  # a measured harm inside an unmeasured parent stays visible
    lo, hi = ci if ci and len(ci) == 2 else (None, None)
    if value is None or lo is None or hi is None:
        return False
    return lo > value if lower_is_better(child.evidence.get("metric") or "") else hi < value


def _explained_inputs(found: list[Limitation], masks: dict[str, np.ndarray], bench_masks: dict[str, np.ndarray],
                      state: Any) -> list[Relation]:
    covariate = next((lim for lim in found if lim.kind == "covariate_shift"), None)
    if covariate is None:
        return []
    features = [f["name"] for f in covariate.evidence.get("features") or []]
    outputs = [o["name"] for o in covariate.evidence.get("outputs") or []]
    if not features and not outputs:
        return []  # only the joint (classifier) test fired: nothing cheap to re-test
    parents = sorted((lim for lim in found if lim.kind in PARENT_KINDS and lim.key in masks),
                     key=lambda lim: -int(masks[lim.key].sum()))
    for parent in parents[:5]:
        keep_p = ~masks[parent.key]
        keep_b = ~bench_masks.get(parent.key, np.zeros(len(state.ctx.benchmark), bool))
        remaining = _still_drifted(state, features, outputs, keep_b, keep_p)
        if remaining is not None and not remaining:
            return [Relation(covariate.key, parent.key, "explains",
                             note=f"without these rows none of {', '.join(features + outputs)} is shifted")]
    return []


def _explained_labels(found: list[Limitation], masks: dict[str, np.ndarray], bench_masks: dict[str, np.ndarray],
                      state: Any) -> list[Relation]:
    """An observed class-mix change that disappears without one new or mix-shifted population is that
    population's (e.g. older occupants die more often): fold it there instead of a second limitation."""
    label = next((lim for lim in found if lim.kind == "label_shift"
                  and lim.evidence.get("source") == "observed_labels"), None)
    bench, prod = state.bench_out, state.prod_out
    if label is None or bench is None or prod is None or bench.y_true is None or prod.y_true is None:
        return []
    parents = sorted((lim for lim in found if lim.kind in PARENT_KINDS and lim.key in masks),
                     key=lambda lim: -int(masks[lim.key].sum()))
    for parent in parents[:5]:
        keep_p = ~masks[parent.key]
        keep_b = ~bench_masks.get(parent.key, np.zeros(len(bench.y_true), bool))
        test = observed_label_shift(bench.y_true[keep_b], prod.y_true[keep_p], state.ctx.classes,
                                    alpha=state.ctx.alpha)
        if test.status == "ok" and not test.drifted:
            return [Relation(label.key, parent.key, "explains",
                             note=f"without these rows the class mix does not change (p = {fmt_num(test.p_value, 3)})")]
    return []


def _column_mix_relations(found: list[Limitation], relations: list[Relation]) -> list[Relation]:
    """One context column's mix change is one fact. A share change of a slice cut from that column alone
    (``vehicle_year < 1990``) folds into an untested range of the column that already states the column's
    mix; otherwise the column-level mix claim folds into the column's most severe slice-share claim,
    which says which part of the column moved (heavy compression, 3 % → 15 %)."""
    taken = {r.child for r in relations}
    untested: dict[str, Limitation] = {}
    columns: dict[str, Limitation] = {}
    shares: dict[str, list[Limitation]] = {}
    for lim in found:
        if lim.key in taken or lim.claim != "change":
            continue
        if lim.kind == "untested_context":
            for column in lim.evidence.get("context_tests") or ():
                if column and columns_of(lim.definition) == {column}:
                    untested.setdefault(str(column), lim)
        elif lim.kind == "context_mix_shift" and lim.evidence.get("kind") == "context" and lim.evidence.get("name"):
            columns.setdefault(str(lim.evidence["name"]), lim)
        elif lim.kind == "context_mix_shift" and lim.evidence.get("kind") == "slice_share":
            cols = columns_of(lim.definition)
            if len(cols) == 1:
                shares.setdefault(next(iter(cols)), []).append(lim)
    out = []
    for column, group in shares.items():
        if column in untested:
            out += [Relation(lim.key, untested[column].key, "column_mix", note=f"a part of {column}")
                    for lim in group if lim.key != untested[column].key]
        elif column in columns:
            head = max(group, key=lambda lim: lim.score)
            out.append(Relation(columns[column].key, head.key, "column_mix", note=f"the part of {column} that moved"))
    return out


def _explained_mixes(found: list[Limitation], masks: dict[str, np.ndarray], bench_masks: dict[str, np.ndarray],
                     relations: list[Relation], state: Any) -> list[Relation]:
    """A context-mix change that disappears without the rows of a population the benchmark lacks is that
    population seen through another context (a new clarity grade of larger stones moves the carat mix)."""
    ctx, taken = state.ctx, {r.child for r in relations}
    parents = sorted((lim for lim in found if lim.kind == "untested_context" and lim.claim == "change"
                      and lim.key in masks and lim.key not in taken), key=lambda lim: -int(masks[lim.key].sum()))[:5]
    out = []
    for lim in found:
        if lim.kind != "context_mix_shift" or lim.claim != "change" or lim.key in taken:
            continue
        for parent in parents:
            keep_p = ~masks[parent.key]
            keep_b = ~bench_masks.get(parent.key, np.zeros(len(ctx.benchmark), bool))
            if min(int(keep_b.sum()), int(keep_p.sum())) < ctx.min_slice_size:
                continue
            if limitation_mix_explained(lim, keep_b.astype(float), masks, bench_masks, ctx, keep_p=keep_p):
                out.append(Relation(lim.key, parent.key, "explains",
                                    note="without these rows the mix does not change"))
                break
    return out


def _still_drifted(state: Any, features: list[str], outputs: list[str], keep_b: np.ndarray,
                   keep_p: np.ndarray) -> list[str] | None:
    """Names still flagged when the benchmark and production keep only ``keep_b`` / ``keep_p`` rows."""
    ctx = state.ctx
    if min(int(np.count_nonzero(keep_b)), int(np.count_nonzero(keep_p))) < ctx.min_slice_size:
        return None
    # fits on benchmark rows: cached by which rows (the same finding recurs run after run in a monitor)
    rows = hashlib.sha256(np.packbits(np.asarray(keep_b, bool))).hexdigest()
    drifted: list[str] = []
    if features:
        res = ctx.fitted("covariate_on_rows", lambda: CovariateShiftDetector(
            alpha=ctx.alpha, correction=ctx.correction, random_state=ctx.seed).fit(ctx.benchmark.loc[keep_b, features]),
            columns=features, rows=rows).test(ctx.production.loc[keep_p, features])  # only the tested columns copied
        drifted += [t.name for t in res.features if t.drifted]
    used = output_columns(ctx, outputs)
    if outputs and used:
        res = ctx.fitted("outputs_on_rows", lambda: OutputShiftDetector(
            alpha=ctx.alpha, correction=ctx.correction, classes=ctx.classes, random_state=ctx.seed).fit(
            ctx.benchmark.loc[keep_b, used]), columns=used, rows=rows).test(ctx.production.loc[keep_p, used])
        drifted += [t.name for t in res.tests if t.drifted]
    return drifted


def describe(lim: Limitation) -> str:
    """One line per limitation, for logs and debugging."""
    return f"{lim.rank}. [{lim.kind}] {lim.key} score={fmt_num(lim.score, 3)}"
