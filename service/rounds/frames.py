"""A round's stored table in one standard shape, and the checks a round must pass to join a series.

A round dataset holds ``label``, ``prediction`` (the model under test at that round), context
columns and optionally ``validated`` and ``annotator_id``. When several annotators labelled the
same item (repeated ``id``), the item's label is the majority label and the raw rows are kept
for the agreement statistics.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from service.errors import InvalidRequest

VALIDATED_NAMES = ("validated", "is_validated", "validation")
_TRUE = {"true", "t", "yes", "y", "1", "1.0"}
_FALSE = {"false", "f", "no", "n", "0", "0.0"}


@dataclass(frozen=True)
class RoundTable:
    """One round in standard form.

    Attributes
    ----------
    items : DataFrame of shape (n_items, 3 + n_context [+ 1])
        One row per item: ``y`` (label, str), ``y_pred`` (str), ``validated`` (bool or NA when
        the round has no validation column), the context columns and ``score`` when present.
    annotations : DataFrame of shape (n_labels, 3) or None
        ``(item_id, annotator_id, label)`` from the raw rows, when the round names annotators.
    contexts : tuple of str
        Context columns (by role) present in the round.
    has_validation : bool
    n_dropped : int
        Raw rows without a label or a prediction (not counted anywhere).
    """

    items: pd.DataFrame
    annotations: pd.DataFrame | None
    contexts: tuple[str, ...]
    has_validation: bool
    n_dropped: int


def roles_of(columns: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    return {c["name"]: c["role"] for c in columns}


def _first(roles: Mapping[str, str], role: str) -> str | None:
    return next((name for name, r in roles.items() if r == role), None)


def validation_column(roles: Mapping[str, str]) -> str | None:
    return next((name for name in roles if name.lower() in VALIDATED_NAMES), None)


def require_labelled(roles: Mapping[str, str], dataset_id: str) -> tuple[str, str]:
    """Names of the label and prediction columns; 422 when either is missing."""
    label, prediction = _first(roles, "label"), _first(roles, "prediction")
    if label is None or prediction is None:
        missing = [r for r, c in (("label", label), ("prediction", prediction)) if c is None]
        raise InvalidRequest(
            f"Dataset {dataset_id!r} has no {' and no '.join(missing)} column: a round needs the labels and "
            "the predictions of the model under test at that round.", code="round_not_labelled",
            details={"dataset": dataset_id, "missing": missing})
    return label, prediction


def _as_validated(values: pd.Series, labels: pd.Series) -> pd.Series:
    """A boolean flag as given, or, when the column holds labels, "the validators confirmed the label"."""
    text = values.astype("string").str.strip().str.lower()
    known = text.dropna()
    if len(known) and known.isin(_TRUE | _FALSE).all():
        return text.isin(_TRUE).fillna(False).astype(bool)
    return (values.notna() & (values.astype(str) == labels.astype(str))).astype(bool)


def round_table(frame: pd.DataFrame, roles: Mapping[str, str], dataset_id: str = "") -> RoundTable:
    """Standardise a round's table (see :class:`RoundTable`)."""
    label, prediction = require_labelled(roles, dataset_id)
    keep = frame[label].notna() & frame[prediction].notna()
    raw = frame.loc[keep].reset_index(drop=True)
    contexts = tuple(c for c, r in roles.items() if r == "context" and c in raw.columns)
    vcol, id_col, ann_col, score = (validation_column(roles), _first(roles, "id"), _first(roles, "annotator"),
                                    _first(roles, "score"))
    items = pd.DataFrame({"y": raw[label].astype(str), "y_pred": raw[prediction].astype(str)})
    items["validated"] = _as_validated(raw[vcol], raw[label]) if vcol else pd.NA
    for c in contexts:
        items[c] = raw[c]
    if score is not None and pd.api.types.is_numeric_dtype(raw[score]):
        items["score"] = raw[score].astype(float)
    item_ids = raw[id_col].astype(str) if id_col else pd.Series(np.arange(len(raw)).astype(str))
    annotations = None
    if ann_col is not None:
        annotations = pd.DataFrame({"item_id": item_ids, "annotator_id": raw[ann_col].astype(str),
                                    "label": items["y"]})[raw[ann_col].notna().to_numpy()]
        annotations = annotations.drop_duplicates(["item_id", "annotator_id"]).reset_index(drop=True)
    items = _one_row_per_item(items, item_ids)
    return RoundTable(items, annotations, contexts, vcol is not None, int((~keep).sum()))


def _one_row_per_item(items: pd.DataFrame, item_ids: pd.Series) -> pd.DataFrame:
    """Majority label per item (ties: the first label given); other columns from the item's first row."""
    if not item_ids.duplicated().any():
        return items.reset_index(drop=True)
    items = items.assign(_item=item_ids.to_numpy())
    votes = items.groupby(["_item", "y"], sort=False).size().rename("votes").reset_index()
    majority = votes.sort_values("votes", ascending=False, kind="stable").drop_duplicates("_item")
    first = items.drop_duplicates("_item").drop(columns="y")
    merged = first.merge(majority[["_item", "y"]], on="_item", how="left")
    return merged.drop(columns="_item")[list(items.columns.drop("_item"))].reset_index(drop=True)


def _text(value: Any) -> str:
    """Compare values as text, with 5.0 read as 5 (an integer column with a gap becomes float)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def check_domain(table: RoundTable, pack: Any, dataset_id: str) -> None:
    """422 when the round's labels or context values contradict the series' domain pack."""
    faults: list[dict[str, Any]] = []
    if pack.classes:
        alien = sorted(set(table.items["y"]) - {str(c) for c in pack.classes})
        if alien:
            faults.append({"column": "label", "unexpected": alien[:10], "allowed": list(pack.classes)})
    for column in pack.context:
        if column.name not in table.items.columns:
            continue
        values = table.items[column.name].dropna()
        if column.values is not None:
            allowed = {_text(v) for v in column.values}
            alien = sorted({_text(v) for v in values.unique()} - allowed)
            if alien:
                faults.append({"column": column.name, "unexpected": alien[:10], "allowed": sorted(allowed)})
        elif column.type == "numeric" and len(values):
            numeric = pd.to_numeric(values, errors="coerce")
            outside = pd.Series(False, index=numeric.index)
            if column.min is not None:
                outside |= numeric < column.min
            if column.max is not None:
                outside |= numeric > column.max
            if outside.any():
                faults.append({"column": column.name, "unexpected": numeric[outside].head(5).tolist(),
                               "range": [column.min, column.max]})
    if faults:
        first = faults[0]
        raise InvalidRequest(
            f"Dataset {dataset_id!r} contradicts the series' domain {pack.name!r}: column {first['column']!r} has "
            f"values {first['unexpected']} the domain does not allow.", code="round_contradicts_domain",
            details={"dataset": dataset_id, "domain": pack.name, "faults": faults})
