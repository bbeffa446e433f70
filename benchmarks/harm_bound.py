"""How fast can any monitor with the monitors' guarantee find a drop in a slice? A computation, no simulation.

For a change detector whose average run length to a false alarm is at least ``A`` runs, Lorden's
bound (Lorden 1971; Lai 1998) says the worst-case average delay after a change is at least
``log(A) / I`` runs as ``A`` grows, where ``I`` is the Kullback–Leibler information one run carries
about the change: here ``n`` labelled rows of the slice times ``KL(Bernoulli(p1) || Bernoulli(p0))``
for a drop from ``p0`` to ``p1``. No detector, however clever, beats it; it assumes the benchmark's
value is known exactly, which only makes it easier.

Beside it, the best any test can do within ``k`` changed runs when it is even *told* the change run
and the drop's size (a single likelihood-ratio test of all ``k n`` rows at the log threshold of the
alarm): its log likelihood ratio is about normal with mean ``mu = k n KL`` and variance ``2 mu``, so
it reaches ``log A`` with probability ``Phi((mu - log A) / sqrt(2 mu))``. And the rows a run such a
told test needs for 80 % within ``k`` runs.

``A`` is the monitor's threshold for one of ``K`` tracked harm slices: harm holds half of a budget
of ``52/alpha`` runs, slices share it equally (``service.monitors.budget``): ``A = 2 K 52 / alpha``;
``K = 0.5`` stands for a monitor that spent its whole budget on this one slice.

    python -m benchmarks.harm_bound [--p0 0.76] [--drop 0.10] [--runs 5] [--alpha 0.05]
"""
from __future__ import annotations

import argparse
import math
from statistics import NormalDist

HORIZON = 52  # weekly runs for a year: the guarantee is an average run length of HORIZON / alpha runs


def kl_bernoulli(p1: float, p0: float) -> float:
    """``KL(Bernoulli(p1) || Bernoulli(p0))`` in nats: the information one row carries about a change to ``p1``."""
    return p1 * math.log(p1 / p0) + (1 - p1) * math.log((1 - p1) / (1 - p0))


def lorden_delay(log_threshold: float, rows_a_run: float, kl: float) -> float:
    """Lorden's lower bound on the worst-case average delay, in runs."""
    return log_threshold / (rows_a_run * kl)


def told_power(log_threshold: float, rows: float, kl: float) -> float:
    """Chance that a likelihood-ratio test told the change run and size reaches the threshold on ``rows`` rows."""
    mu = rows * kl
    return NormalDist().cdf((mu - log_threshold) / math.sqrt(2 * mu))


def rows_for_power(log_threshold: float, kl: float, runs: int, power: float = 0.8) -> float:
    """Rows a run the told test needs to reach ``power`` within ``runs`` runs."""
    z = NormalDist().inv_cdf(power)
    s = (z * math.sqrt(2) + math.sqrt(2 * z * z + 4 * log_threshold)) / 2  # mu - z sqrt(2 mu) = c, s = sqrt(mu)
    return s * s / kl / runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p0", type=float, default=0.76, help="the slice's accuracy before the drop")
    parser.add_argument("--drop", type=float, default=0.10)
    parser.add_argument("--runs", type=int, default=5, help="changed runs within which the drop should be found")
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(argv)
    kl = kl_bernoulli(args.p0 - args.drop, args.p0)
    print(f"drop {args.p0:.2f} -> {args.p0 - args.drop:.2f}: {kl:.4f} nats a labelled row; "
          f"ARL >= {HORIZON / args.alpha:,.0f} runs")
    print("| tracked harm slices K | log threshold | rows a run | Lorden: least average delay (runs) "
          f"| told test: found within {args.runs} runs | rows a run for 80 % within {args.runs} |")
    print("|---|---|---|---|---|---|")
    for k in (0.5, 1, 2, 4):
        log_a = math.log(2 * k * HORIZON / args.alpha)
        need = rows_for_power(log_a, kl, args.runs)
        for n in (55, 70, 76, 108, 135):
            label = "whole budget" if k == 0.5 else str(k)
            print(f"| {label} | {log_a:.2f} | {n} | {lorden_delay(log_a, n, kl):.1f} "
                  f"| {told_power(log_a, args.runs * n, kl):.2f} | {need:.0f} |")


if __name__ == "__main__":
    main()
