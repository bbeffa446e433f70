"""Peak memory of a streamed upload against the in-memory read it replaced.

Data: SYNTHETIC, ``--rows`` rows x 20 columns (an id, 12 floats, 4 ints, 3 short strings) as CSV.
Each mode runs in a fresh process and reports its peak resident set size (VmHWM):

* ``stream``: :func:`service.datasets.upload.store_upload`, the path of ``POST /v1/datasets`` (chunks of
  ``CONTEXTSHIFT_UPLOAD_CHUNK_CELLS`` cells, validated with Great Expectations, written as parts);
* ``memory``: :func:`service.datasets.ingest.read_table` plus one validation of the whole frame, what the
  upload did before.

    python benchmarks/upload_memory.py [--rows 1000000] [--out DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("DO_NOT_TRACK", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def make_csv(path: Path, rows: int) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    with open(path, "w") as out:
        for start in range(0, rows, 250_000):
            n = min(250_000, rows - start)
            frame = pd.DataFrame({"id": np.arange(start, start + n), "label": rng.choice(["no", "yes"], n),
                                  "prediction": rng.choice(["no", "yes"], n), "score": rng.uniform(0, 1, n),
                                  **{f"x{i}": rng.normal(size=n).round(4) for i in range(12)},
                                  **{f"k{i}": rng.integers(0, 1000, n) for i in range(3)},
                                  "site": rng.choice(["north", "south", "east"], n)})
            frame.to_csv(out, index=False, header=start == 0)


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(mode: str, csv: Path, data: Path) -> None:
    import pandas as pd

    from service.datasets import validation
    from service.settings import Settings

    settings = Settings(data_dir=data)
    # warm up: imports (Great Expectations, scipy, pyarrow) and GE's context are paid once per process
    validation.validate(pd.DataFrame({"id": [1]}), [validation.Expectation("expect_column_values_to_be_unique", "id")])
    baseline = peak_rss_mb()
    started = time.perf_counter()
    if mode == "stream":
        from service.datasets.upload import store_upload
        from service.runtime import Runtime

        runtime = Runtime.start(settings)
        row, _ = store_upload(runtime, csv, filename=csv.name, name=f"bench-{time.time()}", role="benchmark",
                              pack=None, user_schema=None, sha256=os.urandom(32).hex())
        detail = f"{row.n_partitions} part(s)"
        runtime.close()
    else:
        from service import roles
        from service.datasets import validation
        from service.datasets.bounded import UploadLimits
        from service.datasets.ingest import read_table

        frame = read_table(csv, csv.name, UploadLimits.from_settings(settings))
        validation.validate(frame, validation.schema_expectations(frame, roles.infer_roles(frame.columns)))
        detail = f"frame {frame.memory_usage(deep=True).sum() / 2**20:.0f} MB"
    print(f"{mode}: {time.perf_counter() - started:.1f} s, peak RSS {peak_rss_mb():.0f} MB "
          f"(after imports and warm-up {baseline:.0f} MB), {detail}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/contextshift-upload-memory"))
    parser.add_argument("--mode", choices=["stream", "memory"])
    args = parser.parse_args()
    csv = args.out / f"rows-{args.rows}.csv"
    if args.mode:
        return run(args.mode, csv, args.out / "data")
    args.out.mkdir(parents=True, exist_ok=True)
    if not csv.exists():
        make_csv(csv, args.rows)
    print(f"{csv.name}: {csv.stat().st_size / 2**20:.0f} MB of CSV, {args.rows:,} rows x 20 columns")
    for mode in ("stream", "memory"):
        env = {**os.environ, "CONTEXTSHIFT_MAX_UPLOAD_MB": "100000", "CONTEXTSHIFT_MAX_DECOMPRESSED_MB": "100000",
               "CONTEXTSHIFT_MAX_CELLS": str(10**12)}
        subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--out", str(args.out), "--mode", mode],
                       check=True, env=env)


if __name__ == "__main__":
    main()
