"""Each change claim as a candidate cause: what it says (re-tested under an adjustment) and how to undo it.

A :class:`Candidate` wraps one change limitation with

* ``retest(adjusted)``: the claim's own question asked again against the adjusted benchmark, as one
  or more :class:`detectors.reweighted.Retest` components (a covariate shift has one per flagged input
  or output; every other kind has one). The claim still stands when any component is still a change;
* ``cause``: the :class:`~audit.claims.adjustment.Cause` that undoes it (None when it explains
  nothing: a covariate shift seen only by the joint classifier test).

The question each kind re-asks, and how each is undone:

=====================  ===========================================  ==========================================
kind                   re-test                                      cause
=====================  ===========================================  ==========================================
untested_context       its production share (weighted benchmark)    its rows removed
context_mix_shift      the slice's share / the column's mix         the share / mix matched
covariate_shift        each flagged input's and output's test       density ratio of the flagged inputs
label_shift            the class mix (observed), else the           the class mix matched (observed or the
                       predicted-class mix (label-free)             reliable label-free estimate)
concept_shift (slice)  the slice's metric                           the slice's rows removed
concept_shift (all)    the overall metric                           the labels marked as changed given x
underperforming_slice  its metric drop, or its share if that moved  its rows removed / its share matched
=====================  ===========================================  ==========================================
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from audit.claims.adjustment import Adjusted, Cause, production_shares
from audit.claims.components import (
    drop_direction,
    label_component,
    metric_component,
    mix_component,
    numeric_component,
    share_component,
)
from audit.claims.data import ClaimData, Column
from audit.claims.identity import ROW_KINDS
from detectors.context import CONTEXT_EFFECT_FLOORS
from detectors.covariate import DEFAULT_EFFECT_FLOORS
from detectors.density_ratio import density_ratio_weights, domain_scores
from detectors.reweighted import Retest, mix_retest
from domains import columns_used, evaluate, parse
from reports.result import AuditEvidence, LimitationRecord

__all__ = ["Candidate", "candidates", "PRIORITY"]

# When two causes explain as much, the one more often the origin of the others goes first: a new
# population brings its own mix, a class-mix change moves every label-dependent input, a change located
# in rows moves the overall metric, a moved mix moves the inputs cut from it.
PRIORITY = ("untested_context", "label_shift", "concept_shift", "underperforming_slice", "context_mix_shift",
            "covariate_shift")
MAX_RATIO_FEATURES = 8  # the most shifted inputs a covariate shift's density ratio is fitted on
LABEL_FLOOR = 0.05  # total variation of the class mix (the observed label test's floor)
OUTPUTS = "<outputs>"  # the model's predicted class and scores, one variable for what a cause matches
JOINT_FLOOR = 0.1  # normed Wasserstein of the classifier's log-odds: the floor of a numeric input


@dataclass
class Candidate:
    """One change claim, with its re-test and its cause."""

    lim: LimitationRecord
    components: tuple[Callable[[Adjusted], Retest], ...]
    directions: tuple[int, ...]
    cause: Cause | None
    located: bool = False  # about some rows only (a slice, a population)
    compares: frozenset[str] = frozenset()  # the variables its re-tests compare

    @property
    def key(self) -> str:
        return self.lim.key

    @property
    def priority(self) -> int:
        kind = self.lim.kind
        if kind == "concept_shift" and not self.located:
            return len(PRIORITY)
        return PRIORITY.index(kind) if kind in PRIORITY else len(PRIORITY)

    def retest(self, adjusted: Adjusted) -> list[Retest]:
        return [component(adjusted) for component in self.components]


def _tests_by_name(evidence: AuditEvidence) -> dict[str, object]:
    covariate = evidence.covariate
    tests = list(covariate.features) + list(covariate.missing)
    if covariate.outputs is not None:
        tests += list(covariate.outputs.tests)
    return {t.name + "|" + (t.kind or ""): t for t in tests}


def _floor_of(effect_name: str | None, default: float) -> float:
    return float(CONTEXT_EFFECT_FLOORS.get(effect_name or "", DEFAULT_EFFECT_FLOORS.get(effect_name or "", default)))


def _covariate(lim: LimitationRecord, data: ClaimData, evidence: AuditEvidence) -> Candidate:
    tests = _tests_by_name(evidence)
    components, directions, ratio_columns = [], [], []
    for f in lim.evidence.get("features") or []:
        name, kind = f.get("name"), f.get("kind") or "feature"
        test = tests.get(f"{name}|{kind}")
        floor = getattr(test, "effect_floor", None) or _floor_of(f.get("effect_name"), 0.1)
        if kind == "missing_rate":
            if name in data.benchmark.columns and name in data.production.columns:
                mb, mp = data.benchmark[name].isna().to_numpy(), data.production[name].isna().to_numpy()
                components.append(share_component(mb, mp, floor))
                directions.append(0)
            continue
        numeric = f.get("effect_name") == "wasserstein_normed"
        column = data.column(str(name), numeric=numeric)
        if column is None:
            continue
        components.append(numeric_component(column, floor) if column.numeric else mix_component(column, floor))
        directions.append(0)
        ratio_columns.append(str(name))
    outputs = []
    for o in lim.evidence.get("outputs") or []:
        name = str(o.get("name"))
        numeric = name != "predicted_class"
        column = data.column(name, numeric=numeric)
        if column is None:
            continue
        test = tests.get(f"{name}|output")
        floor = getattr(test, "effect_floor", None) or _floor_of(o.get("effect_name"), 0.05)
        components.append(numeric_component(column, floor) if column.numeric else mix_component(column, floor))
        directions.append(0)
        outputs.append(name)
    cause = _covariate_cause(lim, data, ratio_columns[:MAX_RATIO_FEATURES] or outputs)
    if not components:  # only the joint (classifier) test saw it: re-tested along the classifier's direction
        joint = _joint(lim, data, evidence)
        if joint is not None:
            component, cause = joint
            components, directions = [component], [0]
    compares = frozenset(ratio_columns) | (frozenset({OUTPUTS}) if outputs else frozenset())
    return Candidate(lim, tuple(components), tuple(directions), cause, compares=compares)


def _joint(lim: LimitationRecord, data: ClaimData, evidence: AuditEvidence) -> tuple[Callable, Cause] | None:
    """A joint shift's re-test and cause: the log-odds of a benchmark-versus-production classifier on the
    audit's inputs, compared as one numeric column, and its density ratio."""
    names = [c for c in evidence.columns.features if c in data.benchmark.columns and c in data.production.columns]
    if not names:
        return None
    scores = domain_scores(data.benchmark[names].reset_index(drop=True), data.production[names].reset_index(drop=True),
                           random_state=data.seed)
    if scores is None:
        return None
    column = Column("<joint>", True, scores[0], scores[1])
    w = np.exp(np.clip(scores[0], -30, 30))
    w = np.minimum(w / w.mean(), 20.0)
    return numeric_component(column, JOINT_FLOOR), Cause(what=lim.title, ratio=w / w.mean(), matched=frozenset(names))


