"""The next benchmark round: split an annotation budget across slices and, when
production candidates are given, choose the rows to label.

Budget split
------------
The budget goes to the audit's claims that labels can fix, in rank order (targets and their rules
are in :mod:`reports.plan_targets`):

1. Untested contexts first (``semantic.untested_contexts`` and every slice with fewer than
   ``min_slice_size`` benchmark rows), in the rank of the limitation they belong to, then by
   production share: each gets ``min_slice_size - n_benchmark`` labels, as far as the budget
   reaches. A context with fewer than ``min_slice_size`` production rows gets nothing on its own
   (a pooled group of such values is one target with the pooled count).
2. The rest is split over the slices whose gap is a claim (a limitation, or a gap significant
   after correction) in proportion to

       weight = production_share × (gap + CI width / 2)

   — prevalence × gap, plus half the width of the slice's benchmark CI, so that a slice
   that is common in production and weak and poorly measured gets more labels
   (an unknown CI counts as width 0.5). Integer counts by largest remainder; no slice gets
   more than it has production rows (or candidate rows); the excess is re-split. A slice with
   no gap, or a gap within sampling error, gets nothing.
3. What the claims cannot take goes to a ``production sample`` bucket (plain uncertainty sampling
   over all production rows), keyed to the top limitation about all rows.

Every allocation carries the ``key`` of the limitation it answers and a reason.

Row choice and the diversity rule are documented in :mod:`reports.selection`.

>>> audit = {"semantic": {"untested_contexts": [{"name": "modality = phone", "kind": "unseen_value",
...          "column": "modality", "value": "phone", "n_benchmark": 0, "n_production": 400, "production_share": 0.1}]},
...          "slices": [{"name": "dark skin", "gap": 0.2, "benchmark_ci": [0.5, 0.7], "production_share": 0.2,
...                      "n_benchmark": 200, "n_production": 800, "gap_p_value_adjusted": 0.001}]}
>>> [(a.slice, a.n_to_label) for a in plan_next_round(audit, [], budget=100, min_slice_size=30).allocations]
[('modality = phone', 30), ('dark skin', 70)]
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from reports.formatting import shorten
from reports.plan_targets import Target, limitation_index, slice_targets, untested_targets
from reports.records import RankingContext
from reports.result import Allocation, AuditEvidence, LimitationRecord, NextRound, as_evidence
from reports.selection import DIVERSITY_RULE, select_rows

__all__ = ["plan_next_round", "PRODUCTION_SAMPLE"]

PRODUCTION_SAMPLE = "production sample"


def _sample_key(limitations: Sequence[LimitationRecord]) -> str:
    """The top limitation about no particular rows (a shift of all production), else "production_sample:all"."""
    lim = next((lim for lim in limitations if lim.slice is None and lim.kind != "benchmark_saturation"), None)
    return lim.key if lim is not None else "production_sample:all"


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


def _caps(targets: list[Target], candidates) -> list[str]:
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


def _first_reason(t: Target, n: int, remaining: int, min_slice_size: int) -> str:
    """Why an untested context gets ``n`` labels: what it needs to be measured, and what limited it."""
    out = (f"{n:,} labels: {t.need:,} would bring it to {min_slice_size:,} benchmark rows, the least a metric is "
           "measured on")
    if n < t.need:
        out += (f", but only {t.cap:,} production rows can be chosen" if t.cap <= remaining
                else f", but only {remaining:,} labels were left")
    return out + "; untested contexts come first"


def _split_reason(t: Target, n: int, already: int, remaining: int, total_weight: float) -> str:
    """Why a claimed gap gets ``n`` labels: its weight's share of what was left, and its cap."""
    share = t.weight / total_weight if total_weight > 0 else 0.0
    out = (f"{n:,} labels: weight {t.weight:.3g} (production share x (gap + half the CI width)), {share:.0%} of "
           f"the weights, of the {remaining:,} labels left after the untested contexts")
    if already + n >= t.cap and n < round(share * remaining):
        out += f"; capped at its {t.cap:,} production rows"
    return out


