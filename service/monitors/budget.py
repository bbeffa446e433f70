"""One false-alarm budget per monitor that keeps its power for the monitor's whole life.

The guarantee, in one sentence: **when nothing changes, the chance that a monitor raises any
false alert within any 52 consecutive runs is at most its ``alpha``, so on average it runs at
least 52/alpha runs (about a thousand at 0.05) between false alerts.** (:data:`HORIZON` runs; the
maths is in :mod:`detectors.sequential`.)

* Half of ``alpha`` goes to the change claims of the runs' audits: every run is audited at the
  same level ``(alpha/2) / HORIZON`` (union bound over any ``HORIZON`` consecutive runs). A
  spending that shrinks with the run number would leave run 50 testing at about 1e-6; a fixed
  level keeps run 500 as sharp as run 1.
* The other half goes to **harm**: with production labels, the primary metric (a proportion) of
  the whole set and of each expert slice, pooled over the last :data:`WINDOW` labelled runs, is
  compared with the benchmark's by a one-sided Newcombe bound at
  ``(alpha/2) / HORIZON / n_tracked``; harm is claimed when production is significantly worse and
  the point drop is at least ``harm_tolerance``. Windows start over nothing: a drop from run ``k``
  is judged on post-change rows alone from run ``k + WINDOW - 1``.
* Without labels, the label-free estimate's interval stands in for one run (the statement says so),
  widened to the same per-run level.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from detectors.metric_registry import is_proportion, lower_is_better
from detectors.sequential import confidence_sequence, horizon_level, window_drop_test
from domains import evaluate
from reports.result import AuditEvidence

__all__ = ["HORIZON", "WINDOW", "SPENDING", "run_alpha", "spent", "harm_level", "HarmCheck", "track_harm",
           "accuracy_counts", "estimated_harm", "confidence_sequence"]

HORIZON = 52  # runs the guarantee covers: a year of weekly runs
WINDOW = 3  # labelled runs pooled by the harm test
SPENDING = (f"fixed level per run over any {HORIZON} consecutive runs: alpha/2/{HORIZON} for the audits' change "
            f"claims, alpha/2/{HORIZON} split over tracked slices for harm (last {WINDOW} labelled runs against the "
            "benchmark, one-sided Newcombe bound)")


def run_alpha(alpha: float, k: int, *, horizon: int = HORIZON) -> float:
    """The level of the ``k``-th tested run (1-based) of a monitor with budget ``alpha``: the same for every run."""
    if k < 1:
        raise ValueError("runs are numbered from 1")
    return horizon_level(alpha / 2.0, horizon=horizon)


def spent(alpha: float, n_runs: int, *, horizon: int = HORIZON) -> float:
    """The drift half's share spent over the last ``horizon`` runs (the window the guarantee covers)."""
    return run_alpha(alpha, 1, horizon=horizon) * min(max(n_runs, 0), horizon)


def harm_level(alpha: float, n_tracked: int, *, horizon: int = HORIZON) -> float:
    """One-sided level of one slice's harm test in one run."""
    return horizon_level(alpha / 2.0, horizon=horizon) / max(n_tracked, 1)


@dataclass(frozen=True)
class HarmCheck:
    """One slice's harm test after a run: the last labelled runs against the benchmark."""

    slice: str
    metric: str
    benchmark_value: float
    benchmark_low: float  # the benchmark value production is compared with (the point value with labels)
    production_value: float
    production_high: float  # production's confidence bound on the good side (upper; lower for error rates)
    n_production: int
    tolerance: float
    harmful: bool
    labelled: bool = True

    @property
    def key(self) -> str:
        return f"harm:{self.slice}"

    def statement(self) -> str:
        where = "overall" if self.slice == "overall" else f"on slice {self.slice}"
        how = (f"last {WINDOW} labelled runs, one-sided bound at the monitor's per-run level" if self.labelled else
               "ESTIMATED WITHOUT LABELS from the model's confidence, one run")
        bound = "at least" if lower_is_better(self.metric) else "at most"
        return (f"Harm {where}: production {self.metric} is {self.production_value:.3f} ({bound} "
                f"{self.production_high:.3f}, n={self.n_production:,}; {how}) against {self.benchmark_value:.3f} "
                f"on the benchmark: worse, and by at least the tolerance {self.tolerance:.3f}.")


def _counts(result: AuditEvidence) -> tuple[str, dict[str, tuple]]:
    """``(metric, {slice: (benchmark value, n, production value, n)})`` of the primary metric."""
    overall = result.overall
    if overall is None or overall.production_value is None:
        return (overall.metric if overall else ""), {}
    counts = {"overall": (overall.benchmark_value, overall.n, overall.production_value, overall.n_production)}
    for s in result.slices:
        if s.source == "expert":
            counts[s.name] = (s.benchmark_value, s.metric_n_benchmark, s.production_value, s.metric_n_production)
    return overall.metric, counts


def _good(metric: str, value: Any) -> Any:
    """A lower-is-better rate is tracked by its complement, so "worse" is always "fewer successes"."""
    return None if value is None else (1.0 - float(value) if lower_is_better(metric) else value)


