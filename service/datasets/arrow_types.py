"""One Arrow schema for all the parts of a dataset, however the chunks' dtypes drifted.

pandas infers each CSV or JSON Lines chunk's dtypes on its own: an integer column turns float
when a later chunk has a missing value, or text when one holds a word. Read in one piece, the
whole column would have been widened (``pd.concat``, then :func:`service.datasets.coerce.coerce_columns`),
and the parts must read back as that one frame. So every chunk is cast to the schema so far when
that loses nothing, and otherwise the schema is widened the way pandas would have:

* same type: unchanged; ``null`` (an all-missing chunk) + T: T;
* integer + integer: int64; integer + float: float64;
* numeric list + numeric list (embeddings): list<float64>; a list beside scalars: TypeError
  (``coerce_columns`` refuses that mix within one chunk too);
* anything else (text + number, bool + int, mismatched timestamps): string, each value as
  Python's ``str`` would write it (``2.0``, not Arrow's ``2``), as ``coerce_columns`` does.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.types as t


def _numeric(kind: pa.DataType) -> bool:
    return t.is_integer(kind) or t.is_floating(kind)


def _is_list(kind: pa.DataType) -> bool:
    return t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind)


def widen(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The narrowest type both ``a`` and ``b`` fit in, by the rules above."""
    if a == b:
        return a
    if t.is_null(a) or t.is_null(b):
        return b if t.is_null(a) else a
    if t.is_dictionary(a) or t.is_dictionary(b):  # decode: chunks' dictionaries differ anyway
        return widen(a.value_type if t.is_dictionary(a) else a, b.value_type if t.is_dictionary(b) else b)
    if t.is_integer(a) and t.is_integer(b):
        return pa.int64()
    if _numeric(a) and _numeric(b):
        return pa.float64()
    if _is_list(a) or _is_list(b):
        if _is_list(a) and _is_list(b) and _numeric(a.value_type) and _numeric(b.value_type):
            return pa.list_(pa.float64())
        raise TypeError(f"vectors in one part of the file and {b if _is_list(a) else a} values in another")
    return pa.string()


def unify(schema: pa.Schema, other: pa.Schema) -> pa.Schema:
    """``schema`` widened so that a table of ``other`` (same column names) fits in it."""
    fields = [pa.field(f.name, widen(f.type, other.field(f.name).type)) for f in schema]
    unified = pa.schema(fields)
    # keep the pandas metadata only while no type changed: stale dtypes would mislead to_pandas
    return unified.with_metadata(schema.metadata) if unified.equals(schema) else unified


def to_text(array: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Values as text the way ``coerce_columns`` writes them (``str``; booleans ``true``/``false``)."""
    kind = array.type
    if t.is_string(kind) or t.is_null(kind) or t.is_integer(kind) or t.is_boolean(kind):
        return array.cast(pa.string())  # Arrow writes these exactly as str() / coerce does
    return pa.array([None if v is None else str(v) for v in array.to_pylist()], type=pa.string())


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` cast column by column to ``schema`` (which :func:`unify` made wide enough)."""
    if table.schema.equals(schema):
        return table
    columns = []
    for field in schema:
        column = table.column(field.name)
        if column.type == field.type:
            columns.append(column)
        elif t.is_string(field.type):
            columns.append(to_text(column))
        else:  # int -> float is the only lossy widening; pandas makes the same choice
            columns.append(column.cast(field.type, safe=False))
    return pa.Table.from_arrays(columns, schema=schema)
