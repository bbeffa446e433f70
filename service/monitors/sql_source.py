"""A SQL source: the rows of the monitor's query newer than its watermark, read read-only.

Every run re-checks the query (:func:`service.monitors.sql_guard.check_query`), then runs it in
a READ ONLY transaction (PostgreSQL ``SET TRANSACTION READ ONLY``; SQLite ``PRAGMA
query_only``) under a statement timeout (``CONTEXTSHIFT_MONITOR_QUERY_TIMEOUT_S``: PostgreSQL
``SET LOCAL statement_timeout``; SQLite a progress handler that interrupts the query past the
deadline). A failure is stored with its kind (syntax, permission, read_only, timeout,
missing_column, ...) and never with the database's message, which can quote row values.

The watermark is the largest ``timestamp_column`` value taken; only rows after it are taken
next time, so rows must arrive with increasing timestamps. A run takes at most
``CONTEXTSHIFT_MONITOR_MAX_ROWS_PER_RUN`` rows and ``CONTEXTSHIFT_MONITOR_MAX_SQL_BYTES_PER_RUN``
bytes of values, and no value may exceed ``CONTEXTSHIFT_MONITOR_MAX_VALUE_BYTES`` (checked by the
database before the value is sent: :mod:`service.monitors.sql_fetch`); when a run is full, the rows
sharing its last timestamp wait for the next run (a strict watermark would otherwise skip the ones
not taken).
"""
from __future__ import annotations

import json
import logging
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Iterator, Mapping

import pandas as pd
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, make_url

from service.errors import ServiceError
from service.monitors.batch import Batch, SourceLimits
from service.monitors.sql_fetch import ValueTooLarge, fetch_bounded, sqlite_value_limit
from service.monitors.sql_guard import check_query
from service.monitors.sql_privileges import postgres_warnings, source_warnings

log = logging.getLogger("contextshift.monitors")
CONNECT_TIMEOUT_S = 10
# PostgreSQL SQLSTATE (or its class, first two characters) -> the kind of failure stored on a run
_SQLSTATE_KINDS = {"57014": "timeout", "25006": "read_only", "42501": "permission", "42601": "syntax",
                   "42703": "missing_column", "42P01": "missing_table", "42883": "missing_function",
                   "42804": "type_mismatch", "22": "bad_value", "08": "connection", "28": "permission",
                   "53": "resources", "42": "invalid_query"}
_SQLITE_KINDS = (("string or blob too big", "value_too_large"), ("interrupted", "timeout"), ("readonly", "read_only"),
                 ("no such column", "missing_column"),
                 ("no such table", "missing_table"), ("no such function", "missing_function"),
                 ("syntax error", "syntax"), ("unable to open", "connection"), ("not authorized", "permission"))
_KIND_TEXT = {"timeout": "it ran past CONTEXTSHIFT_MONITOR_QUERY_TIMEOUT_S and was cancelled",
              "read_only": "it tried to write, and monitor queries run read-only",
              "permission": "the database user may not read what it asks for",
              "syntax": "the database cannot parse it", "missing_column": "it names a column that does not exist",
              "missing_table": "it names a table that does not exist",
              "missing_function": "it calls a function that does not exist",
              "type_mismatch": "it compares or combines values of different types",
              "bad_value": "a value could not be converted or computed", "connection": "the database is unreachable",
              "resources": "the database ran out of resources", "invalid_query": "the database refused it",
              "query_error": "the database reported an error",
              "value_too_large": "it returned a value larger than CONTEXTSHIFT_MONITOR_MAX_VALUE_BYTES (the value "
                                 "was not read)"}


def encode_watermark(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, (pd.Timestamp, datetime, date)):
        return json.dumps({"type": "datetime", "value": pd.Timestamp(value).isoformat()})
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, (int, float)):
        return json.dumps({"type": "number", "value": value})
    return json.dumps({"type": "text", "value": str(value)})


def decode_watermark(text_: str | None) -> Any:
    if not text_:
        return None
    data = json.loads(text_)
    if data["type"] == "datetime":
        return pd.Timestamp(data["value"]).to_pydatetime()
    return data["value"]


def failure_kind(exc: BaseException) -> str:
    """What kind of failure ``exc`` is, from its SQLSTATE or SQLite error, never its message text."""
    orig = getattr(exc, "orig", None) or exc
    state = getattr(orig, "sqlstate", None)
    if state:
        return _SQLSTATE_KINDS.get(state) or _SQLSTATE_KINDS.get(state[:2], "query_error")
    if isinstance(orig, sqlite3.Error):
        message = str(orig).lower()  # read for its kind only; never stored
        return next((kind for needle, kind in _SQLITE_KINDS if needle in message), "query_error")
    return "query_error"


def query_failed(kind: str, database: str | None = None) -> ServiceError:
    return ServiceError(f"The monitor's SQL query failed: {_KIND_TEXT.get(kind, _KIND_TEXT['query_error'])} "
                        f"(kind {kind}; the database's own message is not shown, it can quote row values).",
                        code="source_query_failed", status_code=422,
                        details={"kind": kind, **({"database": database} if database else {})})


def make_engine(url: str) -> Any:
    backend = make_url(url).get_backend_name()
    connect_args = {"connect_timeout": CONNECT_TIMEOUT_S} if backend == "postgresql" else {}
    return create_engine(url, pool_pre_ping=True, connect_args=connect_args)


