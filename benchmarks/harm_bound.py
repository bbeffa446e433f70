"""How fast can a monitor with the monitors' guarantee find a drop in a slice? A computation, no simulation.

Two yardsticks for a drop of a slice's accuracy from ``p0`` to ``p1`` seen through ``n`` labelled rows
of the slice a run, for a detector whose average run length to a false alarm is at least ``A`` runs:

* **Lorden's bound** (Lorden 1971; Lai 1998): the worst-case average delay after a change is at
  least ``log(A) / I`` runs as ``A`` grows, ``I`` being the information one run carries about the
  change, ``n KL(Bernoulli(p1) || Bernoulli(p0))``. It is asymptotic and assumes ``p0`` known
  exactly; it bounds the *average* delay, not the chance of a short one.
* **A reference detector that exists**: test the last ``k`` runs' rows of the slice at a level of
  ``1 / (2 A)`` a run (then ``P(alarm by run t) <= t / (2 A)`` under no change, so the average run
  length is at least about ``A``). At the ``k``-th changed run its window holds only changed rows,
  so its chance to have alarmed by then is at least that test's power: exact (binomial) when the
  benchmark's accuracy is known exactly, and a two-sample normal approximation when it is known
  from ``m`` benchmark rows of the slice. It is not an upper bound: a cleverer detector may do better.

``A`` is the monitor's threshold for one of ``K`` tracked harm slices: harm holds half of a budget of
``52/alpha`` runs, slices share it equally (``service.monitors.budget``): ``A = 2 K 52 / alpha``;
``K = 0.5`` stands for a monitor that spent its whole budget on this one slice.

    python -m benchmarks.harm_bound [--p0 0.76] [--drop 0.10] [--runs 5] [--alpha 0.05]
"""
from __future__ import annotations

import argparse
import math
from statistics import NormalDist

from scipy.stats import binom

HORIZON = 52  # weekly runs for a year: the guarantee is an average run length of HORIZON / alpha runs
BENCHMARK_ROWS = (250, 1000)  # benchmark rows of the slice: the real tables' slices hold 222 to 306


def kl_bernoulli(p1: float, p0: float) -> float:
    """``KL(Bernoulli(p1) || Bernoulli(p0))`` in nats: the information one row carries about a change to ``p1``."""
    return p1 * math.log(p1 / p0) + (1 - p1) * math.log((1 - p1) / (1 - p0))


def lorden_delay(log_threshold: float, rows_a_run: float, kl: float) -> float:
    """Lorden's asymptotic lower bound on the worst-case average delay, in runs."""
    return log_threshold / (rows_a_run * kl)


def window_level(arl: float) -> float:
    """The level a run that keeps a sliding-window detector's average run length at least about ``arl``."""
    return 1 / (2 * arl)


def known_power(p0: float, p1: float, rows: int, level: float) -> float:
    """Power of the exact test "few correct among ``rows``" at ``level``, the benchmark's ``p0`` known exactly."""
    cut = int(binom.ppf(level, rows, p0))
    while cut >= 0 and binom.cdf(cut, rows, p0) > level:
        cut -= 1
    return float(binom.cdf(cut, rows, p1)) if cut >= 0 else 0.0


def two_sample_power(p0: float, p1: float, rows: int, bench_rows: int, level: float) -> float:
    """Power of a one-sided two-sample test at ``level`` against ``bench_rows`` benchmark rows (normal approx.)."""
    z = NormalDist().inv_cdf(1 - level)
    se_null = math.sqrt(p0 * (1 - p0) * (1 / bench_rows + 1 / rows))
    se_drop = math.sqrt(p0 * (1 - p0) / bench_rows + p1 * (1 - p1) / rows)
    return NormalDist().cdf(((p0 - p1) - z * se_null) / se_drop)


def rows_for_power(p0: float, p1: float, runs: int, level: float, power: float = 0.8) -> int:
    """The fewest rows a run with which the known-benchmark window test over ``runs`` runs reaches ``power``."""
    n = 1
    while known_power(p0, p1, runs * n, level) < power:
        n += 1
    return n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p0", type=float, default=0.76, help="the slice's accuracy before the drop")
    parser.add_argument("--drop", type=float, default=0.10)
    parser.add_argument("--runs", type=int, default=5, help="changed runs within which the drop should be found")
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(argv)
    p0, p1, k = args.p0, args.p0 - args.drop, args.runs
    kl = kl_bernoulli(p1, p0)
    print(f"drop {p0:.2f} -> {p1:.2f}: {kl:.4f} nats a labelled row; ARL >= {HORIZON / args.alpha:,.0f} runs")
    bench = " | ".join(f"window test, {m} benchmark rows" for m in BENCHMARK_ROWS)
    print(f"| tracked harm slices K | rows a run | Lorden: least average delay (runs) | window test of {k} runs, "
          f"benchmark known exactly | {bench} | rows a run for 80 %, benchmark known |")
    print("|---|---|---|---|" + "---|" * len(BENCHMARK_ROWS) + "---|")
    for slices in (0.5, 1, 2, 4):
        arl = 2 * slices * HORIZON / args.alpha
        level = window_level(arl)
        need = rows_for_power(p0, p1, k, level)
        for n in (55, 70, 76, 108, 135):
            label = "whole budget" if slices == 0.5 else str(slices)
            two = " | ".join(f"{two_sample_power(p0, p1, k * n, m, level):.2f}" for m in BENCHMARK_ROWS)
            print(f"| {label} | {n} | {lorden_delay(math.log(arl), n, kl):.1f} "
                  f"| {known_power(p0, p1, k * n, level):.2f} | {two} | {need} |")


if __name__ == "__main__":
    main()
