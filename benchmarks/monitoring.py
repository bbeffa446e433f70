"""Scheduled-monitoring benchmark (issue 14): the price of one lifetime false-alarm budget.

Every run below goes through the real audit pipeline (``service.local.audit_frames``) and the
monitor's own alert rules (``service.monitors.findings`` / ``budget``), on SYNTHETIC data:
a binary classifier's rows with two numeric features and one categorical, labels included.

1. Lifetime false alarms under no change: ``--monitors`` monitors of ``--runs`` runs each; a
   monitor false-alarms when any run opens an alert (min_severity ``medium``, the default, and
   ``low``). Alpha-spending (ours) against the naive "alpha = 0.05 at every run".
2. Detection delay: runs until the monitor alerts on a 0.3 sd shift of one feature, and on a
   5-point accuracy drop (labels arrive with the data: harm tracking), for both policies.
3. Cheap runs: one monitor run through the service (benchmark cached) against one full audit
   through the API's worker (benchmark read from storage), for a large benchmark.

    python benchmarks/monitoring.py [--monitors 12] [--runs 8] [--batch 300] [--delay-reps 4]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

os.environ.setdefault("DO_NOT_TRACK", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def frame(n: int, rng, *, shift: float = 0.0, accuracy: float = 0.85) -> pd.DataFrame:
    y = (rng.random(n) < 0.4).astype(int)
    pred = np.where(rng.random(n) < accuracy, y, 1 - y)
    return pd.DataFrame({"id": np.arange(n), "x1": rng.normal(shift, 1, n), "x2": rng.normal(0, 1, n),
                         "region": rng.choice(["north", "south", "east"], n), "label": y, "prediction": pred,
                         "score": np.clip(np.where(pred == 1, .7, .3) + rng.normal(0, .1, n), 0, 1)})


class Monitor:
    """The monitor's decision loop without a database: audit, harm tracking, alert rules."""

    def __init__(self, bench: pd.DataFrame, *, policy: str, alpha: float = 0.05, tolerance: float = 0.0) -> None:
        from service.local import load_pack
        from service.roles import infer_roles

        self.bench, self.policy, self.alpha, self.tolerance = bench, policy, alpha, tolerance
        self.pack, self.roles = load_pack("generic"), infer_roles(bench.columns)
        self.k, self.harm_state = 0, {}

    def run(self, batch: pd.DataFrame) -> dict[str, list[str]]:
        from service.local import audit_frames
        from service.monitors import budget, findings

        self.k += 1
        level = budget.run_alpha(self.alpha, self.k) if self.policy == "spending" else self.alpha
        result = audit_frames(self.bench, batch, pack=self.pack, benchmark_roles=self.roles,
                              production_roles=self.roles, options={"alpha": level, "discovery": False}).result
        out = {}
        for floor in ("medium", "low"):
            out[floor] = [f.kind for f in findings.alertable(result, floor)[0]]
        if self.policy == "spending":
            self.harm_state, checks = budget.track_harm(self.harm_state, result, alpha=self.alpha,
                                                        tolerance=self.tolerance)
        else:  # naive: the run's own fixed-sample test of a drop, at alpha, every run
            overall = result.get("overall") or {}
            checks = [] if not overall.get("changed") or overall["production_value"] >= overall["benchmark_value"] \
                else [budget.HarmCheck("overall", "accuracy", 0, 0, 0, 0, 0, 0, True)]
        harm = ["harm"] * sum(c.harmful for c in checks)
        return {k: v + harm for k, v in out.items()}


