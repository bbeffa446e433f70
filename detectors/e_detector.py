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
from typing import Any

import numpy as np

from detectors.base import renamed_parameters
from detectors.validation import check_alpha, check_int, check_number

__all__ = ["sr_start", "sr_update", "log_mixture", "arl_threshold", "shared_start", "shared_update",
           "shared_log_ratios", "MAX_CHANGE_RUNS"]

NEVER = -1.0e300  # log of a zero statistic that stays JSON-serialisable (float("-inf") is not JSON)
MAX_CHANGE_RUNS = 104  # change runs the shared-error detectors keep: two years of weekly runs (bounded state)


def sr_start(n_alternatives: int) -> list[float]:
    """The log Shiryaev–Roberts statistics before any run: ``R_0 = 0`` for each alternative."""
    check_int("n_alternatives", n_alternatives, minimum=1)
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
    check_alpha(alpha)
    check_int("horizon", horizon, minimum=1)
    check_number("weight", weight, minimum=0, maximum=1, open_low=True)
    return int(horizon) / (alpha * weight)


# -- runs compared with one benchmark sample: the benchmark's error is shared by every run --------
#
# Run t gives a contrast X_t (its mean minus the benchmark's) with precision w_t; the benchmark's own
# error adds one shared term of precision ``reference_precision``: under no change
# X ~ N(0, diag(1/w_t) + 11'/reference_precision). A shift ``m`` of the mean from run j on has the
# exact likelihood ratio (Sherman–Morrison, K = reference_precision + sum_t w_t, S = sum_t w_t X_t,
# S_j and W_j the same sums from run j on)
#     log L_{j,m} = m (S_j - W_j S / K) - m^2 (W_j - W_j^2 / K) / 2,
# a martingale in the number of runs under no change; summed over change runs j it is a
# Shiryaev–Roberts statistic that counts the benchmark's sampling error instead of ignoring it.


def shared_start() -> dict[str, Any]:
    """No runs yet: totals ``[S, W]`` and one row ``[S_j, W_j, *extras]`` per kept change run."""
    return {"total": [0.0, 0.0], "suffix": []}


def shared_update(state: dict[str, Any], weighted_sum: float, weight: float, *extras: float) -> dict[str, Any]:
    """Add one run: ``weighted_sum = w_t X_t``, ``weight = w_t``; ``extras`` are summed alike (for statements)."""
    suffix = [list(row) for row in state["suffix"]] + [[0.0, 0.0] + [0.0] * len(extras)]
    for row in suffix:
        row[0] += weighted_sum
        row[1] += weight
        for i, value in enumerate(extras):
            row[2 + i] += value
    # a sum of fewer positive terms alarms later, never earlier: dropping the oldest keeps the guarantee
    return {"total": [state["total"][0] + weighted_sum, state["total"][1] + weight],
            "suffix": suffix[-MAX_CHANGE_RUNS:]}


@renamed_parameters(benchmark_precision="reference_precision")
def shared_log_ratios(state: dict[str, Any], shifts: Sequence[float], reference_precision: float) -> np.ndarray:
    """``log L_{j,m}`` for every kept change run ``j`` (rows) and shift ``m`` (columns);
    ``reference_precision`` is the precision of the benchmark's own estimate (``benchmark_precision=``
    is the deprecated name)."""
    if not state["suffix"]:
        return np.empty((0, len(shifts)))
    total, weight = state["total"]
    k = reference_precision + weight
    suffix = np.asarray(state["suffix"], dtype=float)
    sj, wj = suffix[:, 0], suffix[:, 1]
    m = np.asarray(shifts, dtype=float)
    return (sj - wj * total / k)[:, None] * m[None, :] - 0.5 * (wj - wj * wj / k)[:, None] * (m * m)[None, :]
