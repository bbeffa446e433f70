"""An e-detector for a drop in a proportion (accuracy, sensitivity, ...) against a benchmark sample.

Harm is one-sided: only a *lower* production proportion is harm, so every alternative is a drop.
The benchmark is a sample too, and its error is the same in every run: a detector that took its
point value as the truth would, run after run, find the benchmark's luck as "harm" (half of all
benchmarks read high). So the run contrasts ``X_t = p_t - p_benchmark`` are modelled for what
they are under no change -- independent run errors plus one shared benchmark error (normal
approximation, variances ``p(1-p)/n`` at the benchmark's ``p``) -- and a drop ``d`` from run
``j`` on has an exact likelihood ratio ``L_{j,d}`` (:func:`detectors.e_detector.shared_log_ratios`).

    R_n = sum over drops d (equal weights) and change runs j <= n of L_{j,d}(n)

is a Shiryaev–Roberts statistic: ``R_n - n`` is a martingale under no change, so an alarm at
``R_n >= A`` has an average run length of at least ``A`` runs, **the benchmark's own sampling
error included** (no plug-in margin to choose). Runs before a change also pin the baseline down,
so a drop late in a monitor's life is compared with the benchmark *and* every earlier run. A
production proportion uniformly above the benchmark's only lowers every ``L``.

>>> state = drop_start(760, 1000)
>>> for successes in (53, 52, 54):  # 70 rows a run at about 0.76: no drop
...     state, ev = drop_update(state, successes, 70)
>>> ev.log_statistic < 1
True
>>> for successes in (44, 45, 46, 44):  # about 0.64: a 12-point drop
...     state, ev = drop_update(state, successes, 70)
>>> round(ev.log_statistic, 1), ev.production_since, ev.n_since
(7.9, 0.639, 280)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.base import Result, renamed_parameters
from detectors.e_detector import NEVER, shared_log_ratios, shared_start, shared_update
from detectors.validation import check_number, check_numbers

__all__ = ["DropEvidence", "drop_start", "drop_update", "drop_restart", "DEFAULT_DROPS"]

DEFAULT_DROPS = (0.05, 0.10, 0.20)
_EDGE = 0.02  # variances use p kept inside [0.02, 0.98]: a benchmark at 100 % still has some spread


@dataclass(frozen=True)
class DropEvidence(Result):
    """One slice's drop evidence after a run.

    ``log_statistic`` is the log of the Shiryaev–Roberts statistic (compare it with the log of an
    ARL threshold); ``production_since`` and ``n_since`` pool the runs since the most likely change
    run (``None`` and 0 while no change run has a likelihood ratio above 1), ``drop_since`` is
    ``benchmark_value - production_since``.
    """

    benchmark_value: float
    production_since: float | None
    n_since: int
    drop_since: float | None
    log_statistic: float


@renamed_parameters(benchmark_successes="reference_successes", benchmark_n="reference_n")
def drop_start(reference_successes: float, reference_n: int, *,
               drops: tuple[float, ...] = DEFAULT_DROPS) -> dict[str, Any]:
    """A fresh detector state (JSON-ready) for a benchmark of ``reference_successes`` in ``reference_n``."""
    check_number("reference_n", reference_n, minimum=0, open_low=True)
    check_number("reference_successes", reference_successes, minimum=0, maximum=reference_n)
    check_numbers("drops", drops, minimum=0, maximum=1, open_low=True, open_high=True)  # proportions
    p = reference_successes / reference_n
    spread = min(max(p, _EDGE), 1 - _EDGE)
    return {"p_benchmark": p, "counts": [reference_successes, int(reference_n)], "pq": spread * (1 - spread),
            "drops": [float(d) for d in drops], **shared_start()}


def drop_restart(state: dict[str, Any]) -> dict[str, Any]:
    """The same detector with its evidence cleared: after an alarm, so that the next alarm needs new
    evidence (the ARL then bounds the average time between false alarms)."""
    return drop_start(*state["counts"], drops=tuple(state["drops"]))


def drop_update(state: dict[str, Any], successes: float, n: int) -> tuple[dict[str, Any], DropEvidence]:
    """Add one run's ``successes`` in ``n`` (``n = 0``: no labelled rows this run, nothing changes)."""
    check_number("n", n, minimum=0)
    check_number("successes", successes, minimum=0, maximum=n)
    if n > 0:
        weight = n / state["pq"]  # the run's precision
        state = {**state, **shared_update(state, weight * (successes / n - state["p_benchmark"]), weight,
                                          successes, n)}
    logs = shared_log_ratios(state, [-d for d in state["drops"]], state["counts"][1] / state["pq"])
    production, rows, log_r = None, 0, NEVER
    if logs.size:
        log_r = float(np.logaddexp.reduce(logs.ravel()) - math.log(len(state["drops"])))
        best = int(np.argmax(logs.max(axis=1)))
        if logs[best].max() > 0:
            rows = int(state["suffix"][best][3])
            production = state["suffix"][best][2] / rows
    return state, DropEvidence(benchmark_value=state["p_benchmark"], n_since=rows,
                               production_since=None if production is None else round(production, 3),
                               drop_since=None if production is None else state["p_benchmark"] - production,
                               log_statistic=max(log_r, NEVER))
