"""Full-audit benchmark: 1 M production rows x 50 columns on this machine.

Runs the same pipeline as ``POST /v1/audits`` / ``contextshift audit`` (every detector, the
domain pack's expert slices, discovery, ranking, next-round plan, HTML + Markdown report) on
SYNTHETIC data from ``domains.examples`` widened to 50 columns with extra numeric features
(two of them shifted on purpose), and prints wall time, peak memory and report size.

    python benchmarks/audit.py [--rows 1000000] [--benchmark-rows 200000] [--domain medical]

Targets: under 60 s, peak memory increase under 3x the input frames, report under 1 MB.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("DO_NOT_TRACK", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def widen(frame, n_columns: int, rng, shifted: bool):
    """Add numeric features until the frame has ``n_columns`` columns (2 shifted in production)."""
    extra = n_columns - frame.shape[1]
    for i in range(extra):
        loc = 0.3 if shifted and i < 2 else 0.0
        frame[f"x_{i:02d}"] = rng.normal(loc, 1.0, len(frame)).astype("float64")
    return frame


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakSampler(threading.Thread):
    """Samples resident memory every 50 ms (ru_maxrss would include data generation)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self.running = rss_mb(), True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, rss_mb())
            time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--benchmark-rows", type=int, default=200_000)
    parser.add_argument("--columns", type=int, default=50)
    parser.add_argument("--domain", default="medical", choices=["medical", "deepfake", "facial_expression"])
    parser.add_argument("--out", default="benchmarks/.out")
    args = parser.parse_args()

    from domains import load_builtin, make_example
    from service.local import audit_frames
    from service.roles import infer_roles

    pack = load_builtin(args.domain)
    t0 = time.perf_counter()
    bench, prod = make_example(args.domain, n_benchmark=args.benchmark_rows, n_production=args.rows,
                               shift="planted", random_state=0)
    rng = np.random.default_rng(1)
    bench, prod = widen(bench, args.columns, rng, False), widen(prod, args.columns, rng, True)
    input_mb = (bench.memory_usage(deep=True).sum() + prod.memory_usage(deep=True).sum()) / 2**20
    print(f"data: benchmark {bench.shape}, production {prod.shape} (SYNTHETIC), {input_mb:.0f} MB in memory, "
          f"generated in {time.perf_counter() - t0:.1f} s")
    contexts = [c.name for c in pack.context]
    roles_b = infer_roles(bench.columns, context_columns=contexts)
    roles_p = infer_roles(prod.columns, context_columns=contexts)
    import sklearn, scipy  # noqa: F401,E401  imported before the clock starts, as in a running server
    import reports  # noqa: F401

    before = rss_mb()
    sampler = PeakSampler()
    sampler.start()
    started = time.perf_counter()
    outcome = audit_frames(bench, prod, pack=pack, benchmark_roles=roles_b, production_roles=roles_p)
    wall = time.perf_counter() - started
    sampler.running = False
    sampler.join()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "audit-benchmark.html").write_text(outcome.html, encoding="utf-8")
    report_kb = len(outcome.html.encode()) / 1024
    increase = sampler.peak - before
    print(f"wall time: {wall:.1f} s (target < 60 s)")
    print(f"peak memory: {sampler.peak:.0f} MB resident, +{increase:.0f} MB during the audit = "
          f"{increase / input_mb:.2f}x the input frames (target < 3x)")
    print(f"report: {report_kb:.0f} KB (target < 1024 KB)")
    print("stage timings (s):", ", ".join(f"{k[:-2]} {v:.1f}" for k, v in outcome.result["timings"].items()))
    print(f"verdict: {outcome.result['verdict']['summary']}")
    ok = wall < 60 and increase < 3 * input_mb and report_kb < 1024
    print("TARGETS MET" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