def _frame_of(data: ClaimData, names: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    bench, prod = {}, {}
    for name in names:
        if name in data.benchmark.columns and name in data.production.columns:
            bench[name], prod[name] = data.benchmark[name], data.production[name]
            continue
        column = data.column(name, numeric=name != "predicted_class")
        if column is not None:
            bench[name], prod[name] = column.benchmark, column.production
    return pd.DataFrame(bench), pd.DataFrame(prod)


def _covariate_cause(lim: LimitationRecord, data: ClaimData, names: list[str]) -> Cause | None:
    if not names:
        return None
    bench, prod = _frame_of(data, names)
    if bench.shape[1] == 0:
        return None
    w = density_ratio_weights(bench.reset_index(drop=True), prod.reset_index(drop=True), random_state=data.seed)
    # the model's outputs are one variable: matching the score matches the predicted class too
    matched = frozenset(OUTPUTS if n == "predicted_class" or n == "score" or n.startswith("proba_") else n
                        for n in names)
    return None if w is None else Cause(what=lim.title, ratio=w, matched=matched)


def _label(lim: LimitationRecord, data: ClaimData) -> Candidate | None:
    label = data.column("<label>", numeric=False) if data.y_true_b is not None and data.y_true_p is not None else None
    predicted = data.column("predicted_class", numeric=False)
    if label is None and predicted is None:
        return None
    if label is None and lim.evidence.get("source") == "observed_labels":
        return None
    return Candidate(lim, (label_component(data, label, predicted),), (0,), _label_cause(lim, data),
                     compares=frozenset({"<label>" if label is not None else OUTPUTS}))


def _label_cause(lim: LimitationRecord, data: ClaimData) -> Cause | None:
    if data.y_true_b is None:
        return None
    if data.y_true_p is not None:
        column = data.column("<label>", numeric=False)
        if column is None:
            return None
        return Cause(what=lim.title, codes=column.benchmark, matched=frozenset({"<label>"}),
                     shares=production_shares(column.production, int(max(column.benchmark.max(initial=0),
                                                                          column.production.max(initial=0))) + 1))
    if not data.prior_estimate:
        return None
    values = np.asarray(data.y_true_b).astype(str)
    classes = sorted(set(values) | set(map(str, data.prior_estimate)))
    index = {c: i for i, c in enumerate(classes)}
    codes = np.array([index[v] for v in values])
    fixed = np.array([float(data.prior_estimate.get(c, 0.0)) for c in classes])
    return Cause(what=lim.title, codes=codes, shares=lambda keep_p: fixed, matched=frozenset({"<label>"}))


def _rows(lim: LimitationRecord, data: ClaimData, masks: dict,
          bench_masks: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """(benchmark rows, production rows) of a finding about rows; a slice production no longer holds
    (its share fell to 0) has none in production, which its re-test must see too."""
    if lim.key in masks and lim.key in bench_masks:
        return bench_masks[lim.key], masks[lim.key]
    if not lim.definition or lim.kind not in ROW_KINDS:
        return None
    try:
        return (evaluate(lim.definition, data.benchmark).to_numpy(),
                evaluate(lim.definition, data.production).to_numpy())
    except (ValueError, KeyError):
        return None


def _share_direction(lim: LimitationRecord) -> int:
    before, after = lim.evidence.get("benchmark_share"), lim.evidence.get("production_share")
    if before is None or after is None:
        return 0
    return 1 if after > before else (-1 if after < before else 0)


def _mix(lim: LimitationRecord, data: ClaimData, rows) -> Candidate | None:
    ev = lim.evidence
    floor = float(ev.get("effect_floor") or _floor_of(ev.get("effect_name"), 0.02))
    if ev.get("kind") == "slice_share" and rows is not None:
        mb, mp = rows
        cause = Cause(what=lim.title, codes=mb.astype(int), shares=production_shares(mp.astype(int), 2))
        return Candidate(lim, (share_component(mb, mp, floor),), (_share_direction(lim),), cause, located=True)
    name = ev.get("name")
    if ev.get("kind") != "context" or not name:
        return None
    numeric = ev.get("effect_name") == "wasserstein_normed"
    column = data.column(str(name), numeric=numeric)
    if column is None:
        return None
    if column.numeric:
        codes_b, codes_p = column.bins()
        component = numeric_component(column, floor)
    else:
        codes_b, codes_p = column.benchmark, column.production
        component = mix_component(column, floor)
    k = int(max(codes_b.max(initial=0), codes_p.max(initial=0))) + 1
    return Candidate(lim, (component,), (0,), Cause(what=lim.title, codes=codes_b, shares=production_shares(codes_p, k),
                                                    matched=frozenset({str(name)})), compares=frozenset({str(name)}))


def _untested(lim: LimitationRecord, rows) -> Candidate | None:
    if rows is None:
        return None
    mb, mp = rows
    floor = CONTEXT_EFFECT_FLOORS["untested_share"]
    return Candidate(lim, (share_component(mb, mp, floor),), (1,), Cause(what=lim.title, remove_b=mb, remove_p=mp),
                     located=True)


def _drop(lim: LimitationRecord, data: ClaimData, rows) -> Candidate | None:
    if not data.labelled or data.y_pred_b is None or data.y_pred_p is None:
        return None
    floor = data.floor("performance_drop", 0.05)
    direction = drop_direction(data.metric)
    if rows is None:
        if lim.slice is not None or lim.definition:
            return None
        return Candidate(lim, (metric_component(data, None, None, floor),), (direction,),
                         Cause(what=lim.title, labels_changed=True))
    mb, mp = rows
    cause = Cause(what=lim.title, remove_b=mb, remove_p=mp)
    if lim.evidence.get("located_by") == "class_mix":  # the labels changed given the inputs in these rows
        label = data.column("<label>", numeric=False)
        if label is None:
            return Candidate(lim, (), (), cause, located=True)

        def inside(adj: Adjusted) -> Retest:
            return mix_retest(adj.w * mb, label.benchmark, label.production[adj.keep_p & mp], floor=LABEL_FLOOR,
                              effect="total_variation")
        return Candidate(lim, (inside,), (0,), cause, located=True)
    # re-tested on the metric the change was measured with (accuracy where the primary one is blind there)
    metric = str(lim.evidence.get("metric") or data.metric)
    return Candidate(lim, (metric_component(data, mb, mp, floor, metric),), (drop_direction(metric),), cause,
                     located=True)


def _weak(lim: LimitationRecord, data: ClaimData, rows) -> Candidate | None:
    if rows is None:
        return None
    if lim.evidence.get("change_basis") == "share":
        mb, mp = rows
        floor = CONTEXT_EFFECT_FLOORS["share_difference"]
        cause = Cause(what=lim.title, codes=mb.astype(int), shares=production_shares(mp.astype(int), 2))
        return Candidate(lim, (share_component(mb, mp, floor),), (_share_direction(lim),), cause, located=True)
    return _drop(lim, data, rows)


def _column_claim(lim: LimitationRecord, evidence: AuditEvidence) -> LimitationRecord | None:
    """The column-level mix claim a head absorbed as one column's fact, as a limitation of its own; for a
    new range of one column (an untested context), that column's mix when its own test found it moved."""
    for r in lim.related:
        if r.get("reason") == "column_mix" and str(r.get("key", "")).startswith("context_mix_shift:column "):
            name = str(r["key"]).split("context_mix_shift:column ", 1)[1]
            return _whole_column(name, evidence, title=r.get("title", name), key=str(r["key"]))
    if lim.kind == "untested_context" and lim.definition:
        try:
            names = columns_used(parse(lim.definition))
        except ValueError:
            return None
        if len(names) == 1:
            return _whole_column(names[0], evidence, title=names[0], key=f"context_mix_shift:column {names[0]}",
                                 moved_only=True)
    return None


def _whole_column(name: str, evidence: AuditEvidence, *, title: str, key: str,
                  moved_only: bool = False) -> LimitationRecord | None:
    test = next((t for t in evidence.semantic.contexts if t.kind == "context" and t.name == name), None)
    if moved_only and (test is None or not test.drifted):
        return None
    return LimitationRecord(rank=0, kind="context_mix_shift", slice=name, title=title, statement="", score=0.0,
                      severity="low", evidence={"kind": "context", "name": name,
                                                "effect_name": test.effect_name if test else None,
                                                "effect_floor": test.effect_floor if test else None},
                      key=key)


def candidates(found: list[LimitationRecord], data: ClaimData, evidence: AuditEvidence, masks: dict,
               bench_masks: dict) -> list[Candidate]:
    """A candidate for every change claim the claim layer can re-test (others stand as they are)."""
    out = []
    for lim in found:
        if lim.claim != "change":
            continue
        whole = _column_claim(lim, evidence)
        if whole is not None and lim.kind == "untested_context":
            # a new range of a column whose mix moved elsewhere too (newer vehicles: some newer than any on
            # the benchmark, and fewer old ones): undone by taking the new rows out and matching the rest of
            # the column's mix, so that what the column's move brought along is explained by it
            own, column = _untested(lim, _rows(lim, data, masks, bench_masks)), _mix(whole, data, None)
            if own is not None and own.cause is not None and column is not None and column.cause is not None:
                out.append(replace(own, cause=replace(own.cause, codes=column.cause.codes, shares=column.cause.shares,
                                                      matched=column.cause.matched), compares=column.compares))
                continue
        if whole is not None and lim.kind != "untested_context":  # one column's mix: undone by matching all of it
            cand = _mix(whole, data, None)
            if cand is not None:
                rows = _rows(lim, data, masks, bench_masks)
                own = _weak(lim, data, rows) if lim.kind == "underperforming_slice" else _mix(lim, data, rows)
                out.append(Candidate(lim, own.components if own else cand.components,
                                     own.directions if own else cand.directions, cand.cause, located=True))
                continue
        rows = _rows(lim, data, masks, bench_masks)
        kind = lim.kind
        if kind == "covariate_shift":
            cand = _covariate(lim, data, evidence)
        elif kind == "label_shift":
            cand = _label(lim, data)
        elif kind == "context_mix_shift":
            cand = _mix(lim, data, rows)
        elif kind == "untested_context":
            cand = _untested(lim, rows)
        elif kind == "concept_shift":
            cand = _drop(lim, data, rows)
        elif kind == "underperforming_slice":
            cand = _weak(lim, data, rows)
        else:
            cand = None
        if cand is not None:
            out.append(cand)
    return out
