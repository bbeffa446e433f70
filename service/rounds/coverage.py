"""Plan coverage: for each slice an audit's next-round plan asked for, how many rows a round collected.

Allocations are followed by their finding key (``key``; ``"<kind>:<definition or slice>"`` for plans
stored without it); a slice's rows are found by evaluating its ``definition`` with the slice language
(:mod:`domains.expressions`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from detectors.base import Result
from domains.expressions import ExpressionError, columns_used, evaluate, parse
from reports.result import Allocation
from service.audits.stored import stored_sections


@dataclass(frozen=True)
class Coverage(Result):
    """``collected`` is None when the slice has no definition the round's rows can be matched to."""

    key: str
    slice: str
    kind: str
    definition: str | None
    planned: int
    collected: int | None


def allocation_key(alloc: Allocation) -> str:
    """The stable key of a planned slice."""
    return alloc.key or f"{alloc.kind}:{alloc.definition or alloc.slice}"


def slice_mask(definition: str | None, frame: pd.DataFrame) -> np.ndarray | None:
    """Rows of ``frame`` inside the slice; all False when the round lacks a column the slice uses,
    None when there is no usable definition."""
    if not definition:
        return None

    try:
        node = parse(definition)
    except ExpressionError:
        return None
    if any(c not in frame.columns for c in columns_used(node)):
        return np.zeros(len(frame), dtype=bool)
    return evaluate(node, frame).to_numpy(dtype=bool)


def plan_allocations(audit_result: Mapping[str, Any] | None) -> list[Allocation]:
    """The allocations of a stored audit result's next-round plan (none without a result or a plan)."""
    plan = stored_sections(audit_result, "next_round").next_round
    return list(plan.allocations) if plan else []


def plan_coverage(allocations: Sequence[Allocation], items: pd.DataFrame) -> tuple[Coverage, ...]:
    """Planned versus collected rows for every allocation of the plan."""
    out = []
    for alloc in allocations:
        mask = slice_mask(alloc.definition, items)
        out.append(Coverage(allocation_key(alloc), alloc.slice, alloc.kind, alloc.definition, alloc.n_to_label,
                            None if mask is None else int(mask.sum())))
    return tuple(out)
