"""Plan coverage: for each slice an audit's next-round plan asked for, how many rows a round collected.

Allocations are followed by their finding key, ``"<kind>:<definition or slice>"`` until the audit
result carries ``key`` itself; a slice's rows are found by evaluating its ``definition`` with the
slice language (:mod:`domains.expressions`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from detectors.base import Result
from domains.expressions import ExpressionError, columns_used, evaluate, parse


@dataclass(frozen=True)
class Coverage(Result):
    """``collected`` is None when the slice has no definition the round's rows can be matched to."""

    key: str
    slice: str
    kind: str
    definition: str | None
    planned: int
    collected: int | None


def allocation_key(alloc: Mapping[str, Any]) -> str:
    """The stable key of a planned slice."""
    return alloc.get("key") or f"{alloc['kind']}:{alloc.get('definition') or alloc['slice']}"


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


def plan_allocations(audit_result: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    plan = (audit_result or {}).get("next_round") or {}
    return [a for a in plan.get("allocations") or [] if isinstance(a, Mapping)]


def plan_coverage(allocations: Sequence[Mapping[str, Any]], items: pd.DataFrame) -> tuple[Coverage, ...]:
    """Planned versus collected rows for every allocation of the plan."""
    out = []
    for alloc in allocations:
        mask = slice_mask(alloc.get("definition"), items)
        out.append(Coverage(allocation_key(alloc), str(alloc.get("slice")), str(alloc.get("kind")),
                            alloc.get("definition"), int(alloc.get("n_to_label") or 0),
                            None if mask is None else int(mask.sum())))
    return tuple(out)
