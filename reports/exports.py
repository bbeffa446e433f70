"""Exports of a next-round plan (:class:`reports.result.NextRound`): JSON, CSV and Dynabench-style JSON Lines.

When the plan has chosen rows, the exports list the rows to label; otherwise they list the
per-slice allocations (a collection brief rather than a labelling queue).

CSV cells that start with ``=``, ``+``, ``-``, ``@``, tab or carriage return are prefixed with
``'`` so that a slice or id named ``=HYPERLINK(...)`` is not run as a spreadsheet formula.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from reports.result import NextRound

__all__ = ["to_json", "to_csv", "to_jsonl", "ROW_COLUMNS", "ALLOCATION_COLUMNS"]

ROW_COLUMNS = ("rank", "id", "slice", "uncertainty", "group", "tags", "image")
ALLOCATION_COLUMNS = ("slice", "kind", "definition", "n_to_label", "n_selected", "n_benchmark", "n_production",
                      "production_share", "gap", "ci_width", "weight", "reason", "key")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):  # 0.49429999999999996 is float noise, not information: 6 significant digits
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        value = "; ".join(str(v) for v in value)
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _which(plan: NextRound, what: str) -> str:
    if what not in ("auto", "rows", "allocations"):
        raise ValueError(f"what must be 'auto', 'rows' or 'allocations', got {what!r}.")
    if what == "auto":
        return "rows" if plan.rows else "allocations"
    return what


def to_json(plan: NextRound) -> str:
    """The whole plan as JSON (``plan.to_dict()``)."""
    return json.dumps(plan.to_dict(), ensure_ascii=False, allow_nan=False)


def to_csv(plan: NextRound, *, what: str = "auto") -> str:
    """CSV of the rows to label (``what="rows"``) or of the allocations (``"allocations"``);
    ``"auto"`` gives rows when there are any."""
    kind = _which(plan, what)
    columns = ROW_COLUMNS if kind == "rows" else ALLOCATION_COLUMNS
    records = plan.rows if kind == "rows" else plan.allocations
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        data = record.to_dict()
        writer.writerow([_cell(data.get(c)) for c in columns])
    return out.getvalue()


def to_jsonl(plan: NextRound, *, what: str = "auto") -> str:
    """Dynabench-style JSON Lines: one ``{"uid", "context", "tags", "metadata"}`` object per line.

    For rows: ``uid`` is the production row id, ``context`` the slice it is collected for, ``tags``
    every planned slice the row belongs to. For allocations: ``uid`` is ``"<audit id>/<slice>"``
    and ``metadata.n_to_label`` the number of examples to collect.
    """
    kind = _which(plan, what)
    by_slice = {a.slice: a for a in plan.allocations}
    lines = []
    if kind == "rows":
        for row in plan.rows:
            allocation = by_slice.get(row.slice)
            meta = {"rank": row.rank, "uncertainty": row.uncertainty, "group": row.group,
                    "audit_id": plan.audit_id, "definition": allocation.definition if allocation else None,
                    "reason": allocation.reason if allocation else None,
                    "key": allocation.key if allocation else None, "image": row.image}
            lines.append({"uid": str(row.id), "context": row.slice, "tags": list(row.tags), "metadata": meta})
    else:
        for a in plan.allocations:
            meta = {"n_to_label": a.n_to_label, "definition": a.definition, "reason": a.reason,
                    "production_share": a.production_share, "gap": a.gap, "audit_id": plan.audit_id,
                    "key": a.key}
            lines.append({"uid": f"{plan.audit_id}/{a.slice}", "context": a.slice, "tags": [a.kind], "metadata": meta})
    return "".join(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n" for line in lines)
