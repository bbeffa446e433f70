"""The three expansion bombs of issue 11 against a real server process: each is refused with
a 413 naming the limit, and the server's peak RSS (VmHWM) stays under a stated bound."""
from __future__ import annotations

import io
import os

import httpx
import numpy as np
import pytest

from tests.service.server import ServerProcess
from tests.service.test_hardening_ingest import gzip_bomb

# README: with the default limits (20 M cells) refusing each bomb peaked at 368 MB; the test
# runs with 2 M cells to stay fast, and the bound still has to hold
PEAK_RSS_BOUND_MB = 1024
MAX_CELLS = os.environ.get("BOMB_MAX_CELLS", "2000000")
PARQUET_ROWS = int(os.environ.get("BOMB_PARQUET_ROWS", "100000000"))  # 1e9 in the note's measurement


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def parquet_bomb(rows: int) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    step = min(rows, 10_000_000)
    table = pa.table({"x": pa.array(np.zeros(step, dtype=np.int64))})
    out = io.BytesIO()
    with pq.ParquetWriter(out, table.schema, compression="zstd") as writer:
        for _ in range(rows // step):
            writer.write_table(table, row_group_size=step)
    return out.getvalue()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc to read the server's peak RSS")
    proc = ServerProcess(tmp_path_factory.mktemp("bombs"), CONTEXTSHIFT_SCHEDULER="false",
                         CONTEXTSHIFT_MAX_CELLS=MAX_CELLS).start()
    yield proc
    proc.stop()


@pytest.mark.parametrize("filename, make", [
    ("bomb.csv.gz", lambda: gzip_bomb(b"0\n", 10 * 2**30, header=b"x\n")),      # 10 GB of "0\n"
    ("bomb.jsonl.gz", lambda: gzip_bomb(b'{"a":0}\n', 10 * 2**30)),            # 10 GB of records
    ("bomb.parquet", lambda: parquet_bomb(PARQUET_ROWS)),                        # rows of zeros
])
def test_bomb_is_refused_within_the_memory_bound(server, filename, make):
    data = make()
    assert len(data) < 20 * 2**20
    res = httpx.post(f"{server.url}/v1/datasets", files={"file": (filename, data)},
                     data={"name": filename, "role": "benchmark"}, timeout=300)
    assert res.status_code == 413, res.text[:300]
    assert res.json()["error"]["details"]["limit"].startswith("CONTEXTSHIFT_MAX_")
    peak = peak_rss_mb(server.proc.pid)
    print(f"{filename}: {len(data) / 2**20:.1f} MB sent, {res.json()['error']['code']}, peak RSS {peak:.0f} MB")
    assert peak < PEAK_RSS_BOUND_MB
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
