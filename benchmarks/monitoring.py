"""Scheduled-monitoring benchmark: the price of one lifetime false-alarm budget.

Every run below goes through the real audit pipeline (``service.audits.local.audit_frames``) and the
monitor's own alert rules (``service.monitors.findings`` / ``budget``), on SYNTHETIC data:
a binary classifier's rows with two numeric features and one categorical, labels included.

1. Lifetime false alarms under no change: ``--monitors`` monitors of ``--runs`` runs each; a
   monitor false-alarms when any run opens an alert (min_severity ``medium``, the default, and
   ``low``). Alpha-spending (ours) against the naive "alpha = 0.05 at every run".
2. Detection delay: runs until the monitor alerts on a 0.3 sd shift of one feature, and on a
   5-point accuracy drop (labels arrive with the data: harm tracking), for both policies.
3. Cheap runs: monitor runs through the service with a cold reference cache, warm from disk
   only (a new process) and warm in memory, against a full audit of the same rows through the
   API's worker with the cache off, for a large benchmark (``--cost-data medical``: the medical
   example, contexts and embeddings included).

    python benchmarks/monitoring.py [--monitors 12] [--runs 8] [--batch 300] [--delay-reps 4]
    python benchmarks/monitoring.py --only cost [--cost-data medical] [--cheap-bench 200000]
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
        from audit.roles import infer_roles
        from service.audits.local import load_pack

        self.bench, self.policy, self.alpha, self.tolerance = bench, policy, alpha, tolerance
        self.pack, self.roles = load_pack("generic"), infer_roles(bench.columns)
        self.k, self.harm_state = 0, {}

    def run(self, batch: pd.DataFrame) -> dict[str, list[str]]:
        from service.audits.local import audit_frames
        from service.monitors import budget, findings

        self.k += 1
        level = budget.run_alpha(self.alpha, self.k) if self.policy == "spending" else self.alpha
        result = audit_frames(self.bench, batch, pack=self.pack, benchmark_roles=self.roles,
                              production_roles=self.roles, options={"alpha": level, "discovery": False}).result_json
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


def cost_data(args):
    """(domain, benchmark frame, batch maker) for the cost measurement: SYNTHETIC either way."""
    if args.cost_data == "medical":
        from domains.examples import make_example

        bench = make_example("medical", n_benchmark=args.cheap_bench, n_production=10, shift="planted",
                             random_state=0)[0]
        return "medical", bench, lambda i: make_example("medical", n_benchmark=10, n_production=args.batch,
                                                        shift="planted", random_state=100 + i)[1]
    rng = np.random.default_rng(7)
    return "generic", frame(args.cheap_bench, rng), lambda i: frame(args.batch, rng)


def cheap_runs(args) -> None:
    """Monitor runs with a cold and a warm reference cache against a full audit of the same rows."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    domain, bench_frame, batch = cost_data(args)
    print(f"\n3. cost of one run: {domain} benchmark {args.cheap_bench:,} rows, new rows {args.batch:,} (SYNTHETIC)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        drop = tmp / "drop"
        drop.mkdir()
        bench_frame.to_parquet(tmp / "bench.parquet", index=False)
        settings = Settings(data_dir=tmp / "data", monitor_roots=[drop], scheduler=False)
        with TestClient(create_app(settings)) as client:
            with open(tmp / "bench.parquet", "rb") as fh:
                bench = client.post("/v1/datasets", files={"file": ("bench.parquet", fh.read())},
                                    data={"name": "bench", "role": "benchmark"}).json()["id"]
            monitor = client.post("/v1/monitors", json={
                "name": "cost", "benchmark": bench, "domain": domain, "options": {"discovery": False},
                "source": {"type": "directory", "path": str(drop), "pattern": "*.parquet"},
                "schedule": {"interval_seconds": 3600}}).json()["id"]
            costs = _measure(client.app.state.monitors, client.app.state.runtime, monitor, bench, domain, drop,
                             batch, args.cost_reps)
    _report_costs(costs)


def _measure(service, runtime, monitor, bench, domain, drop, batch, reps) -> dict:
    """Per repetition: a cold run, the full audit of its rows (cache off), a run warm from disk
    only (as a new process, e.g. cron, sees it) and a run warm in memory."""
    cache = runtime.reference_cache()
    costs = {"full": [], "cold": [], "disk": [], "warm": [], "timings": {}}
    n = 0

    def run(kind: str):
        nonlocal n
        batch(n).to_parquet(drop / f"b{n}.parquet", index=False)
        n += 1
        t = time.perf_counter()
        row, future = service.run_now(monitor)
        future.result()
        costs[kind].append(time.perf_counter() - t)
        done = service.store.get_run(row.id)
        assert done.status == "succeeded", (done.status, done.error)
        costs["timings"][kind] = runtime.audits.get(done.audit_id).result["timings"]
        costs["steps"] = done.summary["timings"]
        return done

    for _ in range(reps + 1):  # the first of each is a warm-up (imports)
        cache.clear()
        cold = run("cold")
        runtime.settings.reference_cache = False  # the same worker path, fitting everything
        audit = runtime.audits.create(benchmark_id=bench, production_id=runtime.audits.get(cold.audit_id).production_id,
                                      domain=domain, options=runtime.audits.get(cold.audit_id).options)
        t = time.perf_counter()
        runtime.worker.run(audit.id)
        costs["full"].append(time.perf_counter() - t)
        costs["timings"]["full"] = runtime.audits.get(audit.id).result["timings"]
        same = [_comparable(runtime.audits.get(a).result) for a in (audit.id, cold.audit_id)]
        assert same[0] == same[1], "the full audit and the cold run disagree on the same rows"
        runtime.settings.reference_cache = True
        cache.clear(disk=False)
        run("disk")
        run("warm")
    return costs


def _comparable(result: dict) -> dict:
    """An audit's result without what names the audit itself (its id, time and timings)."""
    out = {k: v for k, v in result.items() if k not in ("id", "created_at", "timings")}
    out["next_round"] = {k: v for k, v in (out.get("next_round") or {}).items() if k != "audit_id"}
    return out


def _report_costs(costs: dict) -> None:
    med = {k: float(np.median(v[1:])) for k, v in costs.items() if k not in ("timings", "steps")}
    full = med["full"]
    print(f"  full audit of a run's rows via the worker (reads both, fits the benchmark): median {full:.2f} s")
    for kind, label in (("cold", "monitor run, cold cache (fits, stores)"),
                        ("disk", "monitor run, warm cache on disk only (new process)"),
                        ("warm", "monitor run, warm cache in memory")):
        print(f"  {label:52s}: median {med[kind]:.2f} s = {med[kind] / full:.2f}x the full audit")
    print(f"  warm / cold = {med['warm'] / med['cold']:.2f}; a warm run's own steps (s): "
          + ", ".join(f"{k[:-2]} {v:.2f}" for k, v in costs["steps"].items()))
    for kind in ("full", "cold", "warm"):
        print(f"  where the {kind} run's audit spends its time (s): " + ", ".join(
            f"{k[:-2]} {v:.2f}" for k, v in costs["timings"][kind].items() if v >= 0.05))


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
    parser.add_argument("--cost-data", choices=["synthetic", "medical"], default="synthetic",
                        help="benchmark of the cost measurement: the 7-column frame above or the medical example")
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
