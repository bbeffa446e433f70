"""The e-detector core shared by the monitors' change detectors: Shiryaev–Roberts sums of e-values.

A monitor turns each run into one e-value per alternative it bets on (``E[e] <= 1`` under no
change, given the runs before). The Shiryaev–Roberts statistic ``R_n = e_n * (1 + R_{n-1})``, the
sum over every possible change time ``j <= n`` of the product of the e-values since ``j``, keeps
the evidence gathered since an unknown change and forgets none of it; ``R_n - n`` is a martingale
under no change, so raising an alarm when ``R_n >= A`` gives an average run length (ARL) to a false
alarm of at least ``A`` runs (optional stopping; Shin, Ramdas & Rinaldo, "E-detectors", 2023).

Budgets share without being divided away: a weighted average ``sum_i w_i R_i`` (weights summing
to at most 1) of such statistics is again one, so alarming on component ``i`` when
``R_i >= A / w_i`` keeps the whole monitor's ARL >= ``A``; the price of ``k`` equal components is
``log k`` in the log statistic, a few rows of evidence, not a ``k``-fold smaller level per run.

Everything is in logs (a long change makes ``R`` overflow a float) and JSON-ready (lists of floats):
a monitor's state file or database row keeps it between runs.

>>> import math
>>> log_r = sr_start(2)
>>> log_r = sr_update(log_r, [math.log(3.0), math.log(0.5)])
>>> [round(math.exp(v), 3) for v in log_r]
[3.0, 0.5]
>>> round(math.exp(sr_update(log_r, [math.log(2.0), 0.0])[0]), 3)  # 2 * (1 + 3)
8.0
>>> round(arl_threshold(0.05, horizon=52, weight=0.25), 1)
4160.0
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["sr_start", "sr_update", "log_mixture", "arl_threshold"]

NEVER = -1.0e300  # log of a zero statistic that stays JSON-serialisable (float("-inf") is not JSON)


def sr_start(n_alternatives: int) -> list[float]:
    """The log Shiryaev–Roberts statistics before any run: ``R_0 = 0`` for each alternative."""
    if int(n_alternatives) != n_alternatives or n_alternatives < 1:
        raise ValueError(f"n_alternatives must be a whole number >= 1, got {n_alternatives!r}.")
    return [NEVER] * int(n_alternatives)


def sr_update(log_r: Sequence[float], log_e: Sequence[float]) -> list[float]:
    """``log R_n = log e_n + log(1 + R_{n-1})``, alternative by alternative."""
    if len(log_r) != len(log_e):
        raise ValueError(f"log_r and log_e must have the same length, got {len(log_r)} and {len(log_e)}.")
    out = np.asarray(log_e, dtype=float) + np.logaddexp(0.0, np.asarray(log_r, dtype=float))
    return [max(float(v), NEVER) for v in out]


def log_mixture(log_r: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """``log sum_j w_j R_j`` (equal weights by default): the statistic of a mixture of alternatives."""
    values = np.asarray(log_r, dtype=float)
    w = np.full(len(values), 1.0 / len(values)) if weights is None else np.asarray(weights, dtype=float)
    if len(w) != len(values) or np.any(w < 0) or w.sum() > 1 + 1e-12:
        raise ValueError("weights must be one non-negative number per alternative, summing to at most 1.")
    keep = w > 0
    return float(np.logaddexp.reduce(values[keep] + np.log(w[keep]))) if keep.any() else NEVER


def arl_threshold(alpha: float, *, horizon: int, weight: float = 1.0) -> float:
    """The alarm threshold ``horizon / (alpha * weight)`` of a component holding ``weight`` of a
    monitor whose ARL to a false alarm must be at least ``horizon / alpha`` runs."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    if int(horizon) != horizon or horizon < 1:
        raise ValueError(f"horizon must be a whole number of runs >= 1, got {horizon!r}.")
    if not 0 < weight <= 1:
        raise ValueError(f"weight must be in (0, 1], got {weight!r}.")
    return int(horizon) / (alpha * weight)
