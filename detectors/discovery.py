"""Automatic discovery of weak slices: conjunctions of context conditions with high error.

Every context column is encoded once into integer *conditions*: each category value
(``col == v``; at most ``max_categories`` most frequent values, the rest never form a
condition), undeclared numeric columns with few values likewise, other numeric columns (and
every column declared numeric) binned at quantiles of the ``reference`` data — the benchmark,
which stays fixed across a monitor's runs — rounded to three significant digits
(``q1 <= col < q2``), and missing values (``col is missing``). Edges taken from each run's own
rows would move with every draw, so the same population would get a new definition (and key)
in every audit; edges from the reference give it the same one. Candidates are all single conditions and
all conjunctions of up to ``max_conditions`` conditions on distinct columns. Their sizes and error counts come from
one ``np.bincount`` per column combination — no loop over rows or over candidates.

Each candidate with at least ``min_support`` rows inside and outside is tested one-sided,
"error rate in the slice > error rate in the rest", with the exact conditional test (Fisher's:
given the total error count, the slice's errors are hypergeometric under "errors do not
depend on the slice"; the normal approximation is anti-conservative for small slices with
rare errors); ``statistic`` is the pooled two-proportion z, for reading. Benjamini–Hochberg controls the
false discovery rate across **all** tested candidates.
A candidate is *significant* when its adjusted p-value is below ``alpha`` and its error rate
exceeds the rest by at least ``min_gap``. Among significant candidates a conjunction is
reported only if it is worse than each of its sub-conjunctions by at least ``min_gap``
(otherwise a simpler slice already explains it). Reported slices are ranked by excess
errors, ``(error_rate - rest_error_rate) * n``.

Definitions are written in the slice-expression language of :mod:`domains.expressions` by
:mod:`slicelang` (names that are keywords or not plain identifiers in backticks, strings
double-quoted, ranges as chained comparisons), and every slice can rebuild its mask
on any frame with the same columns (:meth:`DiscoveredSlice.mask`).

Note: the slices are found on the data given; re-testing them on the same rows is
optimistic. Evaluate them on other rows (or the other dataset) for unbiased estimates.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from detectors.base import DetectorInputError, Result, check_alpha, check_correction, check_in, check_int, check_number
from detectors.correction import adjust_pvalues
from detectors.intervals import newcombe_interval, wilson_interval
from detectors.validation import as_mask
from slicelang import all_of, equals, in_range, is_missing

__all__ = ["Condition", "DiscoveredSlice", "DiscoveryResult", "discover_weak_slices"]


@dataclass(frozen=True)
class Condition(Result):
    """One condition on one column: ``==`` a value, a half-open numeric range, or missing."""

    column: str
    op: str  # "==" | "range" | "missing"
    value: Any = None
    low: float | None = None  # inclusive
    high: float | None = None  # exclusive

    @property
    def text(self) -> str:
        """The condition in the slice language (:mod:`slicelang` quotes names and values)."""
        if self.op == "missing":
            return is_missing(self.column)
        if self.op == "==":
            return equals(self.column, self.value)
        return in_range(self.column, self.low, self.high)

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        s = frame[self.column]
        if self.op == "missing":
            return s.isna().to_numpy()
        if self.op == "==":
            if s.dtype == object and isinstance(self.value, str):  # the same booleans, a third of the cost
                try:
                    return s.to_numpy() == self.value
                except TypeError:  # pd.NA among the values: the Series comparison handles it
                    pass
            return (s == self.value).fillna(False).to_numpy(dtype=bool)
        v = pd.to_numeric(s, errors="coerce").to_numpy(float)
        with np.errstate(invalid="ignore"):
            lo = np.ones(v.size, bool) if self.low is None else v >= self.low
            hi = np.ones(v.size, bool) if self.high is None else v < self.high
        return lo & hi & ~np.isnan(v)


@dataclass(frozen=True)
class DiscoveredSlice(Result):
    name: str
    definition: str
    conditions: tuple  # Condition
    n: int
    support: float
    error_rate: float
    error_rate_ci: tuple
    rest_error_rate: float
    gap: float  # error_rate - rest_error_rate
    gap_ci: tuple
    statistic: float
    p_value: float
    p_value_adjusted: float
    excess_errors: float
    source: str = "discovered"

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        """Rows of ``frame`` in this slice, shape ``(len(frame),)``."""
        return np.logical_and.reduce([c.mask(frame) for c in self.conditions])


@dataclass(frozen=True)
class DiscoveryResult(Result):
    slices: tuple  # DiscoveredSlice, most excess errors first
    n_candidates: int  # tested candidates (the BH family)
    n_significant: int  # before pruning redundant conjunctions
    n_rows: int
    error_rate: float
    alpha: float


def _encode_column(series: pd.Series, n_bins: int, max_categories: int, discrete_max_unique: int,
                   kind: str | None, reference: pd.Series | None = None) -> tuple[np.ndarray, list]:
    """Integer code per row and the Condition of each code (None: never a condition)."""
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    if kind == "numeric" or (kind is None and numeric and series.nunique(dropna=True) > discrete_max_unique):
        values = pd.to_numeric(series, errors="coerce")
        edges_from = values if reference is None else pd.to_numeric(reference, errors="coerce")
        return _encode_bins(values, values.isna().to_numpy(), n_bins, edges_from.dropna().to_numpy(float))
    missing = series.isna().to_numpy()
    # a text column without missing values is counted as it is (two copies of a million rows saved)
    values = series if series.dtype == object and not missing.any() else series.astype(object).where(~missing, None)
    # one hash of the rows: value_counts() is these counts in first-seen order sorted the same way
    # (same ties), and the codes of the most frequent values are a lookup, not a second hash
    seen, distinct = pd.factorize(values.to_numpy())
    counts = pd.Series(np.bincount(seen[seen >= 0], minlength=len(distinct)),
                       index=pd.Index(distinct, dtype=object)).sort_values(ascending=False)
    top = list(counts.index[:max_categories])
    position = np.full(len(distinct) + 1, len(top))  # the rest (and missing, -1 -> last): one code, no condition
    position[pd.Index(distinct, dtype=object).get_indexer(top)] = np.arange(len(top))
    codes = position[seen]
    conditions: list = [Condition(series.name, "==", _native(v)) for v in top]
    conditions.append(None)
    codes = np.where(missing, len(conditions), codes)
    conditions.append(Condition(series.name, "missing"))
    return codes, conditions


def _native(value):
    return value.item() if isinstance(value, np.generic) else value


def _encode_bins(series: pd.Series, missing: np.ndarray, n_bins: int,
                 edges_from: np.ndarray) -> tuple[np.ndarray, list]:
    """Bins at the quantiles of ``edges_from`` (the reference's values), rounded (:func:`_round_edge`)."""
    v = series.to_numpy(float)
    if edges_from.size == 0:
        edges_from = v[~missing]
    edges = np.quantile(edges_from, np.linspace(0, 1, n_bins + 1)[1:-1]) if edges_from.size else np.empty(0)
    edges = np.unique(np.array([_round_edge(e) for e in edges], dtype=float))
    codes = np.searchsorted(edges, np.where(missing, 0, v), side="right")
    bounds = [None, *edges.tolist(), None]
    conditions = [Condition(series.name, "range", low=bounds[i], high=bounds[i + 1]) for i in range(len(edges) + 1)]
    codes = np.where(missing, len(conditions), codes)
    conditions.append(Condition(series.name, "missing"))
    return codes, conditions


def _round_edge(x: float) -> float:
    """Round a bin edge to 3 significant digits so definitions stay readable."""
    return float(f"{x:.3g}")


def discover_weak_slices(context: pd.DataFrame, errors, *, max_conditions: int = 2, min_support: int = 30,
                         n_bins: int = 4, max_categories: int = 30, discrete_max_unique: int = 12,
                         min_gap: float = 0.05, alpha: float = 0.05, correction: str = "bh",
                         max_results: int = 50, column_types: Mapping[str, str] | None = None,
                         reference: pd.DataFrame | None = None) -> DiscoveryResult:
    """Find context conjunctions where the model errs more often than elsewhere.

    Parameters
    ----------
    context : DataFrame of shape (n, n_context_columns)
    errors : array-like of shape (n,), bool or 0/1 — 1 where the model was wrong
    max_conditions : 1, 2 or 3
    min_support : rows a candidate needs inside and outside to be tested
    n_bins : quantile bins of numeric columns with more than ``discrete_max_unique`` values
    min_gap : error-rate difference a slice needs over the rest (and over its sub-slices)
    column_types : optional declared types (``numeric`` / ``categorical`` / ``boolean``); a column
        declared numeric is binned whatever its number of values
    reference : DataFrame with the same columns, optional
        The benchmark: numeric bin edges are its quantiles, so that the same population gets the
        same definition in every run against it (default: the quantiles of ``context`` itself)

    Returns
    -------
    DiscoveryResult
    """
    if not isinstance(context, pd.DataFrame):
        raise DetectorInputError(f"context must be a DataFrame, got {type(context).__name__}.")
    e = as_mask("errors", errors, len(context))  # 1 = the model was wrong
    check_in("max_conditions", max_conditions, (1, 2, 3))
    check_int("min_support", min_support, minimum=1)
    check_int("n_bins", n_bins, minimum=1)
    check_int("max_categories", max_categories, minimum=1)
    check_int("discrete_max_unique", discrete_max_unique, minimum=0)
    check_number("min_gap", min_gap, minimum=0, maximum=1)
    check_alpha(alpha)
    check_correction(correction)
    check_int("max_results", max_results, minimum=1)
    if len(e) == 0 or context.shape[1] == 0:
        raise DetectorInputError("discovery needs at least one row and one context column.")
    e = e.astype(float)
    n, total_errors = len(e), float(e.sum())
    if reference is not None and (not isinstance(reference, pd.DataFrame)
                                  or [c for c in context.columns if c not in reference.columns]):
        raise DetectorInputError("reference must be a DataFrame with every column of context.")
    encoded = [_encode_column(context[c], n_bins, max_categories, discrete_max_unique, (column_types or {}).get(c),
                              None if reference is None else reference[c]) for c in context.columns]
    cand = _Candidates(encoded, e, max_conditions)
    counts, errs = cand.n, cand.errors
    testable = cand.valid & (counts >= min_support) & (n - counts >= min_support)
    rate = np.divide(errs, counts, out=np.zeros_like(errs), where=counts > 0)
    rest = np.divide(total_errors - errs, n - counts, out=np.zeros_like(errs), where=n - counts > 0)
    pooled = total_errors / n
    se = np.sqrt(pooled * (1 - pooled) * (1 / np.maximum(counts, 1) + 1 / np.maximum(n - counts, 1)))
    z = np.divide(rate - rest, se, out=np.zeros_like(rate), where=se > 0)
    # exact one-sided p-value given the total error count: P(X >= errors in slice), X hypergeometric
    p = np.full(counts.size, np.nan)
    idx = np.flatnonzero(testable)
    p[idx] = np.clip(stats.hypergeom.sf(np.rint(errs[idx]).astype(np.int64) - 1, n, int(round(total_errors)),
                                        counts[idx].astype(np.int64)), 0.0, 1.0)
    p_adj = adjust_pvalues(p, correction)
    significant = testable & (p_adj < alpha) & (rate - rest >= min_gap)
    keep = _prune(cand, significant, rate, min_gap)
    order = sorted(np.flatnonzero(keep), key=lambda i: -(rate[i] - rest[i]) * counts[i])[:max_results]
    slices = tuple(_describe(i, rank, cand.key(int(i)), encoded, counts, errs, n, total_errors, z, p, p_adj)
                   for rank, i in enumerate(order, start=1))
    return DiscoveryResult(slices, int(testable.sum()), int(significant.sum()), n,
                           total_errors / n if n else float("nan"), float(alpha))


class _Candidates:
    """Sizes and error counts of every conjunction, one ``np.bincount`` per column combination.

    Candidate ``i`` lives in the block of its column combination at position
    ``ravel_multi_index(parts, widths)``, so sub-conjunctions are found by arithmetic.
    """

    def __init__(self, encoded, e: np.ndarray, max_conditions: int):
        is_condition = [np.array([c is not None for c in conditions]) for _, conditions in encoded]
        wrong = np.flatnonzero(e)  # e is 0/1: error counts are counts of these rows, exact as the weighted sum
        self.blocks, sizes, errors, valid, offset = {}, [], [], [], 0
        for r in range(1, max_conditions + 1):
            for cols in itertools.combinations(range(len(encoded)), r):
                widths = tuple(len(encoded[c][1]) for c in cols)
                cells = int(np.prod(widths))
                code = np.zeros(len(e), dtype=np.int64)
                for c, w in zip(cols, widths):
                    code = code * w + encoded[c][0]
                sizes.append(np.bincount(code, minlength=cells))
                errors.append(np.bincount(code[wrong], minlength=cells))
                parts = np.unravel_index(np.arange(cells), widths)
                valid.append(np.logical_and.reduce([is_condition[c][k] for c, k in zip(cols, parts)]))
                self.blocks[cols] = (widths, offset)
                offset += cells
        self.n = np.concatenate(sizes).astype(float)
        self.errors = np.concatenate(errors).astype(float)
        self.valid = np.concatenate(valid) & (self.n > 0)
        self._starts = np.array([o for _, o in self.blocks.values()])
        self._cols = list(self.blocks)

    def key(self, i: int) -> tuple:
        """((column index, code), ...) of candidate ``i``."""
        cols = self._cols[int(np.searchsorted(self._starts, i, side="right")) - 1]
        widths, offset = self.blocks[cols]
        return tuple(zip(cols, (int(k) for k in np.unravel_index(i - offset, widths))))

    def index(self, key: tuple) -> int:
        cols = tuple(c for c, _ in key)
        widths, offset = self.blocks[cols]
        return offset + int(np.ravel_multi_index(tuple(k for _, k in key), widths))


def _prune(cand: _Candidates, significant: np.ndarray, rate: np.ndarray, min_gap: float) -> np.ndarray:
    """Drop conjunctions that are not worse than each sub-conjunction by ``min_gap``."""
    keep = significant.copy()
    for i in np.flatnonzero(significant):
        key = cand.key(int(i))
        subs = [cand.index(sub) for r in range(1, len(key)) for sub in itertools.combinations(key, r)]
        if any(rate[i] - rate[j] < min_gap for j in subs):
            keep[i] = False
    return keep


def _describe(i, rank, key, encoded, counts, errs, n, total_errors, z, p, p_adj) -> DiscoveredSlice:
    conditions = tuple(encoded[c][1][k] for c, k in key)
    k_in, n_in = float(errs[i]), float(counts[i])
    k_out, n_out = total_errors - k_in, n - n_in
    rate, rest = k_in / n_in, k_out / n_out
    return DiscoveredSlice(
        name=f"discovered_{rank}", definition=all_of(c.text for c in conditions), conditions=conditions,
        n=int(n_in), support=n_in / n, error_rate=rate, error_rate_ci=wilson_interval(k_in, n_in),
        rest_error_rate=rest, gap=rate - rest, gap_ci=newcombe_interval(k_out, n_out, k_in, n_in),
        statistic=float(z[i]), p_value=float(p[i]), p_value_adjusted=float(p_adj[i]),
        excess_errors=(rate - rest) * n_in)
