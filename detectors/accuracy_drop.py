"""An e-detector for a drop in a proportion (accuracy, sensitivity, ...) against a benchmark sample.

Harm is one-sided: only a *lower* production proportion is harm, so every alternative is a drop.
The benchmark is a sample too, and its error is the same in every run: a detector that took its
point value as the truth would, run after run, find the benchmark's luck as "harm" (half of all
benchmarks read high). So the run contrasts are modelled for what they are under no change --
independent run errors plus one shared benchmark error -- and a drop ``d`` from run ``j`` on has
an exact likelihood ratio ``L_{j,d}`` (:func:`detectors.e_detector.shared_log_ratios`).

The contrasts are taken on Anscombe's arcsine scale ``y = asin(sqrt((s + 3/8) / (n + 3/4)))``
(variance about ``1 / (4n + 2)`` whatever the proportion), not on the proportions themselves: a
proportion near 1 counted over a few dozen rows is skewed towards low values, and a normal model
of it would read that skew as drops -- about twice the false alarms the guarantee allows in small
slices (``benchmarks/RESULTS.md``). On the arcsine scale the same counts are nearly symmetric.

    R_n = sum over drops d (equal weights) and change runs j <= n of L_{j,d}(n)

is a Shiryaev–Roberts statistic: ``R_n - n`` is a martingale under no change, so an alarm at
``R_n >= A`` has an average run length of at least ``A`` runs, **the benchmark's own sampling
error included** (no plug-in margin to choose). Runs before a change also pin the baseline down:
a change at run ``j`` is tested as the runs from ``j`` on against the benchmark *and* every run
before ``j`` together. A production proportion uniformly above the benchmark's only lowers every ``L``.

>>> state = drop_start(760, 1000)
>>> for successes in (53, 52, 54):  # 70 rows a run at about 0.76: no drop
...     state, ev = drop_update(state, successes, 70)
>>> ev.log_statistic < 1
True
>>> for successes in (44, 45, 46, 44):  # about 0.64: a 12-point drop
...     state, ev = drop_update(state, successes, 70)
>>> round(ev.log_statistic, 1), ev.production_since, ev.n_since
(7.1, 0.639, 280)
>>> round(evidence_capacity(drop_start(178, 222)), 1)  # 222 benchmark rows at 0.80, a 20-point drop
21.8
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.base import Result, renamed_parameters
from detectors.e_detector import NEVER, shared_log_ratios, shared_start, shared_update
from detectors.validation import check_number, check_numbers

__all__ = ["DropEvidence", "drop_start", "drop_update", "drop_restart", "evidence_capacity", "DEFAULT_DROPS"]

DEFAULT_DROPS = (0.05, 0.10, 0.20)
SCALE = "anscombe"  # states written on another scale (the proportions themselves) start over


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


def _arcsine(successes: float, n: float) -> float:
    return math.asin(math.sqrt((successes + 0.375) / (n + 0.75)))


def _precision(n: float) -> float:
    return 4.0 * n + 2.0


@renamed_parameters(benchmark_successes="reference_successes", benchmark_n="reference_n")
def drop_start(reference_successes: float, reference_n: int, *,
               drops: tuple[float, ...] = DEFAULT_DROPS) -> dict[str, Any]:
    """A fresh detector state (JSON-ready) for a benchmark of ``reference_successes`` in ``reference_n``."""
    check_number("reference_n", reference_n, minimum=0, open_low=True)
    check_number("reference_successes", reference_successes, minimum=0, maximum=reference_n)
    check_numbers("drops", drops, minimum=0, maximum=1, open_low=True, open_high=True)  # proportions
    p = reference_successes / reference_n
    # each drop in proportion points becomes a shift on the arcsine scale at the benchmark's value
    # (kept inside [0.02, 0.98]: a benchmark at 100 % still bets on a drop of a known size)
    base = min(max(p, 0.02), 0.98)
    shifts = [math.asin(math.sqrt(base)) - math.asin(math.sqrt(max(base - d, 0.0))) for d in drops]
    return {"scale": SCALE, "p_benchmark": p, "y_benchmark": _arcsine(reference_successes, reference_n),
            "counts": [reference_successes, int(reference_n)], "drops": [float(d) for d in drops],
            "shifts": shifts, **shared_start()}


def drop_restart(state: dict[str, Any]) -> dict[str, Any]:
    """The same detector with its evidence cleared: after an alarm, so that the next alarm needs new
    evidence (the ARL then bounds the average time between false alarms)."""
    return drop_start(*state["counts"], drops=tuple(state["drops"]))


def evidence_capacity(state: dict[str, Any]) -> float:
    """The log-evidence the largest drop bet reaches on a drop of its own size, however many
    production rows come: the benchmark's own error stays in every contrast (``m^2 * precision / 2``)."""
    return max(state["shifts"]) ** 2 * _precision(state["counts"][1]) / 2.0


def drop_update(state: dict[str, Any], successes: float, n: int) -> tuple[dict[str, Any], DropEvidence]:
    """Add one run's ``successes`` in ``n`` (``n = 0``: no labelled rows this run, nothing changes)."""
    check_number("n", n, minimum=0)
    check_number("successes", successes, minimum=0, maximum=n)
    if state.get("scale") != SCALE:
        state = drop_restart(state)
    if n > 0:
        weight = _precision(n)
        state = {**state, **shared_update(state, weight * (_arcsine(successes, n) - state["y_benchmark"]), weight,
                                          successes, n)}
    logs = shared_log_ratios(state, [-m for m in state["shifts"]], _precision(state["counts"][1]))
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
