"""Uploads that used to take the service down or answer 500 now get their 4xx (issue 11)."""
from __future__ import annotations

import gzip
import io
import json
import zlib

import numpy as np
import pandas as pd
import pytest

from service.bounded import UploadLimits
from service.errors import ServiceError
from service.ingest import read_table


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


def test_header_longer_than_64k_with_20000_columns(tmp_path):
    names = [f"column_{i:05d}" for i in range(20_000)]
    data = (",".join(names) + "\n" + ",".join("1" for _ in names) + "\n").encode()
    assert len(data) > 200_000
    frame = outcome(tmp_path, "wide.csv", data)
    assert isinstance(frame, pd.DataFrame) and frame.shape == (1, 20_000)
    dup = outcome(tmp_path, "wide.csv", (",".join(names + ["column_00007"]) + "\n" + ",".join("1" * 20_001) + "\n").encode())
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
