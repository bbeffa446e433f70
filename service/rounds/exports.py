"""A round as Dynabench-style JSON Lines (``uid``, ``context``, ``label``, ``tags``, ``metadata``) or CSV.

CSV cells that start like a spreadsheet formula are prefixed with ``'`` (as the plan exports do).
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from detectors.base import to_jsonable
from reports.result import Allocation
from service.rounds.coverage import allocation_key, slice_mask
from service.rounds.frames import roles_of, validation_column

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
CSV_FIXED = ("uid", "round", "label", "prediction", "model_wrong", "validated", "annotator_id", "tags")


def _records(frame: pd.DataFrame, columns: Sequence[Mapping[str, Any]], *, series: str, number: int,
             model: str | None, allocations: Sequence[Allocation]) -> list[dict[str, Any]]:
    roles = roles_of(columns)
    pick = {role: next((c for c, r in roles.items() if r == role), None)
            for role in ("id", "label", "prediction", "annotator")}
    vcol = validation_column(roles)
    contexts = [c for c, r in roles.items() if r == "context"]
    tags = [[f"round:{number}"] for _ in range(len(frame))]
    for alloc in allocations:  # tag each row with the planned slices it answers
        mask = slice_mask(alloc.definition, frame)
        for row_i in np.flatnonzero(mask) if mask is not None else ():
            tags[row_i].append(allocation_key(alloc))
    out = []
    for i, row in enumerate(frame.to_dict("records")):
        label, pred = row.get(pick["label"]), row.get(pick["prediction"])
        out.append(to_jsonable({
            "uid": str(row[pick["id"]]) if pick["id"] else f"{series}-r{number}-{i}",
            "context": {c: row.get(c) for c in contexts},
            "label": label, "tags": tags[i],
            "metadata": {"series": series, "round": number, "model": model, "prediction": pred,
                         "model_wrong": None if label is None or pred is None else str(label) != str(pred),
                         "validated": row.get(vcol) if vcol else None,
                         "annotator_id": row.get(pick["annotator"]) if pick["annotator"] else None}}))
    return out


def to_jsonl(frame, columns, **kw) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in _records(frame, columns, **kw))


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list):
        value = "; ".join(map(str, value))
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def to_csv(frame, columns, **kw) -> str:
    records = _records(frame, columns, **kw)
    contexts = [c["name"] for c in columns if c["role"] == "context"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(CSV_FIXED) + contexts)
    for r in records:
        meta = r["metadata"]
        fixed = [r["uid"], meta["round"], r["label"], meta["prediction"], meta["model_wrong"], meta["validated"],
                 meta["annotator_id"], r["tags"]]
        writer.writerow([_cell(v) for v in fixed + [r["context"].get(c) for c in contexts]])
    return out.getvalue()
