"""Mergeable summaries of data that never fits in memory: computed per partition, then merged.

Every summary is a frozen, picklable value with ``merge(other)`` returning a new summary;
``merge`` is associative and commutative (exactly for counts, up to floating-point rounding for
the moments, in distribution for the randomised sketch merge) and ``empty()`` is its identity, so
partitions may be summarised anywhere and combined in any order (a Dask tree reduction,
``functools.reduce``).

* :class:`NumericSummary` - exact ``n``, missing count, mean and ``M2`` (Chan, Golub & LeVeque's
  parallel update, exact up to floating-point rounding), min and max, plus an Apache DataSketches
  KLL quantile sketch. With ``k = 1000`` its normalized rank error is
  ``kll_doubles_sketch.get_normalized_rank_error(1000, False)`` = 0.278 %: the documented
  single-query bound at 99 % confidence. DataSketches fitted that constant to the 99th
  percentile of the *largest* rank error over each trial, and our own check agrees (300 trials,
  20k-300k values, 1-37 merged partitions, continuous and integer data: the largest CDF error
  over all points had 99th percentile 0.215 % and maximum 0.245 %), so it is used as a bound on
  ``sup_x |F_sketch(x) - F(x)|``. A sketch that never compacted (``n`` at most about ``k``)
  holds every value: its error is 0. KLL compaction is randomised with a seed DataSketches draws
  from the OS and does not expose, so sketch-derived numbers differ between runs within that
  error; every other number here is deterministic under ``random_state``. Beside the sketch it
  keeps the exact count of every distinct value while there are at most :data:`MAX_LEVELS` of
  them (integer columns such as an age in years): tests on such columns are then exact, with the
  tie-correct permutation p-value of the in-memory detector, and need no sketch bound.
* :class:`CategorySummary` - exact counts per category (keys canonicalised to ``str`` so that a
  partition read as ``int`` and one read as ``float`` agree: ``1`` and ``1.0`` are both ``"1"``).
* :class:`ConfusionSummary` / :class:`PredictionSummary` - exact (label, prediction) or
  predicted-class counts with optional Poisson-bootstrap replicates
  (:mod:`detectors.outcome_summaries`, re-exported here).
* :class:`DatasetSummary` - row count, one summary per column and named outcome summaries.

Missing values: NaN/None are counted in ``n_missing``; an infinite numeric value is an error,
as in the in-memory detectors (:func:`detectors.column_types.finite_matrix`).

Serialisation: plain pickle (the sketch is held as its DataSketches serialisation, mappings
as :class:`detectors.base.FrozenDict`); :meth:`DatasetSummary.to_bytes` wraps it. Unpickle only
bytes you wrote yourself.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(size=20_000)
>>> parts = [NumericSummary.from_values(p) for p in np.array_split(x, 10)]
>>> merged = NumericSummary.empty()
>>> for p in parts:
...     merged = merged.merge(p)
>>> merged.n, bool(np.isclose(merged.mean, x.mean())), bool(np.isclose(merged.std, x.std()))
(20000, True, True)
>>> round(merged.rank_error, 5), bool(abs(merged.cdf([0.0])[0] - (x <= 0).mean()) <= merged.rank_error)
(0.00278, True)
"""
from __future__ import annotations

import math
import pickle
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from datasketches import kll_doubles_sketch

from detectors.base import DetectorInputError, FrozenDict, check_int
from detectors.column_types import category_counts
from detectors.outcome_summaries import ConfusionSummary, PredictionSummary, summary_rng

__all__ = ["DEFAULT_K", "MAX_LEVELS", "NumericSummary", "CategorySummary", "ConfusionSummary", "PredictionSummary",
           "DatasetSummary", "category_key", "summary_rng"]

DEFAULT_K = 1000  # KLL accuracy: normalized rank error 0.278 % at 99 % confidence, about 20 kB
MAX_LEVELS = 5_000  # exact value counts kept up to this many distinct values (= univariate.TIED_MAX_LEVELS)


def _sketch(data: bytes) -> kll_doubles_sketch:
    return kll_doubles_sketch.deserialize(data)


def _empty_sketch(k: int) -> bytes:
    return kll_doubles_sketch(int(k)).serialize()


