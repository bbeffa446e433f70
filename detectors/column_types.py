"""Column typing, frame validation and model encoding shared by the covariate detectors.

Type rules (learned on the reference frame only, so that a changed column is a shift and
not a new type):

* ``bool`` / pandas ``boolean`` dtype -> ``boolean``;
* numeric dtype -> ``numeric``, except when it has at most ``discrete_max_unique`` distinct
  reference values: then ``categorical`` (a KS test on a 0/1 or 1..5 column is needlessly
  conservative; the chi-square test on its counts is exact in spirit and more powerful);
* object / string / category dtype -> ``categorical`` when it has at most
  ``categorical_max_unique`` distinct reference values, else excluded as
  ``high_cardinality`` (identifiers and free text are not distributions to compare);
* datetime / timedelta / period -> excluded as ``datetime``; anything else -> excluded as
  ``unsupported_dtype``.

>>> import pandas as pd
>>> frame = pd.DataFrame({"age": [31.0, 45.5, 52.1, 28.3], "site": list("abab"),
...                       "flag": [True, False, True, True],
...                       "day": pd.to_datetime(["2024-01-01"] * 4)})
>>> types = infer_column_types(frame, discrete_max_unique=2)
>>> types.numeric, types.categorical, types.boolean
(('age',), ('site',), ('flag',))
>>> [(e.name, e.reason) for e in types.excluded]
[('day', 'datetime')]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from detectors.base import DetectorInputError, Result

__all__ = [
    "ColumnTypes",
    "ExcludedColumn",
    "TabularEncoder",
    "category_counts",
    "check_frame",
    "check_same_columns",
    "finite_columns",
    "finite_matrix",
    "infer_column_types",
]


@dataclass(frozen=True)
class ExcludedColumn(Result):
    """A column that was not tested, and why (``datetime``, ``high_cardinality``, ...)."""

    name: str
    reason: str


@dataclass(frozen=True)
class ColumnTypes(Result):
    """Column names per tested type, plus the excluded ones."""

    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    boolean: tuple[str, ...]
    excluded: tuple[ExcludedColumn, ...]

    @property
    def tested(self) -> tuple[str, ...]:
        return self.numeric + self.categorical + self.boolean


def check_frame(frame, *, role: str) -> pd.DataFrame:
    """Validate that ``frame`` is a non-empty DataFrame with unique string column names."""
    if not isinstance(frame, pd.DataFrame):
        raise DetectorInputError(f"The {role} data must be a pandas DataFrame, got {type(frame).__name__}.")
    if frame.shape[1] == 0:
        raise DetectorInputError(f"The {role} frame has no columns.")
    if frame.shape[0] == 0:
        raise DetectorInputError(f"The {role} frame is empty (0 rows).")
    duplicated = frame.columns[frame.columns.duplicated()].tolist()
    if duplicated:
        raise DetectorInputError(f"The {role} frame has duplicated column names: {duplicated}.")
    if not all(isinstance(c, str) for c in frame.columns):
        frame = frame.rename(columns=str)
    return frame


def check_same_columns(expected, frame: pd.DataFrame, *, role: str = "current") -> None:
    """Raise naming the missing and unexpected columns when ``frame`` differs from ``expected``."""
    expected = list(expected)
    present = set(frame.columns)
    missing = [c for c in expected if c not in present]
    extra = [c for c in frame.columns if c not in set(expected)]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"unexpected columns {extra}")
        raise DetectorInputError(f"The {role} frame does not match the reference: " + "; ".join(parts) + ".")


def finite_matrix(frame: pd.DataFrame, columns, *, role: str) -> np.ndarray:
    """Numeric columns as a new C-contiguous float array of shape (n_columns, n_rows).

    NaN is kept (it means "missing"); +/-inf is an error naming the columns, because an
    infinite value has no place in a distribution distance and usually signals a bug upstream.
    """
    columns = list(columns)
    if not columns:
        return np.empty((0, len(frame)))
    try:  # always a new array: callers sort it in place; filled a column at a time (no transposed copy)
        matrix = np.empty((len(columns), len(frame)))
        for i, column in enumerate(columns):
            matrix[i] = _as_float(frame[column])
    except (TypeError, ValueError):
        _raise_non_numeric(frame, columns, role)
    _check_finite(columns, matrix, role)
    return matrix


def finite_columns(frame: pd.DataFrame, columns, *, role: str) -> list[np.ndarray]:
    """The numeric ``columns`` as float arrays, checked as :func:`finite_matrix` checks them, for
    callers that take one column at a time: float64 columns are the frame's own arrays (read them,
    never write), others converted copies."""
    columns = list(columns)
    try:
        arrays = [_as_float(frame[column]) for column in columns]
    except (TypeError, ValueError):
        _raise_non_numeric(frame, columns, role)
    _check_finite(columns, arrays, role)
    return arrays


def _as_float(series: pd.Series) -> np.ndarray:
    # float64 columns already hold NaN for missing: as they are (na_value would scan and copy each
    # million-row column once more); other dtypes are converted
    return series.to_numpy() if series.dtype == np.float64 else series.to_numpy(dtype=float, na_value=np.nan)


def _raise_non_numeric(frame: pd.DataFrame, columns: list, role: str):
    bad = [c for c in columns if not _is_numeric_like(frame[c])]
    raise DetectorInputError(f"The {role} frame has non-numeric values in numeric columns {bad}.") from None


def _check_finite(columns: list, arrays, role: str) -> None:
    bad = [c for c, values in zip(columns, arrays) if np.isinf(values).any()]  # a row at a time: no matrix of flags
    if bad:
        raise DetectorInputError(f"The {role} frame has infinite values in columns {bad}; "
                                 "replace them by NaN (missing) or finite values.")


def _is_numeric_like(column: pd.Series) -> bool:
    try:
        column.to_numpy(dtype=float, na_value=np.nan)
        return True
    except (TypeError, ValueError):
        return False


def _distinct_count(series: pd.Series) -> int | None:
    try:
        return int(series.nunique(dropna=True))
    except TypeError:  # unhashable cells (lists, dicts) are no categories
        return None


def category_counts(column: pd.Series) -> pd.Series:
    """Counts of the non-missing values of ``column`` (zero counts of a categorical dtype dropped)."""
    counts = column.value_counts(dropna=True, sort=False)
    counts = counts[counts > 0]
    if not isinstance(counts.index.dtype, np.dtype) or counts.index.dtype.kind not in "biufO":
        counts.index = counts.index.astype(object)
    return counts


def _counts_or_none(column: pd.Series) -> pd.Series | None:
    try:
        return category_counts(column)
    except TypeError:  # unhashable cells (lists, dicts) are no categories
        return None


def infer_column_types(frame: pd.DataFrame, *, categorical_max_unique: int = 100, discrete_max_unique: int = 5,
                       counts: dict | None = None) -> ColumnTypes:
    """Split the columns of a reference ``frame`` into numeric / categorical / boolean / excluded.

    When ``counts`` is a dict, the value counts computed along the way (for every
    categorical and boolean column) are stored in it, so callers need not count twice.
    """
    numeric: list[str] = []
    categorical: list[str] = []
    boolean: list[str] = []
    excluded: list[ExcludedColumn] = []
    found: dict[str, pd.Series] = {}
    for name in frame.columns:
        column = frame[name]
        dtype = column.dtype
        if ptypes.is_bool_dtype(dtype):
            boolean.append(name)
            found[name] = category_counts(column)
        elif ptypes.is_datetime64_any_dtype(dtype) or ptypes.is_timedelta64_dtype(dtype) \
                or isinstance(dtype, pd.PeriodDtype):
            excluded.append(ExcludedColumn(name, "datetime"))
        elif ptypes.is_numeric_dtype(dtype) and not ptypes.is_complex_dtype(dtype):
            # A prefix with many distinct values settles it without hashing the whole column.
            if (_distinct_count(column.iloc[:256]) or 0) > discrete_max_unique:
                numeric.append(name)
                continue
            values = category_counts(column)
            (categorical if len(values) <= discrete_max_unique else numeric).append(name)
            found[name] = values
        elif isinstance(dtype, pd.CategoricalDtype) or ptypes.is_object_dtype(dtype) \
                or ptypes.is_string_dtype(dtype):
            values = _counts_or_none(column)
            if values is None:
                excluded.append(ExcludedColumn(name, "unsupported_values"))
            elif len(values) > categorical_max_unique:
                excluded.append(ExcludedColumn(name, "high_cardinality"))
            else:
                categorical.append(name)
                found[name] = values
        else:
            excluded.append(ExcludedColumn(name, "unsupported_dtype"))
    if counts is not None:
        counts.update({name: found[name] for name in categorical + boolean})
    return ColumnTypes(tuple(numeric), tuple(categorical), tuple(boolean), tuple(excluded))


class TabularEncoder:
    """Encode mixed frames as one numeric matrix for multivariate tests (classifier, MMD).

    Numeric columns are standardised with the reference mean and standard deviation
    (missing -> 0, i.e. the reference mean); categorical and boolean columns are one-hot
    encoded over their ``max_categories`` most frequent reference values plus one
    ``other`` column (unseen and rare values). A missing-value indicator is added for every
    column with a missing value in either sample, decided on the pooled data so that the
    encoding is the same under any relabelling of rows (permutation tests stay exact).

    >>> import pandas as pd
    >>> ref = pd.DataFrame({"x": [0.0, 1.0, 2.0, None], "c": ["a", "b", "a", "a"]})
    >>> enc = TabularEncoder(max_categories=5).fit(ref, ColumnTypes(("x",), ("c",), (), ()))
    >>> a, b = enc.transform_pair(ref, ref)
    >>> a.shape, enc.feature_names_
    ((4, 5), ['x', 'x=<missing>', 'c=a', 'c=b', 'c=<other>'])
    """

    def __init__(self, *, max_categories: int = 20):
        self.max_categories = max_categories

    def fit(self, reference: pd.DataFrame, types: ColumnTypes) -> "TabularEncoder":
        self.types_ = types
        matrix = finite_matrix(reference, types.numeric, role="reference")
        with np.errstate(invalid="ignore"):
            self.mean_ = np.nanmean(matrix, axis=1) if matrix.size else np.empty(0)
            std = np.nanstd(matrix, axis=1) if matrix.size else np.empty(0)
        self.scale_ = np.where(np.isfinite(std) & (std > 0), std, 1.0)
        self.categories_ = {}
        for name in types.categorical + types.boolean:
            counts = reference[name].value_counts(dropna=True)
            self.categories_[name] = list(counts.index[: self.max_categories])
        return self

    def _missing_columns(self, *frames: pd.DataFrame) -> list[str]:
        names = self.types_.tested
        return [c for c in names if any(f[c].isna().any() for f in frames)]

    def transform_pair(self, reference: pd.DataFrame, current: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Encode both frames with the same columns; returns arrays (n_ref, d) and (n_cur, d)."""
        with_missing = set(self._missing_columns(reference, current))
        self.feature_names_ = self._names(with_missing)
        return self._encode(reference, with_missing), self._encode(current, with_missing)

    def _names(self, with_missing: set[str]) -> list[str]:
        names = []
        for name in self.types_.numeric:
            names += [name] + ([f"{name}=<missing>"] if name in with_missing else [])
        for name in self.types_.categorical + self.types_.boolean:
            names += [f"{name}={v}" for v in self.categories_[name]] + [f"{name}=<other>"]
            names += [f"{name}=<missing>"] if name in with_missing else []
        return names

    def _encode(self, frame: pd.DataFrame, with_missing: set[str]) -> np.ndarray:
        parts = []
        matrix = finite_matrix(frame, self.types_.numeric, role="input")
        for j, name in enumerate(self.types_.numeric):
            values = (matrix[j] - self.mean_[j]) / self.scale_[j]
            missing = np.isnan(values)
            parts.append(np.where(missing, 0.0, values))
            if name in with_missing:
                parts.append(missing.astype(float))
        for name in self.types_.categorical + self.types_.boolean:
            column = frame[name]
            known = self.categories_[name]
            codes = pd.Categorical(column, categories=known).codes  # -1 for unseen and missing
            missing = column.isna().to_numpy()
            one_hot = np.zeros((len(frame), len(known) + 1))
            rows = np.arange(len(frame))
            one_hot[rows[codes >= 0], codes[codes >= 0]] = 1.0
            one_hot[(codes < 0) & ~missing, len(known)] = 1.0
            parts.extend(one_hot.T)
            if name in with_missing:
                parts.append(missing.astype(float))
        if not parts:
            return np.empty((len(frame), 0))
        return np.column_stack(parts)