@contextmanager
def read_only(conn: Connection, timeout_s: float) -> Iterator[Connection]:
    """``conn`` inside a read-only transaction whose statements stop after ``timeout_s``."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        conn.exec_driver_sql("SET TRANSACTION READ ONLY")  # the first statement of the transaction
        conn.exec_driver_sql(f"SET LOCAL statement_timeout = {max(1, int(timeout_s * 1000))}")
        try:
            yield conn
        finally:
            conn.rollback()
        return
    raw = conn.connection.driver_connection if dialect == "sqlite" else None
    if raw is None:
        yield conn  # another dialect: the guard and the database user's grants are the protection
        return
    deadline = time.monotonic() + timeout_s
    raw.execute("PRAGMA query_only = ON")
    raw.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
    try:
        yield conn
    finally:
        conn.rollback()
        raw.set_progress_handler(None, 0)
        raw.execute("PRAGMA query_only = OFF")


def check_sql_definition(source: dict[str, Any], url: str) -> dict[str, Any]:
    """The SQL source to store: its query checked (422 ``unsafe_query``), warnings about its user added."""
    engine = make_engine(url)
    try:
        check_query(source["query"], engine.dialect.name)
        warnings = source_warnings(engine)
    finally:
        engine.dispose()
    return {**source, **({"warnings": warnings} if warnings else {})}


@dataclass(frozen=True)
class SqlSource:
    """A monitored SQL query (:class:`service.monitors.sources.Source`); ``url`` None: its database is
    not configured in this process."""

    definition: Mapping[str, Any]  # {"type": "sql", "database" or "url", "query", "timestamp_column"}
    url: str | None
    limits: SourceLimits

    def ready(self) -> None:
        """Any process can query; whether this database is configured is checked as each run takes."""

    def take(self, taken: set[tuple[str, str]], watermark: str | None) -> Batch:
        if self.url is None:
            raise ServiceError(f"Database {self.definition.get('database')!r} is no longer configured.",
                               code="unknown_database")
        limits = self.limits
        return take_sql(self.definition, self.url, watermark, max_rows=limits.max_rows,
                        timeout_s=limits.query_timeout_s, max_value_bytes=limits.max_value_bytes,
                        max_bytes=limits.max_sql_bytes)


def take_sql(source: Mapping[str, Any], url: str, watermark: str | None, *, max_rows: int, timeout_s: float,
             max_value_bytes: int, max_bytes: int) -> Batch:
    """Rows of the user's query newer than the watermark, oldest first, at most ``max_rows`` rows and
    ``max_bytes`` bytes of values, no value over ``max_value_bytes``, cancelled after ``timeout_s``."""
    engine = make_engine(url)
    database = source.get("database")
    try:
        checked = check_query(source["query"], engine.dialect.name)
        column = engine.dialect.identifier_preparer.quote(source["timestamp_column"])
        inner = checked.text.replace(":", "\\:")  # a literal ':' for text(), not a bind parameter
        params = {"watermark": decode_watermark(watermark)} if watermark else {}
        try:
            with engine.connect() as conn, read_only(conn, timeout_s), sqlite_value_limit(conn, max_value_bytes):
                notes = tuple(postgres_warnings(conn)) if conn.dialect.name == "postgresql" else ()
                fetched = fetch_bounded(conn, inner, order=column, watermark_clause=bool(watermark), params=params,
                                        max_rows=int(max_rows), max_value_bytes=int(max_value_bytes),
                                        max_bytes=int(max_bytes))
        except ValueTooLarge:
            log.warning("monitor query on %s returned a value over %d bytes", database, max_value_bytes)
            raise query_failed("value_too_large", database) from None
        except Exception as exc:  # the database's text is logged by kind only: it can hold row values
            kind = failure_kind(exc)
            log.warning("monitor query on %s failed: %s (%s)", database, kind, type(exc).__name__)
            raise query_failed(kind, database) from None
    finally:
        engine.dispose()
    frame = fetched.frame
    if frame.empty:
        return Batch(frame=None)
    if source["timestamp_column"] not in frame.columns:
        raise query_failed("missing_column", database)
    return _bounded(frame, source["timestamp_column"], int(max_rows), notes, full=fetched.full,
                    by_bytes=fetched.by_bytes, max_bytes=int(max_bytes))


def _bounded(frame: pd.DataFrame, column: str, max_rows: int, notes: tuple[str, ...], *, full: bool,
             by_bytes: bool, max_bytes: int) -> Batch:
    if full:
        last = frame[column].iloc[-1]
        kept = frame[frame[column] != last]
        if len(kept):  # rows at the last timestamp may continue past the limit: all wait for the next run
            frame = kept.reset_index(drop=True)
        limit = (f"{max_bytes} bytes of values (CONTEXTSHIFT_MONITOR_MAX_SQL_BYTES_PER_RUN)" if by_bytes else
                 f"{max_rows} row(s) (CONTEXTSHIFT_MONITOR_MAX_ROWS_PER_RUN = {max_rows})")
        notes += (f"the run took {len(frame)} row(s), the most one run takes: {limit}; newer rows wait for the "
                  "next run",)
    mark = encode_watermark(frame[column].max())
    return Batch(frame=frame, watermark=mark, description=f"{len(frame)} row(s) from the SQL query", notes=notes)
