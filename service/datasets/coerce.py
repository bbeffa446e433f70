"""One kind of value per column: what the Parquet store and the detectors can take.

JSON Lines (and Parquet) can mix ints, strings, objects and lists in one column, and hold
integers of any size; the Parquet write would then fail with a 500 after the upload was
accepted. Here each object column is classified once: numbers mixed with text become text
(the documented coercion), lists must all be numeric (an ``embedding`` column), and anything
else (nested objects, integers beyond int64, a list beside scalars) is a 422 that names the
column and the first rows at fault.
"""
from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from service.datasets.bounded import UploadLimits
from service.errors import InvalidRequest

INT64 = (-(2**63), 2**63 - 1)
SHOW_ROWS = 10


def _kind(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "bigint" if not INT64[0] <= int(value) <= INT64[1] else "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple, np.ndarray)):
        return "numlist" if all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value) \
            else "list"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (pd.Timestamp, np.datetime64)) or hasattr(value, "isoformat"):
        return "time"
    return type(value).__name__


def _fault(filename: str, column: str, kinds: pd.Series, bad: set[str], message: str) -> InvalidRequest:
    rows = [int(i) + 1 for i in kinds.index[kinds.isin(bad)][:SHOW_ROWS]]
    return InvalidRequest(f"File {filename!r}, column {column!r}: {message} (rows {rows}).",
                          code="invalid_column_type",
                          details={"file": filename, "column": column, "rows": rows,
                                   "kinds": sorted(set(kinds.unique()) - {"null"})})


def coerce_columns(frame: pd.DataFrame, filename: str) -> pd.DataFrame:
    """Give every object column of ``frame`` a single storable kind, or raise a 422."""
    for column in frame.columns:
        series = frame[column]
        if series.dtype != object:
            continue
        kinds = series.map(_kind)
        present = set(kinds.unique()) - {"null"}
        if present <= {"str"} or present <= {"time"} or present <= {"numlist"}:
            continue
        if "object" in present:
            raise _fault(filename, column, kinds, {"object"}, "nested JSON objects cannot be a column; "
                         "flatten them into columns of their own")
        if "list" in present:
            raise _fault(filename, column, kinds, {"list"}, "lists are allowed only as all-numeric "
                         "embedding vectors")
        if "numlist" in present:
            raise _fault(filename, column, kinds, present - {"numlist"}, "a column of vectors holds scalars too")
        if "bigint" in present:
            raise _fault(filename, column, kinds, {"bigint"}, "integers beyond the 64-bit range")
        if present <= {"int", "float"}:
            frame[column] = pd.to_numeric(series)
        elif present <= {"bool"}:
            continue
        else:  # numbers, booleans and text together: keep every value, as its text
            frame[column] = series.where(kinds == "null", series.map(_text))
    return frame


def _text(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return str(value)


def check_text_cells(chunk: pd.DataFrame, limits: UploadLimits, filename: str, *, first_row: int) -> None:
    """Refuse a text cell longer than ``limits.max_cell_chars``; ``first_row`` is 1-based."""
    for column in chunk.columns:
        series = chunk[column]
        if series.dtype != object:
            continue
        lengths = series.map(lambda v: len(v) if isinstance(v, str) else 0)
        if len(lengths) and lengths.max() > limits.max_cell_chars:
            at = int(np.argmax(lengths.to_numpy()))
            raise limits.cell_too_large(filename, str(column), first_row + at, int(lengths.iloc[at]))
