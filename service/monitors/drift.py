"""The drift part of a monitor's budget: one e-detector per numeric feature, resumed run after run.

Each numeric feature of the benchmark (role ``feature``) gets a normal-score shift e-detector
(:mod:`detectors.rank_shift`); the features share the drift eighth of the budget equally
(:data:`service.monitors.budget.SHARES`), the set fixed by the first run so no feature's share
changes later. A feature alerts when its statistic reaches its threshold, and its detector then
starts over (so the alert stays present only while new runs bring new evidence, and the
guarantee bounds the average time between false alerts); until then the evidence
of every run since the shift began counts, so a 0.3 standard deviation shift of one feature is
found within a run or two where one run's test at a per-run level could miss it for many runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from detectors.rank_shift import normal_scores, shift_restart, shift_start, shift_update
from service.monitors.budget import HORIZON, ratio_text, threshold

__all__ = ["DriftCheck", "track_drift", "drift_features"]

MAX_FEATURES = 200  # beyond this a monitor tracks the first ones (each adds only log(k) to the threshold)


@dataclass(frozen=True)
class DriftCheck:
    feature: str
    mean_score: float | None
    direction: str
    evidence: float
    threshold: float
    n_production: int

    @property
    def key(self) -> str:
        return f"drift:{self.feature}"

    @property
    def drifted(self) -> bool:
        return self.evidence >= self.threshold

    def statement(self) -> str:
        shift = "-" if self.mean_score is None else f"{self.mean_score:+.2f}"
        return (f"Feature {self.feature} has moved {self.direction} against the benchmark: this run's mean normal "
                f"score is {shift} (about the shift in benchmark standard deviations, n={self.n_production:,}); the "
                f"evidence since the shift began, {ratio_text(self.evidence)}, reached the feature's threshold "
                f"{ratio_text(self.threshold)} (the monitor's false-alarm guarantee holds at it).")


def drift_features(benchmark: pd.DataFrame, roles: dict[str, str]) -> list[str]:
    """Numeric feature columns of the benchmark, in its column order."""
    names = [c for c in benchmark.columns if roles.get(c) == "feature" and pd.api.types.is_numeric_dtype(benchmark[c])
             and not pd.api.types.is_bool_dtype(benchmark[c])]
    return names[:MAX_FEATURES]


def track_drift(state: dict[str, Any], benchmark: pd.DataFrame, production: pd.DataFrame, roles: dict[str, str], *,
                alpha: float, horizon: int = HORIZON) -> tuple[dict[str, Any], list[DriftCheck]]:
    """Add this run's rows to every feature's e-detector; one check per feature the run has values for."""
    state = dict(state or {})
    if not state:
        state = {c: shift_start(int(benchmark[c].notna().sum())) for c in drift_features(benchmark, roles)
                 if benchmark[c].notna().any()}
    limit = threshold(alpha, "drift", len(state), horizon=horizon)
    checks = []
    for column, slot in list(state.items()):
        if column not in production.columns or not pd.api.types.is_numeric_dtype(production[column]):
            continue
        scores = normal_scores(benchmark[column].to_numpy(dtype=float), production[column].to_numpy(dtype=float))
        state[column], ev = shift_update(slot, scores)
        check = DriftCheck(feature=column, mean_score=ev.mean_score, direction=ev.direction,
                           evidence=math.exp(min(ev.log_statistic, 700.0)), threshold=limit,
                           n_production=int(np.isfinite(scores).sum()))
        if check.drifted:  # restart: the alert stays present only while new runs bring new evidence
            state[column] = shift_restart(state[column])
        checks.append(check)
    return state, checks