def plan_next_round(audit: AuditEvidence | Mapping, limitations: Sequence[LimitationRecord], *, budget: int,
                    min_slice_size: int = 30, candidates=None) -> NextRound:
    """Split ``budget`` labels across slices and choose production rows to label.

    Parameters
    ----------
    audit : AuditEvidence, AuditResult or its JSON
        The audit (``reports/SCHEMA.md``); JSON is validated first.
    limitations : sequence of LimitationRecord
        From :func:`reports.rank_limitations`; used to explain allocations.
    budget : int
        Number of rows that can be labelled in the next round (>= 0).
    min_slice_size : int
        Benchmark rows a context needs before its metric can be measured.
    candidates : pandas.DataFrame of shape (n_rows, 2 + n_targets), optional
        Production rows: ``id``, ``uncertainty`` (higher = more uncertain), one boolean column per
        target name, optionally ``cluster`` or ``prediction`` for the diversity rule.

    Returns
    -------
    NextRound
        The plan as the AuditResult stores it (``next_round``); ``rows`` is empty unless candidates were given.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be a non-negative integer, got {budget!r}.")
    if isinstance(min_slice_size, bool) or not isinstance(min_slice_size, int) or min_slice_size < 1:
        raise ValueError(f"min_slice_size must be a positive integer, got {min_slice_size!r}.")
    audit = as_evidence(audit)
    ctx = RankingContext.from_audit(audit, saturation_threshold=None, alpha=None, priors=None)
    heads, folded = limitation_index(limitations)
    rest = [t for t in slice_targets(audit, ctx, heads) if t.name not in folded]
    first, notes = untested_targets(audit, rest, min_slice_size, heads)
    first = [t for t in first if t.name not in folded]
    rest = [t for t in rest if t.weight > 0]  # only claimed gaps share the rest of the budget
    n_rows = audit.production.n_rows
    sample = Target(PRODUCTION_SAMPLE, "production_sample", None,
                    "no claim left that labels can fix: uncertainty sampling over all production rows",
                    None, n_rows, 1.0, weight=1.0, key=_sample_key(limitations))
    notes += _caps(first + [t for t in rest if t not in first] + [sample], candidates)
    counts, remaining = {id(t): 0 for t in first + rest + [sample]}, budget
    why: dict[int, list[str]] = {}
    for t in first:
        counts[id(t)] = int(min(t.need, t.cap, remaining))
        why.setdefault(id(t), []).append(_first_reason(t, counts[id(t)], remaining, min_slice_size))
        remaining -= counts[id(t)]
    split = _apportion(remaining, [t.weight for t in rest], [t.cap - counts[id(t)] for t in rest])
    total_weight = sum(t.weight for t in rest)
    for t, n in zip(rest, split):
        why.setdefault(id(t), []).append(_split_reason(t, n, counts[id(t)], remaining, total_weight))
        counts[id(t)] += n
    remaining -= sum(split)
    # what the claims cannot take goes to plain uncertainty sampling, never to slices without a gap
    counts[id(sample)] = int(max(0, min(remaining, sample.cap - (budget - remaining))))
    why[id(sample)] = [f"{counts[id(sample)]:,} labels: the {remaining:,} of {budget:,} that the claims above could "
                       "not take"]
    ordered = first + sorted((t for t in rest if t not in first), key=lambda t: (t.rank, -t.weight))
    if counts[id(sample)] > 0 or not ordered:
        ordered.append(sample)
    allocated = sum(counts.values())
    if allocated < budget:
        notes.append(f"{budget - allocated:,} of {budget:,} labels could not be placed: the slices have too few "
                     "production rows.")
    chosen = (select_rows(candidates, [(t.name, counts[id(t)]) for t in ordered if counts[id(t)] > 0],
                          all_rows_target=PRODUCTION_SAMPLE) if candidates is not None else ())
    selected: dict[str, int] = {}
    for row in chosen:
        selected[row.slice] = selected.get(row.slice, 0) + 1
    allocations = [
        Allocation(slice=t.name, kind=t.kind, definition=t.definition,
                   reason="; ".join([t.reason, *why.get(id(t), [])]),
                   n_benchmark=t.n_benchmark, n_production=t.n_production, production_share=t.share,
                   gap=t.gap, ci_width=t.ci_width, weight=round(t.weight, 6), n_to_label=counts[id(t)],
                   n_selected=selected.get(t.name, 0), key=t.key)
        for t in ordered]
    return NextRound(audit_id=audit.id or None, budget=budget, min_slice_size=min_slice_size,
                     allocations=allocations, rows=list(chosen), n_allocated=allocated,
                     n_unallocated=budget - allocated,
                     diversity_rule=DIVERSITY_RULE if candidates is not None else "", notes=notes)
