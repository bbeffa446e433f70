"""An e-detector for a shift in one numeric feature against a benchmark, on normal scores.

Each production value is placed in the benchmark's distribution (its mid-rank among the benchmark's
values, ``u`` in (0, 1)) and turned into a normal score ``x = Phi^-1(u)``: under no change the
scores are about standard normal whatever the feature's own distribution (ties only shrink their
spread, which makes the test conservative), so a shift in location shows as a mean away from 0.
The benchmark's empirical distribution is itself off by about ``1/sqrt(n_benchmark)`` in these
units, the same in every run: the run means are modelled as independent run errors plus that one
shared error, and a shift ``m`` from run ``j`` on has an exact likelihood ratio ``L_{j,m}``
(:func:`detectors.e_detector.shared_log_ratios`). Their sum over change runs and over shifts in
both directions and several sizes (equal weights) is a Shiryaev–Roberts statistic: an alarm at
``A`` has an average run length of at least ``A`` runs under no change, the benchmark's own
sampling error included.

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
from detectors.e_detector import NEVER, shared_log_ratios, shared_start, shared_update
from detectors.validation import check_int, check_numbers

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


def shift_start(n_reference: int, *, bets: tuple[float, ...] = DEFAULT_BETS) -> dict[str, Any]:
    """A fresh detector state (JSON-ready) for a benchmark of ``n_reference`` values."""
    check_int("n_reference", n_reference, minimum=1)
    check_numbers("bets", bets, minimum=0, open_low=True)  # shift sizes
    shifts = [float(b) for b in bets] + [-float(b) for b in bets]
    return {"shifts": shifts, "n_reference": int(n_reference), **shared_start()}


def shift_restart(state: dict[str, Any]) -> dict[str, Any]:
    """The same detector with its evidence cleared (after an alarm: the next one needs new evidence)."""
    return {**state, **shared_start()}


def shift_update(state: dict[str, Any], scores: np.ndarray) -> tuple[dict[str, Any], ShiftEvidence]:
    """Add one run's normal scores (none: nothing changes)."""
    scores = np.asarray(scores, dtype=float)
    n = int(len(scores))
    if n:
        state = {**state, **shared_update(state, float(scores.sum()), float(n))}  # unit variance: precision n
    logs = shared_log_ratios(state, state["shifts"], float(state["n_reference"]))
    if logs.size == 0:
        return state, ShiftEvidence(mean_score=None, n=0, direction="up", log_statistic=NEVER)
    lead = int(np.argmax(logs.max(axis=0)))
    return state, ShiftEvidence(mean_score=float(scores.mean()) if n else None, n=n,
                                direction="up" if state["shifts"][lead] > 0 else "down",
                                log_statistic=float(np.logaddexp.reduce(logs.ravel()) - math.log(len(state["shifts"]))))
