"""Context derived from images: how a pack maps derived image values to its context columns.

A pack's ``derived:`` block names, per context column, the derived value it comes from
(``from:``, e.g. ``img_brightness``) and how it is turned into the column's values:

* ``bins: [[low, high, label], ...]`` — half-open ranges ``[low, high)`` to labels;
* ``map: {value: label}`` — value by value (e.g. an ITA category to a skin-tone level);
* neither — the value as it is (numeric columns).

A derived value that falls outside every bin, outside the map or outside the column's
declared range becomes missing: a derived value never makes an upload invalid. A column
the user supplied wins: :func:`derive_context` only fills columns that are absent.

>>> import pandas as pd
>>> rule = DerivedContext.model_validate({"from": "img_brightness",
...                                       "bins": [[0, 35, "dim"], [35, 101, "normal"]]})
>>> rule.apply(pd.Series([10.0, 50.0, 200.0])).tolist()
['dim', 'normal', None]
"""
from __future__ import annotations

from typing import Union

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["DerivedContext", "derive_context"]

Scalar = Union[bool, int, float, str]


class DerivedContext(BaseModel):
    """How one context column is derived from one derived image value."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    source: str = Field(alias="from", pattern=r"^[a-z][a-z0-9_]*$")
    bins: tuple[tuple[float, float, Scalar], ...] | None = None
    map: dict[str, Scalar] | None = None

    @model_validator(mode="after")
    def _one_rule(self) -> "DerivedContext":
        if self.bins is not None and self.map is not None:
            raise ValueError("give 'bins' or 'map', not both")
        for low, high, _ in self.bins or ():
            if not low < high:
                raise ValueError(f"bins: [{low}, {high}) is empty (low must be < high)")
        edges = sorted((low, high) for low, high, _ in self.bins or ())
        for (_, high), (low, _) in zip(edges, edges[1:]):
            if low < high:
                raise ValueError(f"bins: ranges overlap at {low}")
        return self

    def labels(self) -> tuple[Scalar, ...]:
        """The values this rule can produce (empty for a pass-through)."""
        if self.bins is not None:
            return tuple(label for _, _, label in self.bins)
        return tuple(self.map.values()) if self.map is not None else ()

    def apply(self, values: pd.Series) -> pd.Series:
        """The context values for derived ``values`` (missing where no rule applies)."""
        if self.bins is not None:
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
            out = np.full(len(values), None, dtype=object)
            for low, high, label in self.bins:
                out[(numbers >= low) & (numbers < high)] = label
            return pd.Series(out, index=values.index, dtype=object)
        if self.map is not None:
            return values.map(lambda v: self.map.get(str(v)) if v is not None else None).astype(object)
        return values


def derive_context(frame: pd.DataFrame, derived: dict[str, DerivedContext],
                   ranges: dict[str, tuple[float | None, float | None]] | None = None
                   ) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Add each derived context column absent from ``frame`` whose source is present.

    Parameters
    ----------
    frame : DataFrame of shape (n_rows, n_columns)
    derived : dict
        Context column -> :class:`DerivedContext` (a pack's ``derived`` block).
    ranges : dict, optional
        Context column -> declared (min, max); values outside become missing.

    Returns
    -------
    frame : DataFrame of shape (n_rows, n_columns + n_added)
        A new frame (``frame`` is not modified).
    added : tuple of str
        The columns added, in ``derived`` order.
    """
    out, added = frame, []
    for column, rule in derived.items():
        if column in frame.columns or rule.source not in frame.columns:
            continue  # the user's own column wins; nothing to derive it from
        values = rule.apply(frame[rule.source])
        low, high = (ranges or {}).get(column, (None, None))
        if low is not None or high is not None:
            numbers = pd.to_numeric(values, errors="coerce")
            inside = numbers.between(-np.inf if low is None else low, np.inf if high is None else high)
            values = numbers.where(inside)
        if out is frame:
            out = frame.copy()
        out[column] = values
        added.append(column)
    return out, tuple(added)