@dataclass(frozen=True)
class NumericSummary:
    """One numeric column: exact count, missing count, moments, range and a KLL sketch.

    ``std`` is the population standard deviation (``ddof=0``), as the in-memory detector uses.
    """

    n: int = 0
    n_missing: int = 0
    mean: float = 0.0
    m2: float = 0.0  # sum of squared deviations from the mean
    min: float = math.inf
    max: float = -math.inf
    k: int = DEFAULT_K
    sketch: bytes = field(default=b"", repr=False)  # kll_doubles_sketch.serialize()
    # exact value counts: float64 pairs (value, count) sorted by value, as bytes (compact to pickle
    # and hold); None once there are more than MAX_LEVELS distinct values
    levels: bytes | None = field(default=b"", repr=False)

    def __post_init__(self):
        if not self.sketch:
            object.__setattr__(self, "sketch", _empty_sketch(self.k))

    @classmethod
    def empty(cls, k: int = DEFAULT_K) -> "NumericSummary":
        return cls(k=int(k))

    @classmethod
    def from_values(cls, values, *, k: int = DEFAULT_K, name: str | None = None) -> "NumericSummary":
        """Summarise ``values`` (array-like of shape (n,)); NaN/None are missing, +/-inf an error."""
        if isinstance(values, (pd.Series, pd.Index)):
            x = values.to_numpy(dtype=float, na_value=np.nan)
        else:
            x = np.asarray(values, dtype=float).ravel()
        if np.isinf(x).any():
            where = f" in column {name!r}" if name else ""
            raise DetectorInputError(f"Infinite values{where}; replace them by NaN (missing) or finite values.")
        valid = x[~np.isnan(x)]
        check_int("k", k, minimum=8)  # DataSketches' smallest k
        sketch = kll_doubles_sketch(int(k))
        if valid.size == 0:
            return cls(n_missing=int(x.size), k=int(k), sketch=sketch.serialize())
        sketch.update(np.ascontiguousarray(valid))
        mean = float(valid.mean())
        return cls(int(valid.size), int(x.size - valid.size), mean, float(((valid - mean) ** 2).sum()),
                   float(valid.min()), float(valid.max()), int(k), sketch.serialize(), _levels(valid))

    def merge(self, other: "NumericSummary") -> "NumericSummary":
        """Chan's exact update of the moments; the sketches merged (a new summary)."""
        missing = self.n_missing + other.n_missing
        if other.n == 0 or self.n == 0:
            return replace(self if other.n == 0 else other, n_missing=missing)
        n = self.n + other.n
        delta = other.mean - self.mean
        mean = self.mean + delta * other.n / n
        m2 = self.m2 + other.m2 + delta * delta * self.n * other.n / n
        sketch = _sketch(self.sketch)
        sketch.merge(_sketch(other.sketch))
        return NumericSummary(n, missing, mean, m2, min(self.min, other.min), max(self.max, other.max),
                              int(sketch.k), sketch.serialize(), _merge_levels(self.levels, other.levels))

    def level_counts(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(values, counts)``, shapes (levels,), sorted by value; None past :data:`MAX_LEVELS` values."""
        if self.levels is None:
            return None
        pairs = np.frombuffer(self.levels, dtype=np.float64).reshape(-1, 2)
        return pairs[:, 0].copy(), pairs[:, 1].astype(np.int64)

    @property
    def var(self) -> float:
        return self.m2 / self.n if self.n else float("nan")

    @property
    def std(self) -> float:
        return math.sqrt(self.var) if self.n else float("nan")

    @property
    def exact(self) -> bool:
        """True while the sketch holds every value (never compacted): its CDF is then exact."""
        return not _sketch(self.sketch).is_estimation_mode()

    @property
    def rank_error(self) -> float:
        """Normalized rank error of the CDF at 99 % confidence (0 in exact mode)."""
        sketch = _sketch(self.sketch)
        return float(sketch.normalized_rank_error(False)) if sketch.is_estimation_mode() else 0.0

    def items(self) -> np.ndarray:
        """Distinct values retained by the sketch, sorted; shape (r,). The CDF jumps only there.

        Only the values are read: the weights datasketches-python 5.2 iterates can be wrong after
        merges (seen after merging into an empty sketch), so CDFs always come from ``get_cdf``.
        """
        return np.unique(np.fromiter((v for v, _ in _sketch(self.sketch)), dtype=float))

    def cdf(self, points) -> np.ndarray:
        """Estimated ``P(X <= x)`` at ``points`` (any shape); NaN for an empty summary."""
        x = np.asarray(points, dtype=float)
        out = np.full(x.shape, np.nan)
        ok = ~np.isnan(x)
        if self.n == 0 or not ok.any():
            return out
        unique, inverse = np.unique(x[ok], return_inverse=True)
        values = np.asarray(_sketch(self.sketch).get_cdf(unique.tolist(), inclusive=True))[:-1]
        out[ok] = values[inverse]
        return out

    def quantiles(self, qs) -> np.ndarray:
        """Estimated quantiles (smallest retained value with CDF >= q) at ``qs`` in [0, 1]."""
        q = np.asarray(qs, dtype=float)
        if self.n == 0:
            return np.full(q.shape, np.nan)
        return np.asarray(_sketch(self.sketch).get_quantiles(q.ravel().tolist(), inclusive=True)).reshape(q.shape)


def _levels(valid: np.ndarray) -> bytes | None:
    # continuous columns overflow within their first values: decide on those before a full unique
    if np.unique(valid[: 2 * MAX_LEVELS + 1]).size > MAX_LEVELS:
        return None
    values, counts = np.unique(valid, return_counts=True)
    return None if values.size > MAX_LEVELS else _pairs(values, counts)


def _pairs(values: np.ndarray, counts: np.ndarray) -> bytes:
    # counts as float64 are exact below 2**53 rows
    return np.column_stack([values, counts]).astype(np.float64).tobytes()


def _merge_levels(a: bytes | None, b: bytes | None) -> bytes | None:
    if a is None or b is None:
        return None
    if not a or not b:
        return a or b
    pairs = np.frombuffer(a + b, dtype=np.float64).reshape(-1, 2)
    values, inverse = np.unique(pairs[:, 0], return_inverse=True)
    if values.size > MAX_LEVELS:
        return None
    return _pairs(values, np.bincount(inverse, weights=pairs[:, 1]))


def category_key(value: Any) -> str:
    """Canonical ``str`` of a category: ``True`` -> ``"True"``, ``1`` and ``1.0`` -> ``"1"``, ``0.5`` -> ``"0.5"``."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return str(int(f)) if f.is_integer() else repr(f)
    return str(value)


@dataclass(frozen=True)
class CategorySummary:
    """Exact counts per category: ``counts`` is a tuple of ``(key, count)`` pairs sorted by key."""

    counts: tuple = ()
    n_missing: int = 0

    @classmethod
    def empty(cls) -> "CategorySummary":
        return cls()

    @classmethod
    def from_values(cls, values) -> "CategorySummary":
        """Summarise a column (Series or array-like of shape (n,)); NaN/None are missing."""
        series = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object))
        try:
            counts = category_counts(series)
        except TypeError:
            raise DetectorInputError("Unhashable values (lists, dicts) are not categories.") from None
        merged: dict[str, int] = {}
        for value, count in counts.items():
            key = category_key(value)
            merged[key] = merged.get(key, 0) + int(count)
        return cls(tuple(sorted(merged.items())), int(len(series) - counts.sum()))

    def merge(self, other: "CategorySummary") -> "CategorySummary":
        merged = dict(self.counts)
        for key, count in other.counts:
            merged[key] = merged.get(key, 0) + count
        return CategorySummary(tuple(sorted(merged.items())), self.n_missing + other.n_missing)

    @property
    def n(self) -> int:
        """Non-missing values."""
        return int(sum(c for _, c in self.counts))

    @property
    def mapping(self) -> Mapping[str, int]:
        return FrozenDict(self.counts)

    def to_series(self) -> pd.Series:
        """Counts as the in-memory detectors hold them (index = category, object dtype)."""
        keys = [k for k, _ in self.counts]
        return pd.Series([c for _, c in self.counts], index=pd.Index(keys, dtype=object), dtype=np.int64)


