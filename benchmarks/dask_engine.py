"""The Dask engine at scale: 50 M production rows x 20 columns on 2 cores.

Data: SYNTHETIC, from ``domains.examples.make_example("medical")`` with its planted shifts
(a weak slice, an untested context, moved context mix; 3 embedding columns, so 20 columns),
written as Parquet files of 1 M rows under ``--data`` (reused when present).

1. The 50 M-row audit with the Dask engine on a local cluster of 2 single-threaded worker
   processes: wall time, peak memory (resident set size) of the service process, of each worker
   and of all of them together (sampled every 0.1 s), report size.
2. At 1 M production rows: the pandas engine against the Dask engine on the same files, side by
   side: drifted columns, their p-values and KS statistics (the Dask engine's within its stated
   sketch bounds), slice metrics, verdict and the top limitations.

    python benchmarks/dask_engine.py [--rows 50000000] [--benchmark-rows 5000000] [--data DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("DO_NOT_TRACK", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHUNK = 1_000_000


def _write_chunk(args) -> str:
    side, i, rows, path = args
    from domains.examples import make_example

    bench, prod = make_example("medical", n_benchmark=rows if side == "benchmark" else 1,
                               n_production=rows if side == "production" else 1, n_embedding=3, random_state=1000 + i)
    frame = bench if side == "benchmark" else prod
    frame["id"] = f"{side[0]}{i}-" + frame["id"].astype(str)  # unique across files
    frame.to_parquet(path, index=False)
    return path


def generate(root: Path, side: str, n_rows: int) -> Path:
    """``n_rows`` rows as files of at most CHUNK rows under ``root/side`` (kept between runs)."""
    directory = root / f"{side}-{n_rows}"
    directory.mkdir(parents=True, exist_ok=True)
    offset = 0 if side == "benchmark" else 10_000
    jobs = [(side, offset + i, min(CHUNK, n_rows - i * CHUNK), str(directory / f"part-{i:05d}.parquet"))
            for i in range((n_rows + CHUNK - 1) // CHUNK)]
    todo = [j for j in jobs if not Path(j[3]).exists()]
    if todo:
        print(f"writing {len(todo)} files of {side} data to {directory} ...", flush=True)
        with ProcessPoolExecutor(2) as pool:
            list(pool.map(_write_chunk, todo))
    return directory


class PeakMemory:
    """Peak resident memory of this process, of each worker and of their sum, sampled in a thread."""

    def __init__(self, pids: dict[str, int]) -> None:
        import psutil

        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.peaks = {name: 0 for name in pids}
        self.total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = {}
            for name, proc in self.procs.items():
                try:
                    now[name] = proc.memory_info().rss
                except Exception:  # a worker that restarted: counted as zero, not a crash
                    now[name] = 0
                self.peaks[name] = max(self.peaks[name], now[name])
            self.total = max(self.total, sum(now.values()))
            time.sleep(0.1)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def dask_audit(client, bench_dir: Path, prod_dir: Path, pack, **options):
    from audit.options import AuditOptions
    from service.audits.engine.dask_audit import audit_parquet, parquet_roles
    from service.audits.engine.datasets import ParquetDataset

    datasets = [ParquetDataset.open(d) for d in (bench_dir, prod_dir)]
    roles = [parquet_roles(d, schema=None, pack=pack) for d in datasets]
    refs = tuple({"id": d.name, "name": d.name} for d in datasets)
    return audit_parquet(datasets[0], datasets[1], pack=pack, benchmark_roles=roles[0], production_roles=roles[1],
                         options=AuditOptions(engine="dask", **options), client=client, refs=refs,
                         progress=lambda f, s: None)


def pandas_audit(bench_dir: Path, prod_dir: Path, pack):
    import pandas as pd

    from audit.roles import infer_roles
    from service.audits.local import audit_frames

    frames = [pd.read_parquet(d) for d in (bench_dir, prod_dir)]
    contexts = [c.name for c in pack.context]
    roles = [infer_roles(f.columns, context_columns=contexts) for f in frames]
    return audit_frames(frames[0], frames[1], pack=pack, benchmark_roles=roles[0], production_roles=roles[1],
                        names=(bench_dir.name, prod_dir.name))


def at_scale(client, pids, bench_dir, prod_dir, pack) -> dict:
    started = time.perf_counter()
    with PeakMemory(pids) as memory:
        outcome = dask_audit(client, bench_dir, prod_dir, pack)
    seconds = time.perf_counter() - started
    result = outcome.result_json
    mb = lambda b: round(b / 2**20)  # noqa: E731
    return {"rows": {"benchmark": result["benchmark"]["n_rows"], "production": result["production"]["n_rows"]},
            "wall_s": round(seconds, 1), "peak_mb_total": mb(memory.total),
            "peak_mb": {name: mb(v) for name, v in memory.peaks.items()},
            "report_kb": round(len(outcome.html.encode()) / 1024), "verdict": result["verdict"]["severity"],
            "top": [lim["statement"][:140] for lim in result["limitations"][:3]],
            "engine": result["parameters"]["engine"], "timings": result["timings"]}


def compare(pandas_result: dict, dask_result: dict) -> dict:
    ours = {t["name"]: t for t in dask_result["covariate"]["features"]}
    features = []
    for t in pandas_result["covariate"]["features"]:
        o = ours.get(t["name"], {})
        bounds = (o.get("details") or {}).get("ks_statistic_bounds")
        exact_ks = (t.get("details") or {}).get("ks_statistic")
        features.append({"name": t["name"], "drifted": (t["drifted"], o.get("drifted")),
                         "p": (t["p_value"], o.get("p_value")), "method": (t["method"], o.get("method")),
                         "within_bounds": None if bounds is None or exact_ks is None
                         else bounds[0] - 1e-12 <= exact_ks <= bounds[1] + 1e-12})
    slices_d = {s["name"]: s for s in dask_result["slices"]}
    slices = [{"name": s["name"], "value": (s["production_value"], slices_d.get(s["name"], {}).get("production_value")),
               "underperforming": (s["underperforming"], slices_d.get(s["name"], {}).get("underperforming"))}
              for s in pandas_result["slices"]]
    keys = lambda r: [lim["key"] for lim in r["limitations"][:5]]  # noqa: E731
    return {"features": features, "slices": slices, "verdict": (pandas_result["verdict"]["severity"],
                                                                dask_result["verdict"]["severity"]),
            "top_keys": (keys(pandas_result), keys(dask_result)),
            "same_drifted": all(f["drifted"][0] == f["drifted"][1] for f in features),
            "same_underperforming": all(s["underperforming"][0] == s["underperforming"][1] for s in slices)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--benchmark-rows", type=int, default=5_000_000)
    parser.add_argument("--compare-rows", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=Path("/tmp/contextshift-dask-bench"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/dask_engine.json"))
    args = parser.parse_args()

    from distributed import Client, LocalCluster

    from service.audits.local import load_pack

    pack = load_pack("medical")
    bench_dir = generate(args.data, "benchmark", args.benchmark_rows)
    prod_dir = generate(args.data, "production", args.rows)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40)
    client = Client(cluster)
    pids = {"service": os.getpid(), **{f"worker{i}": pid for i, pid in enumerate(client.run(os.getpid).values())}}
    report = {"scale": at_scale(client, pids, bench_dir, prod_dir, pack)}
    print(json.dumps(report["scale"], indent=2), flush=True)

    small_b = generate(args.data, "benchmark", args.compare_rows)
    small_p = generate(args.data, "production", args.compare_rows)
    t0 = time.perf_counter()
    pandas_result = pandas_audit(small_b, small_p, pack).result_json
    t1 = time.perf_counter()
    dask_result = dask_audit(client, small_b, small_p, pack).result_json
    t2 = time.perf_counter()
    report["compare"] = {"rows": args.compare_rows, "pandas_s": round(t1 - t0, 1), "dask_s": round(t2 - t1, 1),
                         **compare(pandas_result, dask_result)}
    print(json.dumps(report["compare"], indent=2, default=str))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
