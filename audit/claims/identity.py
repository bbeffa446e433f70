"""One fact, one claim, one key: findings about the same rows are one limitation.

Before any cause is sought, findings that *are* the same fact are grouped:

* **same key** — the same kind about the same rows (an untested value and an expert slice with the
  same definition): the highest ranked keeps the others as related evidence;
* **same rows** — an untested context, the slice with the same definition and the mix shift of that
  slice select the same production rows: one limitation, the most telling kind first (untested
  context, concept shift, weak slice, mix shift);
* **nested** — a finding whose rows lie inside another's folds into it unless it is significantly
  worse than its parent (its interval lies entirely below the parent's value);
* **one column** — the change of one context column's mix is one fact, however many of its values'
  shares were tested: the column-level mix claim and the share claims of slices cut from that column
  alone (complementary values such as ``student == "yes"`` and ``student == "no"``) fold into the one
  that names the part that moved: a new population of that column first, else the most severe.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from domains import evaluate, parse
from domains.expressions import columns_used
from reports.formatting import lower_is_better
from reports.grouping import Relation
from reports.result import LimitationRecord

__all__ = ["ROW_KINDS", "one_per_key", "row_masks", "row_relations", "column_relations"]

# most telling first: a change located in a slice (concept shift) says more than the slice being weak
ROW_KINDS = ("untested_context", "concept_shift", "underperforming_slice", "context_mix_shift")


def one_per_key(found: list[LimitationRecord]) -> list[LimitationRecord]:
    """Findings with the same key are the same fact: the first, highest ranked, keeps the others."""
    first: dict[str, int] = {}
    out: list[LimitationRecord] = []
    for lim in found:
        if lim.key not in first:
            first[lim.key] = len(out)
            out.append(lim)
            continue
        head = out[first[lim.key]]
        extra = {"key": lim.key, "kind": lim.kind, "slice": lim.slice, "title": lim.title, "statement": lim.statement,
                 "score": lim.score, "reason": "same_rows", "note": "the same definition"}
        out[first[lim.key]] = head.replaced(related=[*head.related, extra, *lim.related])
    return out


def _mask(lim: LimitationRecord, frame: pd.DataFrame) -> np.ndarray | None:
    if lim.kind not in ROW_KINDS or not lim.definition:
        return None
    try:
        mask = evaluate(lim.definition, frame).to_numpy()
    except (ValueError, KeyError):
        return None
    return mask if mask.any() else None


def row_masks(found: list[LimitationRecord], benchmark: pd.DataFrame,
              production: pd.DataFrame) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The production and benchmark rows of every finding about rows (production rows must exist)."""
    masks = {lim.key: m for lim in found if (m := _mask(lim, production)) is not None}
    bench = {lim.key: m if m is not None else np.zeros(len(benchmark), bool)
             for lim in found if lim.key in masks for m in [_mask(lim, benchmark)]}
    return masks, bench


def _order(lim: LimitationRecord) -> tuple:
    # a total order: two findings on equal rows with the same kind and score (a slice and its twin with a
    # redundant condition) must not each fold into the other, or both would vanish; the shorter definition
    # is the parent
    return ROW_KINDS.index(lim.kind), -lim.score, len(lim.key), lim.key


def row_relations(found: list[LimitationRecord], masks: dict[str, np.ndarray]) -> list[Relation]:
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
            nested_change = child.claim == "change" and parent.claim != "change"
            if not same and (_significantly_worse(child, parent) or nested_change):
                continue  # worse than its parent, or a change inside a standing weakness: a fact of its own
            parents.append((int(mp.sum()), _order(parent), parent, same))
        if parents:
            _, _, parent, same = min(parents, key=lambda p: p[:2])
            share = f"{int(mc.sum()):,} of its {int(masks[parent.key].sum()):,} rows"
            relations.append(Relation(child.key, parent.key, "same_rows" if same else "nested",
                                      note="" if same else share))
    return relations


def _significantly_worse(child: LimitationRecord, parent: LimitationRecord) -> bool:
    """Is the child's measured metric credibly worse than the parent's (its CI excludes the parent's value)?"""
    value, ci = parent.evidence.get("value"), child.evidence.get("ci")
    if child.kind in ("underperforming_slice", "concept_shift") and (value is None or not ci):
        return True  # a measured harm inside an unmeasured parent stays visible
    lo, hi = ci if ci and len(ci) == 2 else (None, None)
    if value is None or lo is None or hi is None:
        return False
    return lo > value if lower_is_better(child.evidence.get("metric") or "") else hi < value


def _column_of(lim: LimitationRecord) -> str | None:
    """The one context column a change of mix is about: a column-level mix claim's column, or the column a
    share claim's (or a new population's) rows are cut from alone."""
    if lim.claim != "change":
        return None
    if lim.kind == "context_mix_shift" and lim.evidence.get("kind") == "context":
        return str(lim.evidence.get("name") or "") or None
    share = (lim.kind == "context_mix_shift" or lim.kind == "untested_context"
             or (lim.kind == "underperforming_slice" and lim.evidence.get("change_basis") == "share"))
    if not share or not lim.definition:
        return None
    try:
        columns = set(columns_used(parse(lim.definition)))
    except ValueError:
        return None
    return next(iter(columns)) if len(columns) == 1 else None


def column_relations(found: list[LimitationRecord]) -> list[Relation]:
    """Every mix claim about one context column folded into the one that names the part that moved."""
    groups: dict[str, list[LimitationRecord]] = {}
    for lim in found:
        column = _column_of(lim)
        if column is not None:
            groups.setdefault(column, []).append(lim)
    out = []
    for column, group in groups.items():
        if len(group) < 2:
            continue
        # a new population of the column leads, then a weak slice of it whose share grew (it names the harm),
        # then the column's whole mix (a range's share says less than the distribution), then the largest share
        head = max(group, key=lambda lim: (lim.kind == "untested_context", lim.kind == "underperforming_slice",
                                           lim.evidence.get("kind") == "context", lim.score))
        out += [Relation(lim.key, head.key, "column_mix", note=f"the mix of {column}")
                for lim in group if lim is not head]
    return out
