"""An e-detector for a drop in a proportion (accuracy, sensitivity, ...) against a benchmark.

Harm is one-sided: only a *lower* production proportion is harm, so every e-value bets on a drop.
For an alternative drop ``d`` the run's e-value is the binomial likelihood ratio of the run's
``successes`` in ``n`` at ``p0 - d`` against ``p0``::

    e = ((p0 - d) / p0) ** successes * ((1 - p0 + d) / (1 - p0)) ** (n - successes)

Its mean is exactly 1 at a production proportion ``p0`` and below 1 at any higher one, so it is an
e-value for the composite null "no drop below ``p0``". Bets on several drops (default 5, 10 and 20
points) are mixed with equal weights, each with its own Shiryaev–Roberts sum
(:mod:`detectors.e_detector`), so evidence accumulates over every run since the change whichever
size it has.

``p0`` is the benchmark's proportion, lowered by ``benchmark_z`` of its standard errors: the
benchmark is a sample too, and a monitor that took its point value as the truth would, run after
run, find the benchmark's luck as "harm" (half of all benchmarks read high). The guarantee holds
for every benchmark whose true proportion is at least ``p0``.

>>> state = drop_start(760, 1000)
>>> for successes in (53, 52, 54):  # 70 rows a run at about 0.76: no drop
...     state, ev = drop_update(state, successes, 70)
>>> ev.log_statistic < 0
True
>>> for successes in (44, 45, 46, 44):  # about 0.64: a 12-point drop
...     state, ev = drop_update(state, successes, 70)
>>> round(ev.log_statistic, 1), ev.production_since, ev.n_since
(7.2, 0.639, 280)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from detectors.base import Result
from detectors.e_detector import NEVER, log_mixture, sr_start, sr_update

__all__ = ["DropEvidence", "drop_start", "drop_update", "drop_restart", "DEFAULT_DROPS"]

DEFAULT_DROPS = (0.05, 0.10, 0.20)
_EDGE = 1e-6  # proportions are kept off 0 and 1, where a likelihood ratio is 0 or infinite


@dataclass(frozen=True)
class DropEvidence(Result):
    """One slice's drop evidence after a run.

    ``log_statistic`` is the log of the mixture's Shiryaev–Roberts statistic (compare it with the
    log of an ARL threshold); ``production_since`` and ``n_since`` pool the runs since the evidence
    last started to grow (a CUSUM start: the estimated change time), ``drop_since`` is
    ``benchmark_value - production_since``.
    """

    benchmark_value: float
    null_value: float
    production_since: float | None
    n_since: int
    drop_since: float | None
    log_statistic: float


def drop_start(benchmark_successes: float, benchmark_n: int, *, drops: tuple[float, ...] = DEFAULT_DROPS,
               benchmark_z: float = 1.0) -> dict[str, Any]:
    """A fresh detector state (JSON-ready) for a benchmark of ``benchmark_successes`` in ``benchmark_n``."""
    if benchmark_n <= 0 or not 0 <= benchmark_successes <= benchmark_n:
        raise ValueError(f"benchmark counts must satisfy 0 <= successes <= n, n > 0; got "
                         f"{benchmark_successes!r} of {benchmark_n!r}.")
    if not drops or any(not 0 < d < 1 for d in drops):
        raise ValueError(f"drops must be proportions in (0, 1), got {drops!r}.")
    if benchmark_z < 0:
        raise ValueError(f"benchmark_z must be >= 0, got {benchmark_z!r}.")
    p = benchmark_successes / benchmark_n
    p0 = min(max(p - benchmark_z * math.sqrt(p * (1 - p) / benchmark_n), 2 * _EDGE), 1 - _EDGE)
    return {"p_benchmark": p, "p0": p0, "drops": [float(d) for d in drops], "log_r": sr_start(len(drops)),
            "cusum": 0.0, "since": [0, 0], "counts": [benchmark_successes, int(benchmark_n)],
            "benchmark_z": float(benchmark_z)}


def drop_restart(state: dict[str, Any]) -> dict[str, Any]:
    """The same detector with its evidence cleared: after an alarm, so that the next alarm needs new
    evidence (the ARL then bounds the average time between false alarms)."""
    return drop_start(*state["counts"], drops=tuple(state["drops"]), benchmark_z=state["benchmark_z"])


def _log_e(p0: float, drop: float, successes: float, n: int) -> float:
    p1 = max(p0 - drop, _EDGE)
    return successes * math.log(p1 / p0) + (n - successes) * math.log((1 - p1) / (1 - p0))


def drop_update(state: dict[str, Any], successes: float, n: int) -> tuple[dict[str, Any], DropEvidence]:
    """Add one run's ``successes`` in ``n`` (``n = 0``: no labelled rows this run, nothing changes)."""
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"counts must satisfy 0 <= successes <= n, got {successes!r} of {n!r}.")
    state = {**state, "log_r": list(state["log_r"]), "since": list(state["since"])}
    p0 = state["p0"]
    if n > 0:
        log_e = [_log_e(p0, d, successes, n) for d in state["drops"]]
        state["log_r"] = sr_update(state["log_r"], log_e)
        # the middle bet's CUSUM dates the change for the statement (the alarm is the SR mixture's)
        middle = log_e[len(log_e) // 2]
        cusum = state["cusum"] + middle
        if cusum <= 0:
            state["cusum"], state["since"] = 0.0, [0, 0]
        else:
            state["cusum"], state["since"] = cusum, [state["since"][0] + successes, state["since"][1] + n]
    s, m = state["since"]
    production = round(s / m, 3) if m else None
    return state, DropEvidence(benchmark_value=state["p_benchmark"], null_value=p0, production_since=production,
                               n_since=int(m), drop_since=None if production is None else state["p_benchmark"] - s / m,
                               log_statistic=max(log_mixture(state["log_r"]), NEVER))