@dataclass(frozen=True)
class DatasetSummary:
    """A dataset: row count, one summary per column, named outcome summaries ("overall", slices)."""

    n_rows: int = 0
    columns: Mapping[str, Any] = field(default_factory=dict)  # NumericSummary | CategorySummary
    outcomes: Mapping[str, Any] = field(default_factory=dict)  # ConfusionSummary | PredictionSummary

    def __post_init__(self):
        object.__setattr__(self, "columns", FrozenDict(self.columns))
        object.__setattr__(self, "outcomes", FrozenDict(self.outcomes))

    @classmethod
    def empty(cls) -> "DatasetSummary":
        return cls()

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, numeric: Sequence[str] = (), categorical: Sequence[str] = (),
                   k: int = DEFAULT_K, outcomes: Mapping[str, Any] | None = None) -> "DatasetSummary":
        """Summarise ``frame``'s ``numeric`` and ``categorical`` (incl. boolean) columns, in frame order."""
        wanted = set(numeric) | set(categorical)
        columns = {c: NumericSummary.from_values(frame[c].to_numpy(dtype=float, na_value=np.nan), k=k, name=c)
                   if c in set(numeric) else CategorySummary.from_values(frame[c])
                   for c in frame.columns if c in wanted}
        return cls(len(frame), columns, dict(outcomes or {}))

    def merge(self, other: "DatasetSummary") -> "DatasetSummary":
        if self.n_rows and other.n_rows and (set(self.columns) != set(other.columns)):
            raise DetectorInputError(f"Partitions summarise different columns: {sorted(self.columns)} and "
                                     f"{sorted(other.columns)}.")
        return DatasetSummary(self.n_rows + other.n_rows, _merge_maps(self.columns, other.columns),
                              _merge_maps(self.outcomes, other.outcomes))

    def to_bytes(self) -> bytes:
        return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def from_bytes(data: bytes) -> "DatasetSummary":
        """Inverse of :meth:`to_bytes` (pickle: trusted bytes only)."""
        value = pickle.loads(data)
        if not isinstance(value, DatasetSummary):
            raise DetectorInputError(f"Not a DatasetSummary: {type(value).__name__}.")
        return value


def _merge_maps(a: Mapping, b: Mapping) -> dict:
    out = dict(a)
    for key, value in b.items():
        out[key] = out[key].merge(value) if key in out else value
    return out