def accuracy_counts(result: AuditEvidence, benchmark: Any, production: Any, *, label: str, prediction: str,
                    production_label: str | None = None) -> tuple[str, dict[str, tuple]]:
    """Accuracy overall and per expert slice, from the two frames: the tracked metric when the
    primary one (balanced accuracy, macro-F1, AUC) is not a proportion of rows."""
    production_label = production_label or label
    if production_label not in production.columns or prediction not in production.columns:
        return "accuracy", {}

    def rate(frame, truth, rows=None):
        right = frame[prediction].astype(str).to_numpy() == frame[truth].astype(str).to_numpy()
        right = right if rows is None else right[rows]
        return (float(right.mean()) if len(right) else None), int(len(right))

    counts = {"overall": (*rate(benchmark, label), *rate(production, production_label))}
    for s in result.slices:
        if s.source != "expert" or not s.definition:
            continue
        try:
            rows_b = evaluate(s.definition, benchmark).to_numpy()
            rows_p = evaluate(s.definition, production).to_numpy()
        except (ValueError, KeyError, TypeError):
            continue
        counts[s.name] = (*rate(benchmark, label, rows_b), *rate(production, production_label, rows_p))
    return "accuracy", counts


def track_harm(state: dict, result: AuditEvidence, *, alpha: float, tolerance: float, horizon: int = HORIZON,
               window: int = WINDOW, counts: tuple[str, dict[str, tuple]] | None = None
               ) -> tuple[dict, list[HarmCheck]]:
    """Add this run's labelled counts to ``state`` and test every tracked slice for harm.

    ``state`` maps slice name to ``{"bs", "bn", "runs": [[s, n], ...]}`` (benchmark successes and
    trials; production successes and trials of the last ``window`` labelled runs). The slice set is
    fixed by the first labelled run, so the split of the harm budget never changes. ``counts``:
    the metric and per-slice values to track (default: the primary metric from ``result`` when it
    is a proportion; :func:`accuracy_counts` gives accuracy from the frames otherwise).
    """
    metric, values = counts if counts is not None else _counts(result)
    # a proportion of rows, so ``value * n`` counts successes
    if not is_proportion(metric) or not values or values.get("overall", (None,) * 4)[2] is None:
        return state, []
    counts = {name: tuple(_good(metric, v) if i in (0, 2) else v for i, v in enumerate(row))
              for name, row in values.items()}
    state = {k: {**v, "runs": [list(r) for r in v.get("runs", [])]} for k, v in (state or {}).items()} or {
        name: {"bs": round((bv or 0) * (bn or 0)), "bn": int(bn or 0), "runs": []}
        for name, (bv, bn, _, _) in counts.items() if bv is not None and bn}
    level = harm_level(alpha, len(state), horizon=horizon)
    checks = []
    for name, slot in state.items():
        _, _, pv, pn = counts.get(name, (None, None, None, None))
        if pv is not None and pn:
            slot["runs"] = (slot["runs"] + [[round(pv * pn), int(pn)]])[-window:]
        s, n = sum(r[0] for r in slot["runs"]), sum(r[1] for r in slot["runs"])
        if n == 0 or slot["bn"] == 0:
            continue
        test = window_drop_test(slot["bs"], slot["bn"], s, n, level=level, floor=tolerance)
        bound = min(1.0, test.production_value + test.drop - test.drop_low)  # production's bound on the good side
        back = (lambda v: 1.0 - v) if lower_is_better(metric) else (lambda v: v)  # in the metric's own scale
        checks.append(HarmCheck(slice=name, metric=metric, benchmark_value=back(test.benchmark_value),
                                benchmark_low=back(test.benchmark_value), production_value=back(test.production_value),
                                production_high=back(bound), n_production=int(n), tolerance=tolerance,
                                harmful=test.harmful))
    return state, checks


def estimated_harm(result: AuditEvidence, *, tolerance: float, alpha: float = 0.05,
                   horizon: int = HORIZON) -> list[HarmCheck]:
    """Without production labels: the label-free estimate stands in (and the statement says so).

    Its 95 % interval is widened to the harm level of one run (normal approximation), so that an
    unlabelled monitor spends no more than a labelled one.
    """
    block, overall = result.label.estimated_performance, result.overall
    if result.production.labelled or block is None:
        return []
    bench = overall.benchmark_value if overall else None
    b_ci = (overall.benchmark_ci if overall else None) or [None, None]
    widen = NormalDist().inv_cdf(1 - harm_level(alpha, 1, horizon=horizon) / 2) / NormalDist().inv_cdf(0.975)
    for method in block.methods.values():
        if method.status == "ok" and method.ci_high is not None and bench is not None:
            est = float(method.estimate)
            high = est + (method.ci_high - est) * widen
            b_low = b_ci[0] if b_ci[0] is not None else bench
            n_production = getattr(method, "n_production", None)  # the estimator's own field (PerformanceEstimate)
            return [HarmCheck(slice="overall", metric=str(method.metric), benchmark_value=bench,
                              benchmark_low=b_low, production_value=est, production_high=min(1.0, high),
                              n_production=int(n_production or 0), tolerance=tolerance,
                              harmful=high < b_low and bench - est >= tolerance, labelled=False)]
    return []
