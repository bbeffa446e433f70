"""Statistical quality of the whole audit, measured on SYNTHETIC data.

* False-alarm rate of the dataset-level verdict (``verdict.shift_detected``) on no-shift
  pairs, from n = 100 to n = 1 M rows per side: the three domain generators with
  ``shift="none"`` (features, contexts, labels, predictions, embeddings), every detector and
  the audit-wide correction. Target: <= alpha + Monte-Carlo tolerance.
* Power by n: a 0.3 sd mean shift in one of 20 features at n = 100 ... 3,000 per side, through
  the full audit (generic pack). Target: detected in >= 90 % of runs at n = 1,000.
* Power by n of the within-context test: accuracy 10 points lower inside a context
  whose share also moved (20 % -> 60 %), through the full audit; reported as concept shift?

    python benchmarks/calibration.py [--quick]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

os.environ.setdefault("DO_NOT_TRACK", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DOMAINS = ("medical", "deepfake", "facial_expression")
FULL = {100: 150, 1_000: 90, 10_000: 45, 100_000: 15, 1_000_000: 3}
QUICK = {100: 30, 1_000: 30, 10_000: 9, 100_000: 3}


def audit(bench, prod, domain, seed):
    from audit.roles import infer_roles
    from domains import load_builtin
    from service.audits.local import audit_frames

    pack = load_builtin(domain)
    contexts = [c.name for c in pack.context]
    return audit_frames(bench, prod, pack=pack, options={"seed": seed},
                        benchmark_roles=infer_roles(bench.columns, context_columns=contexts),
                        production_roles=infer_roles(prod.columns, context_columns=contexts)).result_json


def upper_bound(k: int, n: int, z: float = 1.96) -> float:
    """Wilson upper bound of a rate, to read k/n against the target."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre + half


def false_alarms(reps: dict[int, int]) -> None:
    from domains import make_example

    print("no-shift pairs: false-alarm rate of verdict.shift_detected (alpha = 0.05)")
    for n, count in reps.items():
        started, alarms, kinds = time.perf_counter(), 0, {}
        for r in range(count):
            domain = DOMAINS[r % 3]
            bench, prod = make_example(domain, n_benchmark=n, n_production=n, shift="none", random_state=1000 + r)
            result = audit(bench, prod, domain, r)
            if result["verdict"]["shift_detected"]:
                alarms += 1
                for section in ("covariate", "label", "semantic"):
                    if result[section]["is_shift"]:
                        kinds[section] = kinds.get(section, 0) + 1
        print(f"  n = {n:>9,}: {alarms:3d}/{count} = {alarms / count:.3f} (95 % upper bound "
              f"{upper_bound(alarms, count):.3f}); sections: {kinds or '-'}; {time.perf_counter() - started:.0f} s")


def power(count: int, sizes=(100, 300, 1_000, 3_000)) -> None:
    rng = np.random.default_rng(7)
    print("power by n, 0.3 sd shift in 1 of 20 features (target >= 0.90 at n = 1,000)")
    for n in sizes:
        hits = 0
        for r in range(count):
            bench = pd.DataFrame(rng.normal(size=(n, 20)), columns=[f"f{i}" for i in range(20)])
            prod = pd.DataFrame(rng.normal(size=(n, 20)), columns=bench.columns)
            prod["f3"] += 0.3  # SYNTHETIC shift
            hits += bool(audit(bench, prod, "generic", r)["verdict"]["shift_detected"])
        print(f"  n = {n:>6,}: {hits}/{count} = {hits / count:.3f}")


def within_context_power(count: int, sizes=(1_000, 3_000, 10_000)) -> None:
    """The issue-9 scenario "mix plus within-context drop" (tests/service/audits/test_kinds.py), by n."""
    from tests.service.audits.test_kinds import audit as kinds_audit, reported_kinds, world

    print("power by n, within-context drop in a context whose share moved -> concept_shift reported")
    for n in sizes:
        hits = 0
        for r in range(count):
            rng = np.random.default_rng(5000 + r)
            result = kinds_audit(world(rng, n), world(rng, n, share_b=0.6, flip_b=0.45), r)
            hits += "concept_shift" in reported_kinds(result)
        print(f"  n = {n:>6,}: {hits}/{count} = {hits / count:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, no n = 1 M")
    args = parser.parse_args()
    power(20 if args.quick else 100)
    within_context_power(10 if args.quick else 40)
    false_alarms(QUICK if args.quick else FULL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
