"""The harm drop e-detector alone, on binomial counts shaped like the real tables' slices: how often
it alarms under no change (against Doob's bound and against the same statistic on data that *are*
normal), and how close its evidence after a drop comes to the best a test knowing the change run can
have.

One slot = one slice: a benchmark of ``n_benchmark`` rows at accuracy ``p`` and runs of ``n_run``
rows (the shapes of the tracked slices of crash, covid_testing, diamonds and flchain in
``benchmarks/monitoring_detectors.py``: a 2,000-row benchmark and batches of 500). Counts are drawn
from binomials, so what is measured is the detector's own calibration, not the tables'.

* ``null``: the share of slots whose statistic ever reaches ``A`` within ``runs`` runs, beside
  Doob's bound ``runs / A`` (which any valid Shiryaev–Roberts statistic keeps) and the rate of the
  same statistic fed exactly normal contrasts (what the normal model promises);
* ``oracle``: a SYNTHETIC 10-point drop from run ``start``; after 5 changed runs, the detector's
  log statistic beside the log-likelihood ratio of a test told the change run and the drop size.

``--detector FILE`` measures another version of ``detectors/accuracy_drop.py`` (e.g. one from git
history) on the same draws: ``python -m benchmarks.harm_calibration --part null --detector old.py``.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from types import ModuleType

import numpy as np

from detectors import accuracy_drop
from detectors.e_detector import shared_log_ratios, shared_start, shared_update

# (table, slice, benchmark rows, accuracy, rows a run): every tracked slice of the four tables, and the
# dropped one first in each table
SLOTS = (("crash", "old_vehicles", 540, 0.814, 135), ("crash", "older_occupants", 204, 0.720, 51),
         ("crash", "unbelted", 586, 0.725, 147),
         ("covid_testing", "emergency_department", 434, 0.881, 108), ("covid_testing", "adult_staff", 344, 0.800, 86),
         ("covid_testing", "late_pandemic", 1108, 0.887, 277),
         ("diamonds", "tinted", 306, 0.749, 76), ("diamonds", "included", 28, 0.845, 7),
         ("diamonds", "large_stones", 80, 0.733, 20),
         ("flchain", "oldest", 222, 0.801, 55), ("flchain", "top_decile", 214, 0.682, 53),
         ("flchain", "old_women", 154, 0.789, 38))
DROPPED = ("old_vehicles", "emergency_department", "tinted", "oldest")


def load(path: str | None) -> ModuleType:
    if path is None:
        return accuracy_drop
    spec = importlib.util.spec_from_file_location("drop_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its frozen dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def null_rate(detector: ModuleType, p: float, n_benchmark: int, n_run: int, *, runs: int, threshold: float,
              reps: int, seed: int) -> float:
    rng, alarms = np.random.default_rng(seed), 0
    for _ in range(reps):
        state = detector.drop_start(rng.binomial(n_benchmark, p), n_benchmark)
        for _ in range(runs):
            state, ev = detector.drop_update(state, rng.binomial(n_run, p), n_run)
            if ev.log_statistic >= math.log(threshold):
                alarms += 1
                break
    return alarms / reps


def normal_rate(p: float, n_benchmark: int, n_run: int, *, runs: int, threshold: float, reps: int, seed: int) -> float:
    """The current detector's statistic on contrasts that are exactly normal with the variances it assumes."""
    rng, alarms = np.random.default_rng(seed), 0
    shifts = [-m for m in accuracy_drop.drop_start(round(p * n_benchmark), n_benchmark)["shifts"]]
    b, w = 4.0 * n_benchmark + 2, 4.0 * n_run + 2
    for _ in range(reps):
        state, shared = shared_start(), rng.normal(0, 1 / math.sqrt(b))
        for _ in range(runs):
            state = shared_update(state, w * (rng.normal(0, 1 / math.sqrt(w)) - shared), w)
            if np.logaddexp.reduce(shared_log_ratios(state, shifts, b).ravel()) - math.log(3) >= math.log(threshold):
                alarms += 1
                break
    return alarms / reps


def oracle(detector: ModuleType, p: float, n_benchmark: int, n_run: int, *, start: int, reps: int,
           seed: int) -> tuple[float, float]:
    """Mean log statistic after 5 changed runs, and the mean log-likelihood ratio of the test told the change
    run and the drop (the same normal model on the current detector's scale)."""
    rng, got, told = np.random.default_rng(seed), [], []
    for _ in range(reps):
        b_successes = rng.binomial(n_benchmark, p)
        state, ref = detector.drop_start(b_successes, n_benchmark), accuracy_drop.drop_start(b_successes, n_benchmark)
        for run in range(1, start + 5):
            x = rng.binomial(n_run, p - 0.1 if run >= start else p)
            state, ev = detector.drop_update(state, x, n_run)
            ref, _ = accuracy_drop.drop_update(ref, x, n_run)
        got.append(ev.log_statistic)
        told.append(float(shared_log_ratios(ref, [-ref["shifts"][1]], 4.0 * n_benchmark + 2)[-5, 0]))
    return float(np.mean(got)), float(np.mean(told))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("null", "oracle"), required=True)
    parser.add_argument("--detector", help="another accuracy_drop.py to measure (default: the package's)")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threshold", type=float, default=2_000.0, help="the alarm level A (null part)")
    parser.add_argument("--reps", type=int, default=3_000)
    args = parser.parse_args(argv)
    detector = load(args.detector)
    if args.part == "null":
        print(f"| table | slice | benchmark rows | accuracy | rows a run | alarmed within {args.runs} runs at "
              f"A = {args.threshold:,.0f} | normal contrasts | Doob's bound |\n|---|---|---|---|---|---|---|---|")
        for i, (table, name, nb, p, nr) in enumerate(SLOTS):
            kw = dict(runs=args.runs, threshold=args.threshold, reps=args.reps, seed=100 + i)
            print(f"| {table} | {name} | {nb} | {p:.3f} | {nr} | {null_rate(detector, p, nb, nr, **kw):.4f} | "
                  f"{normal_rate(p, nb, nr, **kw):.4f} | {args.runs / args.threshold:.4f} |")
        return
    print("| table | dropped slice | from run | mean log statistic after 5 changed runs | told the change run "
          "and the drop |\n|---|---|---|---|---|")
    for i, (table, name, nb, p, nr) in enumerate(s for s in SLOTS if s[1] in DROPPED):
        for start in (3, 10, 50):
            got, told = oracle(detector, p, nb, nr, start=start, reps=args.reps, seed=200 + 10 * i + start)
            print(f"| {table} | {name} | {start} | {got:.2f} | {told:.2f} |")


if __name__ == "__main__":
    main()
