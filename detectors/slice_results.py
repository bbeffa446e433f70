"""Result types and metric names of :class:`detectors.slices.SliceEvaluator`: the :class:`Outcomes`
of one dataset, one :class:`SliceResult` per slice and the :class:`SliceEvaluation` of them all."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from detectors.base import DetectorInputError, Result
from detectors.metric_ci import MetricEstimate
from detectors.metric_registry import canonical, lower_is_better

__all__ = ["Outcomes", "SliceResult", "SliceEvaluation", "SLICE_METRICS", "METRIC_ALIASES"]

# the pack spellings a slice metric may take, mapped to their canonical name by the registry
METRIC_ALIASES = {alias: canonical(alias) for alias in ("false_positive_rate", "recall_per_manipulation")}
SLICE_METRICS = ("accuracy", "error_rate", "balanced_accuracy", "macro_f1", "sensitivity", "specificity",
                 "fpr", "precision", "auc") + tuple(METRIC_ALIASES)


@dataclass(frozen=True)
class Outcomes:
    """Model outcomes of one dataset: ``y_pred`` (n,), optional ``y_true`` (n,) and ``scores`` (n,)."""

    y_pred: Any
    y_true: Any = None
    scores: Any = None

    def __post_init__(self):
        for name in ("y_pred", "y_true", "scores"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value))
        n = len(self.y_pred)
        for name in ("y_true", "scores"):
            value = getattr(self, name)
            if value is not None and value.shape != (n,):
                raise DetectorInputError(f"{name} must have shape ({n},), got {value.shape}.")

    @property
    def n(self) -> int:
        return len(self.y_pred)

    @property
    def labelled(self) -> bool:
        return self.y_true is not None


@dataclass(frozen=True)
class SliceResult(Result):
    """One slice: the AuditResult's ``slices`` item plus shares, gap and both tests."""

    name: str
    definition: str
    source: str  # expert | discovered
    n_benchmark: int
    n_production: int
    metric: str
    benchmark_value: float
    benchmark_ci: tuple
    production_value: float
    production_ci: tuple
    p_value: float  # benchmark vs production
    p_value_adjusted: float
    benchmark_share: float
    production_share: float
    gap_dataset: str  # where slice vs rest was measured: production | benchmark
    gap_vs_overall: float  # slice value - overall value
    gap_vs_rest: float
    gap_ci: tuple
    gap_p_value: float
    gap_p_value_adjusted: float
    underperforming: bool
    changed: bool
    status: str
    metric_n_benchmark: int = 0  # rows behind the metric (e.g. positives for sensitivity)
    metric_n_production: int = 0


@dataclass(frozen=True)
class SliceEvaluation(Result):
    metric: str
    overall_benchmark: MetricEstimate
    overall_production: MetricEstimate | None
    slices: tuple  # SliceResult
    tests: tuple  # ShiftTest: slice_performance and slice_gap, in slice order
    alpha: float

    def get(self, name: str) -> SliceResult:
        return next(s for s in self.slices if s.name == name)

    def with_tests(self, tests) -> "SliceEvaluation":
        """Copy with re-corrected tests (e.g. after an audit-wide correction)."""
        by_key = {(t.kind, t.name): t for t in tests}
        out = []
        for s in self.slices:
            perf, gap = by_key.get(("slice_performance", s.name)), by_key.get(("slice_gap", s.name))
            out.append(replace(
                s, p_value=perf.p_value if perf else s.p_value,
                p_value_adjusted=perf.p_value_adjusted if perf else s.p_value_adjusted,
                changed=bool(perf.drifted) if perf else s.changed,
                gap_p_value=gap.p_value if gap else s.gap_p_value,
                gap_p_value_adjusted=gap.p_value_adjusted if gap else s.gap_p_value_adjusted,
                underperforming=bool(gap.drifted and _worse(self.metric, gap.details["difference"])) if gap
                else s.underperforming))
        return replace(self, slices=tuple(out), tests=tuple(tests))

    def to_dict(self) -> dict:
        return {"metric": self.metric, "overall_benchmark": self.overall_benchmark.to_dict(),
                "overall_production": self.overall_production.to_dict() if self.overall_production else None,
                "slices": [s.to_dict() for s in self.slices]}


def _worse(metric: str, difference: float) -> bool:
    """Is ``difference`` (slice - rest) in the bad direction for ``metric``?"""
    return difference > 0 if lower_is_better(metric) else difference < 0