def clopper_pearson(k: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    from scipy.stats import beta

    a = (1 - conf) / 2
    return (0.0 if k == 0 else beta.ppf(a, k, n - k + 1), 1.0 if k == n else beta.ppf(1 - a, k + 1, n - k))


def false_alarms(args, bench) -> None:
    print(f"\n1. lifetime false alarms, no change: {args.monitors} monitors x {args.runs} runs of {args.batch} rows")
    for policy in ("spending", "naive"):
        hit = {"medium": 0, "low": 0}
        kinds: dict[str, int] = {}
        started = time.perf_counter()
        for m in range(args.monitors):
            rng = np.random.default_rng(1000 + m)
            monitor = Monitor(bench, policy=policy)
            seen = {"medium": False, "low": False}
            for _ in range(args.runs):
                alerts = monitor.run(frame(args.batch, rng))
                for floor in seen:
                    if alerts[floor] and not seen[floor]:
                        seen[floor] = True
                        hit[floor] += 1
                        for kind in alerts[floor]:
                            kinds[kind] = kinds.get(kind, 0) + 1
        for floor in ("medium", "low"):
            lo, hi = clopper_pearson(hit[floor], args.monitors)
            print(f"  {policy:9s} min_severity={floor:6s}: {hit[floor]}/{args.monitors} monitors ever alerted "
                  f"({hit[floor] / args.monitors:.0%}, 95% CI {lo:.0%}-{hi:.0%})")
        print(f"  {policy:9s} kinds at first alarm: {kinds or '-'}; {time.perf_counter() - started:.0f} s")


def delays(args, bench) -> None:
    print(f"\n2. detection delay (runs of {args.delay_batch} rows until the first alert, at most {args.max_delay}; "
          f"{args.delay_reps} repetitions)")
    cases = {"0.3 sd shift of x1": {"shift": 0.3}, "5-point accuracy drop (0.85 -> 0.80)": {"accuracy": 0.80}}
    for name, change in cases.items():
        for policy in ("spending", "naive"):
            found = []
            for rep in range(args.delay_reps):
                rng = np.random.default_rng(5000 + rep)
                monitor = Monitor(bench, policy=policy)
                caught = None
                for run in range(1, args.max_delay + 1):
                    if monitor.run(frame(args.delay_batch, rng, **change))["medium"]:
                        caught = run
                        break
                found.append(caught)
            got = [d for d in found if d is not None]
            median = f"{np.median(got):.1f}" if got else "-"
            print(f"  {name:38s} {policy:9s}: delays {found} -> median {median} runs, "
                  f"missed {len(found) - len(got)}/{len(found)}")


def cheap_runs(args) -> None:
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    print(f"\n3. cost of one run: benchmark {args.cheap_bench:,} rows, new rows {args.batch:,} (SYNTHETIC)")
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        drop = tmp / "drop"
        drop.mkdir()
        frame(args.cheap_bench, rng).to_parquet(tmp / "bench.parquet", index=False)
        settings = Settings(data_dir=tmp / "data", monitor_roots=[drop], scheduler=False)
        with TestClient(create_app(settings)) as client:
            with open(tmp / "bench.parquet", "rb") as fh:
                bench = client.post("/v1/datasets", files={"file": ("bench.parquet", fh.read())},
                                    data={"name": "bench", "role": "benchmark"}).json()["id"]
            frame(args.batch, rng).to_parquet(tmp / "prod.parquet", index=False)
            with open(tmp / "prod.parquet", "rb") as fh:
                prod = client.post("/v1/datasets", files={"file": ("prod.parquet", fh.read())},
                                   data={"name": "prod", "role": "production"}).json()["id"]
            monitor = client.post("/v1/monitors", json={
                "name": "cost", "benchmark": bench, "source": {"type": "directory", "path": str(drop),
                                                               "pattern": "*.parquet"},
                "schedule": {"interval_seconds": 3600}, "options": {"discovery": False}}).json()["id"]
            service, runtime = client.app.state.monitors, client.app.state.runtime
            full, runs, loads = [], [], []
            for i in range(args.cost_reps + 1):  # the first of each is a warm-up (imports, caches)
                audit = runtime.audits.create(benchmark_id=bench, production_id=prod, domain="generic",
                                              options={"alpha": 0.05, "discovery": False, "correction": "bh",
                                                       "seed": 0, "budget": 500, "min_slice_size": None,
                                                       "evidently_companion": False, "saturation_threshold": 0.8})
                t = time.perf_counter()
                runtime.worker.run(audit.id)  # the API's path: both sides read from storage
                full.append(time.perf_counter() - t)
                t = time.perf_counter()
                runtime.datasets.load_frame(bench)
                loads.append(time.perf_counter() - t)
                frame(args.batch, rng).to_parquet(drop / f"b{i}.parquet", index=False)
                run, future = service.run_now(monitor)
                t = time.perf_counter()
                future.result()
                runs.append(time.perf_counter() - t)
                done = service.store.get_run(run.id)
                assert done.status == "succeeded", (done.status, done.error)
            med = lambda xs: float(np.median(xs[1:]))  # noqa: E731
            print(f"  full audit via the worker (reads benchmark + production): median {med(full):.2f} s")
            print(f"  monitor run (take file, validate, register, audit; benchmark cached): median {med(runs):.2f} s "
                  f"= {med(runs) / med(full):.2f}x the full audit")
            print(f"  reading the benchmark from Parquet, saved per run by the cache: {med(loads):.2f} s; "
                  f"cache hits {service.cache.hits}, misses {service.cache.misses}")
            print("  a monitor run's own steps (s): " + ", ".join(
                f"{k[:-2]} {v:.2f}" for k, v in service.store.get_run(run.id).summary["timings"].items()))
            timings = runtime.audits.get(service.store.get_run(run.id).audit_id).result["timings"]
            print("  where a monitor run's audit spends its time (s): "
                  + ", ".join(f"{k[:-2]} {v:.2f}" for k, v in timings.items() if v >= 0.05))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monitors", type=int, default=12)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=300)
    parser.add_argument("--bench-rows", type=int, default=2000)
    parser.add_argument("--delay-reps", type=int, default=4)
    parser.add_argument("--delay-batch", type=int, default=150)
    parser.add_argument("--max-delay", type=int, default=15)
    parser.add_argument("--cheap-bench", type=int, default=200_000)
    parser.add_argument("--cost-reps", type=int, default=3)
    parser.add_argument("--only", choices=["alarms", "delays", "cost"])
    args = parser.parse_args()
    from service.monitors import budget

    print(f"budget: alpha = 0.05 for a monitor's life; run k tests at {budget.SPENDING}")
    print("  alpha_k for k = 1, 2, 5, 10: " + ", ".join(f"{budget.run_alpha(0.05, k):.5f}" for k in (1, 2, 5, 10)))
    bench = frame(args.bench_rows, np.random.default_rng(0))
    if args.only in (None, "alarms"):
        false_alarms(args, bench)
    if args.only in (None, "delays"):
        delays(args, bench)
    if args.only in (None, "cost"):
        cheap_runs(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
