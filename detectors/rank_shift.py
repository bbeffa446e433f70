"""An e-detector for a shift in one numeric feature against a benchmark, on normal scores.

Each production value is placed in the benchmark's distribution (its mid-rank among the benchmark's
values, ``u`` in (0, 1)) and turned into a normal score ``x = Phi^-1(u)``: under no change the
scores are about standard normal whatever the feature's own distribution (ties only shrink their
spread), so a shift in location shows as a mean away from 0. For a bet ``lam`` (positive: the
feature moved up) a run of ``n`` scores summing to ``S`` has the e-value::

    e = exp(lam * S - |lam| * n * m - n * lam**2 / 2)

with mean at most 1 while the scores' true mean is within ``m`` of 0. ``m = benchmark_z /
sqrt(n_benchmark)`` covers the benchmark's own sampling error (its empirical distribution is off
by about that much, the same in every run), so one unlucky benchmark is not read as a shift run
after run. Bets in both directions and several sizes are mixed with equal weights, each with its
Shiryaev–Roberts sum (:mod:`detectors.e_detector`).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> reference = rng.normal(size=2000)
>>> state = shift_start(len(reference))
>>> for _ in range(3):
...     state, ev = shift_update(state, normal_scores(reference, rng.normal(size=500)))
>>> ev.log_statistic < 2
True
>>> state, ev = shift_update(state, normal_scores(reference, rng.normal(0.3, 1, size=500)))
>>> ev.log_statistic > 10, ev.direction
(True, 'up')
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtri

from detectors.base import Result
from detectors.e_detector import log_mixture, sr_start, sr_update

__all__ = ["ShiftEvidence", "normal_scores", "shift_start", "shift_update", "shift_restart", "DEFAULT_BETS"]

DEFAULT_BETS = (0.05, 0.1, 0.2, 0.4)  # shift sizes in standard deviations, bet on in both directions


@dataclass(frozen=True)
class ShiftEvidence(Result):
    """One feature's shift evidence after a run: the log mixture statistic, the run's mean score
    (about the shift in benchmark standard deviations) and the direction of the leading bet."""

    mean_score: float | None
    n: int
    direction: str
    log_statistic: float


def normal_scores(reference: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Normal scores of ``current``'s values in the distribution of ``reference`` (mid-ranks; missing dropped)."""
    ref = np.sort(np.asarray(reference, dtype=float))
    ref = ref[~np.isnan(ref)]
    cur = np.asarray(current, dtype=float)
    cur = cur[~np.isnan(cur)]
    if len(ref) == 0:
        raise ValueError("reference has no values to rank against.")
    below = np.searchsorted(ref, cur, side="left")
    at_or_below = np.searchsorted(ref, cur, side="right")
    u = (below + at_or_below + 1) / (2.0 * (len(ref) + 1))  # mid-rank, strictly inside (0, 1)
    return ndtri(u)


def shift_start(n_reference: int, *, bets: tuple[float, ...] = DEFAULT_BETS,
                benchmark_z: float = 2.0) -> dict[str, Any]:
    """A fresh detector state (JSON-ready) for a benchmark of ``n_reference`` values."""
    if n_reference <= 0:
        raise ValueError(f"n_reference must be positive, got {n_reference!r}.")
    if not bets or any(b <= 0 for b in bets):
        raise ValueError(f"bets must be positive shift sizes, got {bets!r}.")
    if benchmark_z < 0:
        raise ValueError(f"benchmark_z must be >= 0, got {benchmark_z!r}.")
    lams = [float(b) for b in bets] + [-float(b) for b in bets]
    return {"lams": lams, "margin": benchmark_z / math.sqrt(n_reference), "log_r": sr_start(len(lams))}


def shift_restart(state: dict[str, Any]) -> dict[str, Any]:
    """The same detector with its evidence cleared (after an alarm: the next one needs new evidence)."""
    return {**state, "log_r": sr_start(len(state["lams"]))}


def shift_update(state: dict[str, Any], scores: np.ndarray) -> tuple[dict[str, Any], ShiftEvidence]:
    """Add one run's normal scores (none: nothing changes)."""
    scores = np.asarray(scores, dtype=float)
    state = {**state, "log_r": list(state["log_r"])}
    n = int(len(scores))
    if n:
        total, m = float(scores.sum()), state["margin"]
        log_e = [lam * total - abs(lam) * n * m - n * lam * lam / 2 for lam in state["lams"]]
        state["log_r"] = sr_update(state["log_r"], log_e)
    lead = int(np.argmax(state["log_r"]))
    return state, ShiftEvidence(mean_score=float(scores.mean()) if n else None, n=n,
                                direction="up" if state["lams"][lead] > 0 else "down",
                                log_statistic=log_mixture(state["log_r"]))
