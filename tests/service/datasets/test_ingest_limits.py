"""Uploads that used to take the service down or answer 500 now get their 4xx."""
from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from service.datasets.bounded import UploadLimits
from service.datasets.ingest import read_table
from service.errors import ServiceError


def gzip_bomb(line: bytes, total_bytes: int, header: bytes = b"") -> bytes:
    """A multi-member gzip file expanding to about ``total_bytes``: one member, repeated."""
    block = line * (4 * 1024 * 1024 // len(line))
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = deflate.compress(block) + deflate.flush()
    return (gzip.compress(header) if header else b"") + member * max(1, total_bytes // len(block))


def parquet_bytes(frame_or_table) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = frame_or_table if isinstance(frame_or_table, pa.Table) else pa.Table.from_pandas(frame_or_table)
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def outcome(tmp_path, name: str, data: bytes, limits: UploadLimits | None = None):
    path = tmp_path / "upload"
    path.write_bytes(data)
    try:
        return read_table(path, name, limits)
    except ServiceError as exc:
        return exc


SMALL = UploadLimits(max_decompressed_bytes=8 * 2**20, max_cells=200_000, max_cell_chars=1000)


@pytest.mark.parametrize("limits, code", [(SMALL, "too_many_cells"),
                                          (UploadLimits(max_decompressed_bytes=8 * 2**20, max_cells=10**12),
                                           "decompressed_too_large")])
def test_csv_gzip_bomb_is_refused_while_reading(tmp_path, limits, code):
    err = outcome(tmp_path, "bomb.csv.gz", gzip_bomb(b"0\n", 200 * 2**20, header=b"x\n"), limits)
    assert isinstance(err, ServiceError) and err.status_code == 413 and err.code == code
    assert err.details["limit"].startswith("CONTEXTSHIFT_MAX_")


def test_jsonl_gzip_bomb_of_empty_objects_is_refused(tmp_path):
    err = outcome(tmp_path, "bomb.jsonl.gz", gzip_bomb(b"{}\n", 200 * 2**20), SMALL)
    assert isinstance(err, ServiceError) and err.status_code == 413


def test_parquet_footer_is_checked_before_any_row_group(tmp_path):
    data = parquet_bytes(pd.DataFrame({"x": np.zeros(300_000, dtype=np.int64)}))
    err = outcome(tmp_path, "bomb.parquet", data, SMALL)
    assert err.status_code == 413 and err.code == "too_many_cells" and err.details["rows_at_least"] == 300_000
    gz = outcome(tmp_path, "bomb.parquet.gz", gzip.compress(data), SMALL)
    assert gz.status_code == 413


def test_long_cell_is_refused(tmp_path):
    err = outcome(tmp_path, "t.csv", b"a,b\n1," + b"x" * 5000 + b"\n", SMALL)
    assert err.status_code == 413 and err.code == "cell_too_large" and err.details["column"] == "b"


def test_within_limits_reads_as_before(tmp_path):
    frame = pd.DataFrame({"id": range(1000), "x": np.linspace(0, 1, 1000), "c": ["a", "b"] * 500})
    for name, data in (("t.csv", frame.to_csv(index=False).encode()),
                       ("t.csv.gz", gzip.compress(frame.to_csv(index=False).encode())),
                       ("t.jsonl", frame.to_json(orient="records", lines=True).encode()),
                       ("t.parquet", parquet_bytes(frame))):
        got = outcome(tmp_path, name, data, SMALL)
        assert isinstance(got, pd.DataFrame), (name, got)
        pd.testing.assert_frame_equal(got.reset_index(drop=True), frame, check_dtype=False)


@pytest.mark.slow
def test_header_longer_than_64k_with_20000_columns(tmp_path):
    names = [f"column_{i:05d}" for i in range(20_000)]
    data = (",".join(names) + "\n" + ",".join("1" for _ in names) + "\n").encode()
    assert len(data) > 200_000
    wide = UploadLimits(max_columns=25_000)
    frame = outcome(tmp_path, "wide.csv", data, wide)
    assert isinstance(frame, pd.DataFrame) and frame.shape == (1, 20_000)
    dup = outcome(tmp_path, "wide.csv",
                  (",".join(names + ["column_00007"]) + "\n" + ",".join("1" * 20_001) + "\n").encode(), wide)
    assert dup.code == "duplicate_columns" and dup.details["columns"] == ["column_00007"]


def test_ragged_row_is_named(tmp_path):
    err = outcome(tmp_path, "r.csv", b"a,b,c\n1,2,3\n4,5\n6,7,8\n")
    assert err.status_code == 400 and err.code == "ragged_row"
    assert err.details["line"] == 3 and err.details["fields"] == 2 and err.details["expected"] == 3
    ok = outcome(tmp_path, "r.csv", b"a,b,c\n1,2,\n4,5,6\n")  # an empty last field is a null, not ragged
    assert isinstance(ok, pd.DataFrame) and ok["c"].isna().sum() == 1


@pytest.mark.parametrize("line, code", [
    (b'{"a": ' + b"[" * 10_000 + b"]" * 10_000 + b"}", "invalid_jsonl"),
    (b'{"a": ' + b"9" * 5000 + b"}", "invalid_jsonl"),
    (b'{"a": ' + b"9" * 30 + b"}", "invalid_column_type"),
])
def test_jsonl_depth_and_integer_size(tmp_path, line, code):
    err = outcome(tmp_path, "d.jsonl", line + b"\n")
    assert isinstance(err, ServiceError) and 400 <= err.status_code < 500 and err.code == code


def test_jsonl_mixed_column_types(tmp_path):
    rows = [{"k": 1, "v": 1}, {"k": 2, "v": "two"}, {"k": 3, "v": {"n": 3}}, {"k": 4, "v": [4]}]
    err = outcome(tmp_path, "m.jsonl", "\n".join(json.dumps(r) for r in rows).encode())
    assert err.status_code == 422 and err.code == "invalid_column_type"
    assert err.details["column"] == "v" and err.details["rows"] == [3]
    mixed = outcome(tmp_path, "m.jsonl", b'{"v": 1}\n{"v": "two"}\n{"v": true}\n{"v": null}\n')
    assert list(mixed["v"][:3]) == ["1", "two", "true"] and mixed["v"].isna().iloc[3]  # coerced to text
    vectors = outcome(tmp_path, "e.jsonl", b'{"embedding": [0.1, 0.2]}\n{"embedding": [0.3, 0.4]}\n')
    assert isinstance(vectors, pd.DataFrame)


def test_parquet_map_column_is_a_422(tmp_path):
    import pyarrow as pa

    table = pa.table({"id": [1, 2], "m": pa.array([[("a", 1)], [("b", 2)]], type=pa.map_(pa.string(), pa.int64()))})
    err = outcome(tmp_path, "m.parquet", parquet_bytes(table))
    assert err.status_code == 422 and err.code == "invalid_column_type" and "m" in err.details["columns"]


# --- shape limits, checked on the bytes before a parser holds a whole header or line ---------

SHAPE = UploadLimits(max_columns=50, max_column_name_chars=20, max_line_bytes=4096, max_cell_chars=1000)


def _parquet_of(columns: dict) -> bytes:
    return parquet_bytes(pd.DataFrame(columns))


SHAPE_CASES = [
    ("cols.csv", b",".join(b"c%d" % i for i in range(51)) + b"\n" + b"0," * 50 + b"0\n", 422, "too_many_columns"),
    ("million.csv.gz", gzip.compress(b",".join(b"c%d" % i for i in range(10**6)) + b"\n"), 422, "too_many_columns"),
    ("name.csv", b"a," + b"n" * 21 + b"\n1,2\n", 422, "column_name_too_long"),
    ("head.csv", b"a,b" + b" " * 5000 + b"\n1,2\n", 413, "line_too_long"),
    ("quoted.csv", b'a,"b' + b",\n" * 3000 + b'"\n1,2\n', 413, "line_too_long"),  # many short lines, one record
    ("cell.csv", b"a,b\n1,2\n3," + b"x" * 5000 + b"\n", 413, "line_too_long"),
    ("cell.csv.gz", gzip.compress(b"a,b\n1," + b'"' + b"x\n" * 10**6 + b'"\n'), 413, "line_too_long"),
    ("line.jsonl", b'{"a": 1}\n{"a": "' + b"x" * 5000 + b'"}\n', 413, "line_too_long"),
    ("keys.jsonl", json.dumps({f"k{i}": 0 for i in range(51)}).encode() + b"\n", 422, "too_many_columns"),
    ("more.jsonl", b"\n".join(json.dumps({f"k{i}": 0}).encode() for i in range(60)), 422, "too_many_columns"),
    ("key.jsonl", b'{"a": 1}\n{"' + b"k" * 21 + b'": 1}\n', 422, "column_name_too_long"),
    ("cols.parquet", _parquet_of({f"c{i}": [0] for i in range(51)}), 422, "too_many_columns"),
    ("name.parquet", _parquet_of({"n" * 21: [0]}), 422, "column_name_too_long"),
]


@pytest.mark.parametrize("name, data, status, code", SHAPE_CASES, ids=[case[0] for case in SHAPE_CASES])
def test_shape_limits_are_4xx_naming_the_setting(tmp_path, name, data, status, code):
    err = outcome(tmp_path, name, data, SHAPE)
    assert isinstance(err, ServiceError), (name, err)
    assert (err.status_code, err.code) == (status, code), (name, err.code, err.message)
    setting = err.details["limit"]
    assert setting.startswith("CONTEXTSHIFT_MAX_") and setting in err.message and err.details["file"] == name


def test_a_line_bomb_is_refused_after_reading_the_limit_not_the_line(tmp_path):
    """One 3 GB line in a 3 MB gzip: the scan stops at max_line_bytes (8 MB by default)."""
    import time

    bomb = gzip_bomb(b"x" * 1024, 3 * 2**30)  # no newline anywhere
    for name, header in (("line.csv.gz", b"a\n"), ("line.jsonl.gz", b"")):
        started = time.perf_counter()
        err = outcome(tmp_path, name, gzip.compress(header) + bomb)
        assert err.status_code == 413 and err.code == "line_too_long" and err.details["line"] == (2 if header else 1)
        assert time.perf_counter() - started < 5


def test_blank_lines_count_towards_the_cells(tmp_path):
    err = outcome(tmp_path, "blank.jsonl.gz", b"".join([gzip.compress(b'{"a": 1}\n'), gzip_bomb(b"\n", 300_000)]),
                  SMALL)
    assert err.status_code == 413 and err.code == "too_many_cells"


def test_quoted_newlines_within_the_limits_read_as_before(tmp_path):
    data = b'id,text\n1,"two\nlines, and a ""quote"""\n2,plain\n'
    frame = outcome(tmp_path, "q.csv", data, SHAPE)
    assert isinstance(frame, pd.DataFrame) and frame["text"].tolist() == ['two\nlines, and a "quote"', "plain"]
    assert outcome(tmp_path, "h.csv", b'"a,b",c\n1,2\n', SHAPE).columns.tolist() == ["a,b", "c"]


def test_parquet_footer_larger_than_the_columns_need_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = io.BytesIO()
    table = pa.table({"a": list(range(4000)), "b": [str(i) * 50 for i in range(4000)]})
    pq.write_table(table, out, row_group_size=10)  # 400 row groups: a footer far past 2 columns' share
    err = outcome(tmp_path, "groups.parquet", out.getvalue(), UploadLimits(max_columns=2))
    assert err.status_code == 413 and err.code == "parquet_footer_too_large"
    assert err.details["limit"] == "CONTEXTSHIFT_MAX_COLUMNS"
    assert isinstance(outcome(tmp_path, "groups.parquet", out.getvalue()), pd.DataFrame)  # default limits


def test_line_limit_must_hold_a_cell():
    from pydantic import ValidationError

    from service.settings import Settings

    with pytest.raises(ValidationError, match="CONTEXTSHIFT_MAX_LINE_BYTES"):
        Settings(max_line_bytes=1000, max_cell_chars=2000)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("name", ["t.csv.gz", "t.jsonl.gz", "t.parquet.gz"])
def test_gzipped_file_read_through_a_descriptor_path(tmp_path, name):
    """Directory monitors read ``/proc/self/fd/<n>``: the plain copy cannot go beside that."""
    import tempfile

    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    plain = {"t.csv.gz": frame.to_csv(index=False).encode(), "t.parquet.gz": parquet_bytes(frame),
             "t.jsonl.gz": frame.to_json(orient="records", lines=True).encode()}[name]
    path = tmp_path / name
    path.write_bytes(gzip.compress(plain))
    before = set(os.listdir(tempfile.gettempdir()))
    fd = os.open(path, os.O_RDONLY)
    try:
        got = read_table(Path(f"/proc/self/fd/{fd}"), name)
    finally:
        os.close(fd)
    pd.testing.assert_frame_equal(got, frame, check_dtype=False)
    assert not [f for f in set(os.listdir(tempfile.gettempdir())) - before if f.startswith("contextshift-")]


def test_csv_read_in_byte_ranges_is_the_one_read(tmp_path, monkeypatch):
    """Ranges cut at record ends (quoted newlines respected) parse to the frame one read gives;
    faults in a later range are still found (ragged rows by their line)."""
    import service.datasets.line_scan as line_scan

    monkeypatch.setattr(line_scan, "BLOCK", 512)
    monkeypatch.setattr(line_scan, "CHUNK_BYTES", 2000)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": range(3000), "x": rng.normal(size=3000).round(3),
                          "text": rng.choice(["plain", 'two\nlines, "quoted"', ""], 3000)})
    data = frame.to_csv(index=False).encode()
    expected = pd.read_csv(io.BytesIO(data))
    scan = line_scan.scan_records(_write(tmp_path, data), False, UploadLimits(), "t.csv", quoted=True,
                                  n_columns=3, header_records=1)
    assert len(scan.ranges) > 20 and scan.records == 3001  # a quoted newline ends no record
    for name, payload in (("t.csv", data), ("t.csv.gz", gzip.compress(data))):
        got = outcome(tmp_path, name, payload)
        pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    lines = data.split(b"\n")
    ragged = b"\n".join(lines[:-50] + [b"1,2"] + lines[-50:])
    err = outcome(tmp_path, "r.csv", ragged)
    assert err.code == "ragged_row" and err.details["fields"] == 2
    wide = b"\n".join(lines[:-50] + [b"1,2,3,4"] + lines[-50:])
    assert outcome(tmp_path, "w.csv", wide).code == "invalid_csv"


def _write(tmp_path, data: bytes) -> Path:
    path = tmp_path / "scanned"
    path.write_bytes(data)
    return path


def test_a_long_line_is_named_by_its_number(tmp_path):
    data = b"a,b\n" + b"1,2\n" * 10 + b"3," + b"x" * 5000 + b"\n" + b"4,5\n" * 10
    err = outcome(tmp_path, "n.csv", data, SHAPE)
    assert err.code == "line_too_long" and err.details["line"] == 12
    err = outcome(tmp_path, "n.jsonl", b'{"a": 1}\n' * 3 + b'{"a": "' + b"x" * 5000 + b'"}\n{"a": 2}\n', SHAPE)
    assert err.code == "line_too_long" and err.details["line"] == 4
