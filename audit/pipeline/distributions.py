"""Small, JSON-ready distribution summaries of the compared columns, for the report's
histograms (the report holds aggregates, never raw rows).

Per numeric column: shared bin edges (from both datasets together, so the two histograms are
comparable bar by bar) and each side's counts, plus the rows below/above the binned range and
the missing rows. Per categorical column: the most frequent categories over both datasets,
each side's counts, and everything else as ``other``. Sizes are bounded whatever the data
(at most ``max_bins`` bins, ``max_categories`` categories, category names of ``max_label``
characters), so the AuditResult stays small on wide data.

>>> import pandas as pd
>>> b = pd.DataFrame({"age": [20, 30, 40, 50], "site": ["a", "a", "b", "c"]})
>>> p = pd.DataFrame({"age": [60, 70, 80, 90], "site": ["a", "d", "d", "d"]})
>>> d = feature_distributions(b, p, ["age", "site"])
>>> d["age"]["type"], sum(d["age"]["benchmark"]), sum(d["age"]["production"])
('numeric', 4, 4)
>>> d["site"]["categories"], d["site"]["benchmark"], d["site"]["production"]
(['a', 'd', 'b', 'c'], [2, 0, 1, 1], [1, 3, 0, 0])
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["feature_distributions"]

_TAIL = 0.005  # bins cover the central 99 % of both datasets; the tails are counted apart


def feature_distributions(benchmark: pd.DataFrame, production: pd.DataFrame, columns: Sequence[str], *,
                          max_bins: int = 20, max_categories: int = 10, max_label: int = 80,
                          categorical: Collection[str] = ()) -> dict[str, dict]:
    """Histogram-ready aggregates for each of ``columns`` present in both frames.

    Parameters
    ----------
    benchmark, production : DataFrame of shape (n_rows, n_columns)
    columns : sequence of str
        Columns to summarise; those missing from either frame are skipped.
    max_bins : int
        Most bins for a numeric column (fewer when the data have fewer distinct values).
    max_categories : int
        Most categories listed for a categorical column; the rest are pooled as ``other``.
    max_label : int
        Category names are cut to this many characters (a name can be a 100 kB string).
    categorical : collection of str
        Columns summarised as categories whatever their type: numbers the input test compared as
        categories (a year of 7 values), drawn as it tested them, in the order of their values.

    Returns
    -------
    dict
        ``{column: summary}``; a numeric summary is ``{"type": "numeric", "edges": [k + 1],
        "benchmark": [k], "production": [k], "below": {side: n}, "above": {side: n},
        "missing": {side: n}, "n": {side: n}}``; a categorical one is ``{"type":
        "categorical", "categories": [k], "benchmark": [k], "production": [k], "other": {side:
        n}, "missing": {side: n}, "n": {side: n}}``. Only Python ints, floats and strs.
    """
    for name, value in (("max_bins", max_bins), ("max_categories", max_categories), ("max_label", max_label)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    out: dict[str, dict] = {}
    for column in columns:
        if column not in benchmark.columns or column not in production.columns:
            continue
        b, p = benchmark[column], production[column]
        numeric = _is_numeric(b) and _is_numeric(p)
        if numeric and column in categorical:
            out[str(column)] = _categorical(b, p, max_categories, max_label, by_value=True)
            continue
        out[str(column)] = (_numeric(b, p, max_bins) if numeric
                            else _categorical(b, p, max_categories, max_label))
    return out


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _sides(b, p) -> dict[str, Any]:
    return {"benchmark": int(b), "production": int(p)}


def _numeric(b: pd.Series, p: pd.Series, max_bins: int) -> dict:
    bv = pd.to_numeric(b, errors="coerce").to_numpy(dtype=float)
    pv = pd.to_numeric(p, errors="coerce").to_numpy(dtype=float)
    bf, pf = bv[np.isfinite(bv)], pv[np.isfinite(pv)]
    both = np.concatenate([bf, pf])
    summary = {"type": "numeric", "n": _sides(len(bv), len(pv)),
               "missing": _sides(len(bv) - len(bf), len(pv) - len(pf))}
    if both.size == 0:
        return {**summary, "edges": [], "benchmark": [], "production": [],
                "below": _sides(0, 0), "above": _sides(0, 0)}
    # trim the tails only when there are enough rows for them to be tails, not the data
    tail = _TAIL if both.size * _TAIL >= 1 else 0.0
    lo, hi = (float(v) for v in np.quantile(both, [tail, 1 - tail]))
    if lo == hi:  # (almost) constant: widen so that the value sits in one bin
        lo, hi = float(both.min()), float(both.max())
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    distinct = _distinct_up_to(both[(both >= lo) & (both <= hi)], max_bins)
    n_bins = min(max_bins, max(distinct, 1))
    edges = np.linspace(lo, hi, n_bins + 1)
    # equal-width bins given as a count and range: numpy bins each value arithmetically against these
    # same edges (np.linspace(lo, hi, n_bins + 1)), where an array of edges would sort every value
    counts = {side: np.histogram(values[(values >= lo) & (values <= hi)], bins=n_bins, range=(lo, hi))[0]
              for side, values in (("benchmark", bf), ("production", pf))}
    return {**summary, "edges": [_round(e) for e in edges],
            "benchmark": [int(c) for c in counts["benchmark"]], "production": [int(c) for c in counts["production"]],
            "below": _sides((bf < lo).sum(), (pf < lo).sum()), "above": _sides((bf > hi).sum(), (pf > hi).sum())}


def _distinct_up_to(values: np.ndarray, limit: int, head: int = 10_000) -> int:
    """The number of distinct ``values``, or any number >= ``limit`` once there are that many: a
    continuous column shows ``limit`` distinct values in its first rows, so the million-row sort
    is left to columns with few levels (the answer is the same: only ``min(limit, distinct)`` is used)."""
    seen = np.unique(values[:head]).size
    return seen if seen >= limit else np.unique(values).size


def _round(value: float) -> float:
    return float(f"{value:.6g}")  # six significant digits: enough to draw, small in JSON


def _categorical(b: pd.Series, p: pd.Series, max_categories: int, max_label: int, by_value: bool = False) -> dict:
    bc = _as_text(b.dropna(), by_value).value_counts()
    pc = _as_text(p.dropna(), by_value).value_counts()
    total = bc.add(pc, fill_value=0)
    # most frequent over both datasets first; ties by name so the order is reproducible
    top = sorted(total.index, key=lambda v: (-total[v], v))[:max_categories]
    if by_value:  # the categories kept, in the order of their values (years in time order)
        top = sorted(top, key=float)
    bench = [int(bc.get(v, 0)) for v in top]
    prod = [int(pc.get(v, 0)) for v in top]
    return {"type": "categorical", "categories": [_label(v, max_label) for v in top],
            "benchmark": bench, "production": prod, "n": _sides(len(b), len(p)),
            "other": _sides(int(bc.sum()) - sum(bench), int(pc.sum()) - sum(prod)),
            "missing": _sides(int(b.isna().sum()), int(p.isna().sum()))}


def _as_text(values: pd.Series, numbers: bool) -> pd.Series:
    """Category names; ``numbers``: a whole float as an integer (2003, not 2003.0)."""
    if not numbers:
        return values.astype(str)
    return values.map(lambda v: str(int(v)) if float(v).is_integer() else str(v))


def _label(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"
