"""A SQL monitor's rows fetched within a byte budget: per value, checked by the database before
the value is sent; per run, counted while rows stream in.

A query returning a few 100 MB text values (``repeat('x', 10^8)``, ``zeroblob(10^8)``) would
otherwise be materialised whole by the driver and then by pandas. So:

* PostgreSQL computes each value's ``octet_length`` of its text form and sends NULL in place of a
  value over ``max_value_bytes``, with a flag; the flag fails the run (``value_too_large``);
* SQLite's own length limit (``SQLITE_LIMIT_LENGTH``) is lowered to ``max_value_bytes`` for the run,
  so building a longer string or blob fails inside SQLite (``string or blob too big``);
* rows are fetched in batches from a server-side cursor and their value bytes added up; once the
  run holds ``max_bytes``, no more rows are fetched and the newer ones wait for the next run.
"""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Connection

__all__ = ["Fetched", "ValueTooLarge", "fetch_bounded", "sqlite_value_limit"]

FLAG = "__contextshift_oversize"
BATCH_ROWS = 1000


class ValueTooLarge(Exception):
    """A value over the per-value cap (the run fails with kind ``value_too_large``)."""


@dataclass(frozen=True)
class Fetched:
    frame: pd.DataFrame
    full: bool  # the row or byte budget stopped the fetch: newer rows may remain
    by_bytes: bool


def value_bytes(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(value)
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    return 8


@contextmanager
def sqlite_value_limit(conn: Connection, max_value_bytes: int) -> Iterator[None]:
    """Lower SQLite's longest string/blob to ``max_value_bytes`` on this connection while in use."""
    raw = conn.connection.driver_connection if conn.dialect.name == "sqlite" else None
    if raw is None or not hasattr(raw, "setlimit"):
        yield
        return
    old = raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(1, int(max_value_bytes)))
    try:
        yield
    finally:
        raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, old)


def _postgres_capped(conn: Connection, inner: str, where: str, order: str, limit: int, max_value_bytes: int) -> str:
    """``inner`` with every value over the cap replaced by NULL and a flag column saying so."""
    probe = conn.execute(text(f"SELECT * FROM ({inner}) AS q LIMIT 0"))
    quote = conn.dialect.identifier_preparer.quote
    columns = [quote(c) for c in probe.keys()]
    probe.close()
    sizes = [f"coalesce(octet_length(CAST(q.{c} AS text)), 0) > {int(max_value_bytes)}" for c in columns]
    capped = [f"CASE WHEN {size} THEN NULL ELSE q.{c} END AS {c}" for size, c in zip(sizes, columns)]
    flag = " OR ".join(sizes) or "false"
    return (f"SELECT {', '.join(capped + [f'({flag}) AS {FLAG}'])} FROM ({inner}) AS q{where} "
            f"ORDER BY q.{order} LIMIT {int(limit)}")


def fetch_bounded(conn: Connection, inner: str, *, order: str, watermark_clause: bool, params: dict,
                  max_rows: int, max_value_bytes: int, max_bytes: int) -> Fetched:
    """The rows of ``inner`` after the watermark, oldest first, within the row and byte budgets.

    Raises :class:`ValueTooLarge` for a value over ``max_value_bytes`` (PostgreSQL); SQLite raises
    its own error under :func:`sqlite_value_limit`.
    """
    where = f" WHERE q.{order} > :watermark" if watermark_clause else ""
    if conn.dialect.name == "postgresql":
        sql = _postgres_capped(conn, inner, where, order, max_rows, max_value_bytes)
    else:
        sql = f"SELECT * FROM ({inner}) AS q{where} ORDER BY q.{order} LIMIT {int(max_rows)}"
    result = conn.execution_options(stream_results=True, max_row_buffer=BATCH_ROWS).execute(text(sql), params)
    names = list(result.keys())
    flagged = FLAG in names
    rows: list[tuple[Any, ...]] = []
    total, by_bytes = 0, False
    try:
        for batch in result.partitions(BATCH_ROWS):
            for row in batch:
                if flagged and row[-1]:
                    raise ValueTooLarge()
                values = tuple(row[:-1]) if flagged else tuple(row)
                size = sum(value_bytes(v) for v in values)
                if rows and total + size > max_bytes:
                    by_bytes = True
                    break
                total += size
                rows.append(values)
            if by_bytes:
                break
    finally:
        result.close()
    columns = names[:-1] if flagged else names
    frame = pd.DataFrame.from_records(rows, columns=columns, coerce_float=True)
    return Fetched(frame, full=by_bytes or len(rows) >= max_rows, by_bytes=by_bytes)
