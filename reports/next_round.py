"""The next benchmark round (SPEC §8): split an annotation budget across slices and, when
production candidates are given, choose the rows to label.

Budget split
------------
1. Untested contexts first (``semantic.untested_contexts`` and every slice with fewer than
   ``min_slice_size`` benchmark rows but some production rows), in order of production share:
   each gets ``min_slice_size - n_benchmark`` labels, as far as the budget reaches.
2. The rest is split over the slices in proportion to

       weight = production_share × (max(gap, 0) + CI width / 2)

   — prevalence × gap, plus half the width of the slice's benchmark CI, so that a slice
   that is common in production and either weak or poorly measured gets more labels
   (an unknown CI counts as width 0.5). Integer counts by largest remainder; no slice gets
   more than it has production rows (or candidate rows); the excess is re-split.
3. Without any slice weight the rest goes to a ``production sample`` bucket (plain
   uncertainty sampling over all production rows).

Row choice and the diversity rule are documented in :mod:`reports.selection`.

>>> audit = {"semantic": {"untested_contexts": [{"column": "modality", "value": "phone",
...          "n_benchmark": 0, "n_production": 400, "production_share": 0.1}]},
...          "slices": [{"name": "dark skin", "gap": 0.2, "benchmark_ci": [0.5, 0.7], "production_share": 0.2,
...                      "n_benchmark": 200, "n_production": 800}]}
>>> [(a.slice, a.n_to_label) for a in plan_next_round(audit, [], budget=100, min_slice_size=30).allocations]
[('modality = phone', 30), ('dark skin', 70)]
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from detectors.base import Result
from reports.findings_data import slice_gap, slice_shares, untested_name
from reports.formatting import as_list, ci_pair, fmt_share, get, num, shorten
from reports.records import Limitation, RankingContext, finding_key
from reports.selection import DIVERSITY_RULE, LabelRequest, select_rows

__all__ = ["SliceAllocation", "LabelRequest", "NextRoundPlan", "plan_next_round", "PRODUCTION_SAMPLE"]

PRODUCTION_SAMPLE = "production sample"
UNKNOWN_CI_WIDTH = 0.5


@dataclass(frozen=True)
class SliceAllocation(Result):
    """Labels planned for one slice or untested context."""

    slice: str
    kind: str  # "untested_context", "slice" or "production_sample"
    definition: str | None
    reason: str
    n_benchmark: int | None
    n_production: int | None
    production_share: float | None
    gap: float | None
    ci_width: float | None
    weight: float
    n_to_label: int
    n_selected: int = 0
    key: str = ""  # the finding key this allocation answers (``Limitation.key``), for round plan coverage


@dataclass(frozen=True)
class NextRoundPlan(Result):
    """A budgeted collection-and-labelling plan; ``rows`` is empty unless candidates were given."""

    audit_id: str | None
    budget: int
    min_slice_size: int
    allocations: tuple[SliceAllocation, ...]
    rows: tuple[LabelRequest, ...]
    n_allocated: int
    n_unallocated: int
    diversity_rule: str
    notes: tuple[str, ...]


@dataclass(eq=False)  # identity semantics: one target may sit in both phases
class _Target:
    name: str
    kind: str
    definition: str | None
    reason: str
    n_benchmark: int | None
    n_production: int | None
    share: float | None
    gap: float | None = None
    ci_width: float | None = None
    weight: float = 0.0
    need: int = 0
    cap: float = math.inf
    key: str = ""

    def renamed(self, name: str, definition: str | None) -> "_Target":
        """This target under the name (and definition) of the untested context it coincides with."""
        self.name, self.definition = name, definition or self.definition
        return self


def _int(value) -> int | None:
    f = num(value)
    return None if f is None else int(round(f))


def _untested_targets(audit: Mapping, slice_targets: list[_Target], min_size: int) -> list[_Target]:
    """Untested contexts, plus slices with too few benchmark rows (the same target objects, so
    that such a slice can take more labels in phase 2), largest production share first."""
    by_name = {t.name: t for t in slice_targets}
    targets = []
    for u in as_list(get(audit, "semantic", "untested_contexts")):
        name = untested_name(u)
        if u.get("measured_by") in by_name and u.get("measured_by") != name:  # a slice with exactly these rows
            twin = by_name.pop(str(u["measured_by"]))
            slice_targets.remove(twin)
            by_name[name] = twin.renamed(name, u.get("definition"))
            slice_targets.append(by_name[name])
        n_bench = _int(u.get("n_benchmark")) or 0
        share = num(u.get("production_share"))
        target = by_name.get(name) or _Target(
            name, "untested_context", str(u.get("name") or f"{u.get('column')} == {u.get('value')!r}") if u.get("column") else None, "", n_bench,
            _int(u.get("n_production")), share)
        target.kind, target.need = "untested_context", max(0, min_size - n_bench)
        target.reason = f"untested: {n_bench:,} benchmark rows, {fmt_share(share)} of production"
        targets.append(target)
    for t in slice_targets:
        if t in targets or t.n_benchmark is None or t.n_benchmark >= min_size or not t.n_production:
            continue
        t.kind, t.need = "untested_context", min_size - t.n_benchmark
        t.reason = f"under-tested: {t.n_benchmark:,} benchmark rows, fewer than {min_size:,}; " + t.reason
        targets.append(t)
    return sorted(targets, key=lambda t: -(t.share or 0.0))


def _slice_targets(audit: Mapping, ctx: RankingContext, limitations: Sequence[Limitation]) -> list[_Target]:
    ranks = {str(lim.slice): lim.rank for lim in limitations if lim.slice is not None}
    targets = []
    for s in as_list(get(audit, "slices")):
        share, _ = slice_shares(s, ctx)
        gap = slice_gap(s, ctx)
        lo, hi = ci_pair(s.get("benchmark_ci"))
        width = (hi - lo) if lo is not None and hi is not None else None
        weight = (share or 0.0) * (max(gap or 0.0, 0.0) + (UNKNOWN_CI_WIDTH if width is None else width) / 2)
        name = str(s.get("name"))
        reason = f"limitation #{ranks[name]}; " if name in ranks else ""
        reason += f"{fmt_share(share)} of production" + (f", gap {gap:+.2f}" if gap is not None else "")
        targets.append(_Target(name, "slice", s.get("definition"), reason, _int(s.get("n_benchmark")),
                               _int(s.get("n_production")), share, gap, width, weight))
    return targets


def _target_key(t: _Target, keys: dict[str, str]) -> str:
    if t.name in keys:
        return keys[t.name]
    if t.kind == "untested_context":
        return finding_key("untested_context", t.definition, t.name)
    return finding_key("slice", t.definition, t.name)


def _apportion(total: int, weights: list[float], caps: list[float]) -> list[int]:
    """Largest-remainder split of ``total`` in proportion to ``weights`` with per-item caps;
    capped items are filled and the rest re-split, so the sum is ``min(total, sum(caps))``."""
    alloc = [0] * len(weights)
    active = [i for i, w in enumerate(weights) if w > 0 and caps[i] > 0]
    remaining = total
    while remaining > 0 and active:
        wsum = sum(weights[i] for i in active)
        quotas = {i: remaining * weights[i] / wsum for i in active}
        full = [i for i in active if quotas[i] >= caps[i] - alloc[i]]
        if full:
            for i in full:
                take = int(min(caps[i] - alloc[i], remaining))
                alloc[i] += take
                remaining -= take
            active = [i for i in active if i not in full]
            continue
        floors = {i: int(quotas[i]) for i in active}
        leftover = remaining - sum(floors.values())
        by_fraction = sorted(active, key=lambda i: (-(quotas[i] - floors[i]), i))
        for i in active:
            alloc[i] += floors[i] + (1 if i in by_fraction[:leftover] else 0)
        remaining = 0
    return alloc


def _caps(targets: list[_Target], candidates) -> list[str]:
    """Limit each target by its pool: candidate rows flagged for it, else its production rows."""
    notes = []
    for t in targets:
        if candidates is not None:
            if t.kind == "production_sample":
                t.cap = len(candidates)
            elif t.name in candidates.columns:
                t.cap = int(candidates[t.name].fillna(False).astype(bool).sum())
            else:
                t.cap = 0
                notes.append(f"No candidate column for {shorten(t.name)!r}: no rows can be chosen for it.")
        elif t.n_production is not None:
            t.cap = t.n_production
    return notes


def plan_next_round(audit: Mapping, limitations: Sequence[Limitation], *, budget: int, min_slice_size: int = 30,
                    candidates=None) -> NextRoundPlan:
    """Split ``budget`` labels across slices and choose production rows to label.

    Parameters
    ----------
    audit : mapping
        The AuditResult (``reports/SCHEMA.md``).
    limitations : sequence of Limitation
        From :func:`reports.rank_limitations`; used to explain allocations.
    budget : int
        Number of rows that can be labelled in the next round (>= 0).
    min_slice_size : int
        Benchmark rows a context needs before its metric can be measured.
    candidates : pandas.DataFrame of shape (n_rows, 2 + n_targets), optional
        Production rows: ``id``, ``uncertainty`` (higher = more uncertain), one boolean column per
        target name, optionally ``cluster`` or ``prediction`` for the diversity rule.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be a non-negative integer, got {budget!r}.")
    if isinstance(min_slice_size, bool) or not isinstance(min_slice_size, int) or min_slice_size < 1:
        raise ValueError(f"min_slice_size must be a positive integer, got {min_slice_size!r}.")
    ctx = RankingContext.from_audit(audit, saturation_threshold=None, alpha=None, priors=None)
    folded = {str(r.get("slice")) for lim in limitations for r in lim.related if r.get("slice") is not None}
    rest = [t for t in _slice_targets(audit, ctx, limitations) if t.name not in folded]
    first = [t for t in _untested_targets(audit, rest, min_slice_size) if t.name not in folded]
    if not any(t.weight > 0 for t in rest):
        for t in rest:
            t.weight = t.share or 0.0
    if not any(t.weight > 0 for t in rest):
        rest.append(_Target(PRODUCTION_SAMPLE, "production_sample", None, "no slice weights: uncertainty sampling",
                            None, _int(get(audit, "production", "n_rows")), 1.0, weight=1.0))
    keys = {str(lim.slice): lim.key for lim in limitations if lim.slice is not None}
    notes = _caps(first + [t for t in rest if t not in first], candidates)
    counts, remaining = {id(t): 0 for t in first + rest}, budget
    for t in first:
        counts[id(t)] = int(min(t.need, t.cap, remaining))
        remaining -= counts[id(t)]
    split = _apportion(remaining, [t.weight for t in rest], [t.cap - counts[id(t)] for t in rest])
    for t, n in zip(rest, split):
        counts[id(t)] += n
    ordered = first + sorted((t for t in rest if t not in first), key=lambda t: -t.weight)
    allocated = sum(counts.values())
    if allocated < budget:
        notes.append(f"{budget - allocated:,} of {budget:,} labels could not be placed: the slices have too few "
                     "production rows.")
    chosen = (select_rows(candidates, [(t.name, counts[id(t)]) for t in ordered if counts[id(t)] > 0],
                          all_rows_target=PRODUCTION_SAMPLE) if candidates is not None else ())
    selected = {}
    for row in chosen:
        selected[row.slice] = selected.get(row.slice, 0) + 1
    allocations = tuple(
        SliceAllocation(slice=t.name, kind=t.kind, definition=t.definition, reason=t.reason,
                        n_benchmark=t.n_benchmark, n_production=t.n_production, production_share=t.share,
                        gap=t.gap, ci_width=t.ci_width, weight=round(t.weight, 6), n_to_label=counts[id(t)],
                        n_selected=selected.get(t.name, 0), key=_target_key(t, keys))
        for t in ordered)
    return NextRoundPlan(audit_id=get(audit, "id"), budget=budget, min_slice_size=min_slice_size,
                         allocations=allocations, rows=tuple(chosen), n_allocated=allocated,
                         n_unallocated=budget - allocated,
                         diversity_rule=DIVERSITY_RULE if candidates is not None else "",
                         notes=tuple(notes))
