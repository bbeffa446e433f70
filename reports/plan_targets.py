"""What the next round can label: the audit's claims that labels can fix, as plan targets.

A target is one group of production rows with a reason to label it:

* an **untested context** (or a slice with fewer than ``min_slice_size`` benchmark rows) needs
  ``min_slice_size - n_benchmark`` labels before its metric can be measured at all. It is a target
  only when production holds at least ``min_slice_size`` of its rows: labelling a one-row clinic
  measures nothing, so many small values of one column count only when pooled into one group
  (which then has the pooled row count);
* a **weak slice** is a target only when its gap is a claim: it is a limitation of the audit, or its
  gap to the overall metric is significant after correction (adjusted p below alpha) or, without
  a p-value, its gap interval excludes zero on the worse side. A slice whose gap is zero or within
  sampling error gets nothing: labels there answer no question the audit raised.

Targets folded into another limitation (one fact, one limitation) are served by that limitation.
Each target carries the key of the limitation it answers and its rank, so the plan follows the
ranking.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from reports.findings_base import untested_name
from reports.findings_data import slice_gap, slice_shares
from reports.formatting import fmt_share, lower_is_better
from reports.records import RankingContext, finding_key
from reports.result import AuditEvidence, LimitationRecord, SliceRecord
from slicelang import equals

__all__ = ["Target", "untested_targets", "slice_targets", "limitation_index", "UNKNOWN_CI_WIDTH"]

UNKNOWN_CI_WIDTH = 0.5
UNRANKED = 10**6


@dataclass(eq=False)  # identity semantics: one target may sit in both phases
class Target:
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
    rank: int = UNRANKED
    claimed: bool = False  # its gap is a claim (limitation or significant gap)

    def renamed(self, name: str, definition: str | None) -> "Target":
        """This target under the name (and definition) of the untested context it coincides with."""
        self.name, self.definition = name, definition or self.definition
        return self


def limitation_index(limitations: Sequence[LimitationRecord]) -> tuple[dict[str, LimitationRecord], set[str]]:
    """Heads by slice name and by key, and the slice names folded into another limitation."""
    heads: dict[str, LimitationRecord] = {}
    for lim in limitations:
        heads.setdefault(lim.key, lim)
        if lim.slice is not None:
            heads.setdefault(str(lim.slice), lim)
    own = {str(lim.slice) for lim in limitations if lim.slice is not None}
    folded = {str(r.get("slice")) for lim in limitations for r in lim.related if r.get("slice") is not None} - own
    return heads, folded


def _attach(t: Target, heads: dict[str, LimitationRecord]) -> Target:
    lim = heads.get(t.name) or (heads.get(t.key) if t.key else None)
    if lim is not None:
        t.key, t.rank = lim.key, lim.rank
    elif not t.key:
        t.key = finding_key("untested_context" if t.kind == "untested_context" else "slice", t.definition, t.name)
    return t


def _gap_claimed(s: SliceRecord, gap: float | None, ctx: RankingContext, is_limitation: bool) -> bool:
    if gap is None or gap <= 0:
        return False
    if is_limitation:
        return True
    if s.gap_p_value_adjusted is not None:
        return s.gap_p_value_adjusted < ctx.alpha
    lo, hi = s.gap_ci or (None, None)  # slice minus overall: worse is below zero (above for error rates)
    if lo is None or hi is None:
        return False
    return lo > 0 if lower_is_better(s.metric or ctx.metric) else hi < 0


def slice_targets(audit: AuditEvidence, ctx: RankingContext, heads: dict[str, LimitationRecord]) -> list[Target]:
    """Every slice of the audit, weighted ``share × (gap + CI width / 2)`` when its gap is a claim, else 0."""
    targets = []
    for s in audit.slices:
        share, _ = slice_shares(s, ctx)
        gap = slice_gap(s, ctx)
        lo, hi = s.benchmark_ci or (None, None)
        width = (hi - lo) if lo is not None and hi is not None else None
        name = s.name
        lim = heads.get(name)
        is_claim = lim is not None and lim.kind in ("underperforming_slice", "concept_shift", "untested_context")
        claimed = _gap_claimed(s, gap, ctx, is_claim)
        weight = ((share or 0.0) * (gap + (UNKNOWN_CI_WIDTH if width is None else width) / 2)
                  if claimed and gap is not None else 0.0)
        reason = f"limitation #{lim.rank}; " if lim is not None else ""
        reason += f"{fmt_share(share)} of production" + (f", gap {gap:+.2f}" if gap is not None else "")
        if not claimed:
            reason += "; no credible gap: nothing to label for"
        targets.append(_attach(Target(name, "slice", s.definition, reason, s.n_benchmark, s.n_production, share, gap,
                                      width, weight, claimed=claimed), heads))
    return targets


def untested_targets(audit: AuditEvidence, slices: list[Target], min_size: int,
                     heads: dict[str, LimitationRecord]) -> tuple[list[Target], list[str]]:
    """Untested contexts, plus slices with too few benchmark rows (the same target objects, so that
    such a slice can take more labels in the split), in rank order, then largest production share.

    An untested context the audit kept as not claimed (``claimed: false``) is no target; an
    under-tested slice is one when it is a limitation or its gap is a claim (or when no ranking
    was given at all).

    Returns the targets and notes on the contexts left out for having too few production rows.
    """
    by_name = {t.name: t for t in slices}
    targets, small = [], []
    for u in audit.semantic.untested_contexts:
        if not u.claimed:
            continue
        name = untested_name(u)
        if u.measured_by in by_name and u.measured_by != name:  # a slice with exactly these rows
            twin = by_name.pop(u.measured_by)
            slices.remove(twin)
            by_name[name] = twin.renamed(name, u.definition)
            slices.append(by_name[name])
        n_bench, share = u.n_benchmark, u.production_share
        definition = u.definition or (equals(u.column, u.value) if u.column else None)
        target = by_name.get(name) or Target(name, "untested_context", definition, "", n_bench, u.n_production, share)
        target.kind, target.need = "untested_context", max(0, min_size - n_bench)
        target.reason = f"untested: {n_bench:,} benchmark rows, {fmt_share(share)} of production"
        targets.append(_attach(target, heads))
    for t in slices:
        if t in targets or t.n_benchmark is None or t.n_benchmark >= min_size or not t.n_production:
            continue
        if heads and t.rank == UNRANKED and not t.claimed:
            continue  # a few benchmark rows and no claim about it: nothing the audit asks to measure
        t.kind, t.need = "untested_context", min_size - t.n_benchmark
        t.reason = f"under-tested: {t.n_benchmark:,} benchmark rows, fewer than {min_size:,}; " + t.reason
        targets.append(t)
    kept = []
    for t in targets:
        if t.n_production is not None and t.n_production < min_size:
            small.append(t)
            t.need, t.weight = 0, 0.0
            t.reason += f"; only {t.n_production:,} production rows, fewer than {min_size:,}: not labelled on its own"
            continue
        if t.rank < UNRANKED:
            t.reason = f"limitation #{t.rank}; " + t.reason
        kept.append(t)
    notes = [f"{len(small):,} untested or under-tested context(s) have fewer than {min_size:,} production rows each "
             "and get no labels on their own (pool such values into one group to measure them)."] if small else []
    return sorted(kept, key=lambda t: (t.rank, -(t.share or 0.0))), notes
