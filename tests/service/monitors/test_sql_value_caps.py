"""A SQL monitor's values are capped before they are materialised: a 100 MB value fails the run
(kind value_too_large) without the process holding it, and a run stops at its byte budget.

Memory is this test process's peak RSS (VmHWM, reset before each query): the SQL source runs in the
process that calls it, as it does inside the server's monitor worker."""
from __future__ import annotations

import os
import sqlite3

import pytest

from service.errors import ServiceError
from service.monitors.sql_source import take_sql
from tests.service.datasets.test_memory_bounds import peak_rss_mb, reset_peak_rss

HUNDRED_MB = 100_000_000


def run_bounded(source, url, **limits):
    if not reset_peak_rss(os.getpid()):
        pytest.skip("cannot reset the peak RSS here")
    before = peak_rss_mb(os.getpid())
    try:
        return take_sql(source, url, None, max_rows=1000, timeout_s=30, **limits), None
    except ServiceError as exc:
        return None, exc
    finally:
        grew = peak_rss_mb(os.getpid()) - before
        assert grew < 150, f"the query raised the peak RSS by {grew:.0f} MB"


@pytest.fixture
def sqlite_url(tmp_path):
    path = tmp_path / "w.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (ts INTEGER, v TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, "x" * 600_000) for i in range(10)])
    return f"sqlite:///{path}"


def test_sqlite_zeroblob_values_fail_the_run_before_they_exist(sqlite_url):
    source = {"query": "SELECT ts, zeroblob(100000000) AS v FROM t", "timestamp_column": "ts", "database": "w"}
    batch, error = run_bounded(source, sqlite_url, max_value_bytes=1 << 20, max_bytes=256 << 20)
    assert batch is None and error.details["kind"] == "value_too_large", error
    assert "CONTEXTSHIFT_MONITOR_MAX_VALUE_BYTES" in error.message


def test_a_run_stops_at_its_byte_budget_and_leaves_the_rest(sqlite_url):
    source = {"query": "SELECT ts, v FROM t", "timestamp_column": "ts", "database": "w"}
    batch, error = run_bounded(source, sqlite_url, max_value_bytes=1 << 20, max_bytes=2_000_000)
    assert error is None
    assert 1 <= len(batch.frame) <= 3  # 600 KB a row, 2 MB a run (the last timestamp waits)
    assert any("CONTEXTSHIFT_MONITOR_MAX_SQL_BYTES_PER_RUN" in n for n in batch.notes)


def test_postgres_repeat_values_fail_the_run_without_being_sent(postgres_schema_url):
    source = {"query": "SELECT s.ts, repeat('x', 100000000) AS v FROM (VALUES (1), (2), (3)) AS s(ts)",
              "timestamp_column": "ts", "database": "pg"}
    batch, error = run_bounded(source, postgres_schema_url, max_value_bytes=1 << 20, max_bytes=256 << 20)
    assert batch is None and error.details["kind"] == "value_too_large", error


def test_postgres_values_under_the_cap_are_read(postgres_schema_url):
    source = {"query": "SELECT s.ts, repeat('x', 1000) AS v FROM (VALUES (1), (2), (3)) AS s(ts)",
              "timestamp_column": "ts", "database": "pg"}
    batch, error = run_bounded(source, postgres_schema_url, max_value_bytes=1 << 20, max_bytes=256 << 20)
    assert error is None and list(batch.frame["v"].str.len()) == [1000, 1000, 1000]
