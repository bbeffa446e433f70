"""Sequential decisions for a monitor that audits production run after run.

A monitor asks the same question every run, for as long as it lives. Two rules keep its
false alarms bounded without going blind as it ages:

* **A fixed level per run over a declared horizon.** Every run tests at
  ``horizon_level(alpha, horizon) = alpha / horizon``. By the union bound, the chance of any false
  alarm within any ``horizon`` consecutive runs is at most ``alpha``, and the expected number of
  runs before the first false alarm is at least ``horizon / alpha``. Unlike spending that shrinks
  with the run number (``alpha_k ∝ 1/k²`` tests run 50 at about 1e-6), run 500 keeps run 1's power.
* **A windowed drop test for harm.** A metric that is a proportion (accuracy, sensitivity, ...)
  is compared between the fixed benchmark and the pooled last ``window`` runs of labelled
  production: a one-sided Newcombe interval for the difference at the run's level, and a floor on
  the point drop. A drop that started at run ``k`` is judged on post-change rows only after
  ``window`` runs, so it is not diluted by the months before it.

Both are pure functions. Monitors use the first for their audits' level; harm is now judged by
the e-detectors of :mod:`detectors.accuracy_drop`, which gather evidence over every run since a
drop (``benchmarks/monitoring_detectors.py`` runs the window test beside them for comparison).

>>> round(horizon_level(0.025, horizon=52), 6)
0.000481
>>> res = window_drop_test(850, 1000, 150, 240, level=0.0005, floor=0.05)
>>> res.harmful, round(res.drop, 3)
(True, 0.225)
>>> window_drop_test(850, 1000, 200, 240, level=0.0005, floor=0.05).harmful
False
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from detectors.base import Result, renamed_parameters
from detectors.intervals import newcombe_interval
from detectors.validation import check_alpha, check_int, check_number

__all__ = ["horizon_level", "WindowDrop", "window_drop_test", "confidence_sequence"]


def horizon_level(alpha: float, *, horizon: int) -> float:
    """The level of every run of a monitor whose ``alpha`` covers any ``horizon`` consecutive runs.

    Parameters
    ----------
    alpha : float in (0, 1)
        The false-alarm probability allowed over ``horizon`` consecutive runs.
    horizon : int >= 1
        Runs the guarantee covers (52: a year of weekly runs).
    """
    check_alpha(alpha)
    check_int("horizon", horizon, minimum=1)
    return alpha / int(horizon)


@dataclass(frozen=True)
class WindowDrop(Result):
    """Benchmark minus production on a proportion metric, over one window of runs.

    ``drop`` > 0 means production is worse (for a higher-is-better metric); ``drop_low`` is the
    one-sided lower confidence bound at the test's level; ``harmful`` is ``drop_low > 0`` and
    ``drop >= floor``.
    """

    benchmark_value: float
    production_value: float
    drop: float
    drop_low: float
    level: float
    floor: float
    n_benchmark: int
    n_production: int
    harmful: bool


@renamed_parameters(benchmark_successes="reference_successes", benchmark_n="reference_n")
def window_drop_test(reference_successes: float, reference_n: int, window_successes: float, window_n: int, *,
                     level: float, floor: float = 0.0) -> WindowDrop:
    """Is production's proportion lower than the benchmark's, significantly and by at least ``floor``?

    Parameters
    ----------
    reference_successes, reference_n : counts of the fixed benchmark (e.g. correct predictions, rows)
    window_successes, window_n : the same counts pooled over the window's production runs
    level : float in (0, 0.5)
        One-sided error probability of the test (the run's share of the monitor's budget).
    floor : float >= 0
        Smallest point drop that counts as harm: the practical floor next to significance.
    """
    check_number("level", level, minimum=0, maximum=0.5, open_low=True, open_high=True)
    check_number("floor", floor, minimum=0)
    for name, successes, n in (("reference", reference_successes, reference_n),
                               ("window", window_successes, window_n)):
        check_number(f"{name}_n", n, minimum=0, open_low=True)
        check_number(f"{name}_successes", successes, minimum=0, maximum=n)
    # two-sided Newcombe at 1 - 2*level gives the one-sided bound at level
    low, _ = newcombe_interval(window_successes, window_n, reference_successes, reference_n,
                               confidence=1.0 - 2.0 * level)
    p_b, p_w = reference_successes / reference_n, window_successes / window_n
    drop = p_b - p_w
    return WindowDrop(benchmark_value=p_b, production_value=p_w, drop=drop, drop_low=float(low), level=level,
                      floor=floor, n_benchmark=int(reference_n), n_production=int(window_n),
                      harmful=bool(low > 0 and drop >= floor))


def _log_mixture(successes: float, n: float, p: float, a: float = 0.5, b: float = 0.5) -> float:
    """log of Robbins' beta-binomial mixture martingale at ``p`` (Beta(a, b) mixing prior)."""
    failures = n - successes
    log_beta = (math.lgamma(a + successes) + math.lgamma(b + failures) - math.lgamma(a + b + n)
                - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    return log_beta - successes * math.log(p) - failures * math.log1p(-p)


def confidence_sequence(successes: float, n: float, alpha: float) -> tuple[float, float]:
    """Anytime-valid ``1 - alpha`` bounds on a Bernoulli mean after ``successes`` in ``n`` trials.

    ``{p : M_n(p) < 1/alpha}`` for Robbins' beta-binomial mixture ``M_n``: valid at every ``n`` at
    once (Ville's inequality); an interval because the log mixture is convex in ``p``.
    """
    if n <= 0:
        return 0.0, 1.0
    threshold = math.log(1.0 / alpha)
    centre = min(max(successes / n, 1e-12), 1 - 1e-12)

    def edge(lo: float, hi: float) -> float:
        for _ in range(60):  # bisection to ~1e-18: far below any reported precision
            mid = (lo + hi) / 2
            if _log_mixture(successes, n, mid) < threshold:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if _log_mixture(successes, n, 1e-12) < threshold else edge(centre, 1e-12)
    high = 1.0 if _log_mixture(successes, n, 1 - 1e-12) < threshold else edge(centre, 1 - 1e-12)
    return low, high
