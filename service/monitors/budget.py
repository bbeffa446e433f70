"""One false-alarm budget per monitor, kept for the monitor's whole life, that lets evidence accumulate.

The guarantee, in one sentence: **when nothing changes, a monitor runs on average at least
52/alpha runs (1,040 at alpha = 0.05) before its first false alert** (:data:`HORIZON` = 52: a
year of weekly runs). It is one budget shared by four parts, none of which divides it away:

* every part is a Shiryaev–Roberts statistic ``R`` with ``E[R_n] = n`` under no change
  (:mod:`detectors.e_detector`), and the monitor's statistic is their weighted average with the
  weights :data:`SHARES`; a part alerts when its own ``R`` reaches ``(52/alpha) / share``, which
  can only happen once the average has reached ``52/alpha``, so the ARL holds for all of them at once;
* **audits** (a quarter): every run's audit tests its change claims at the fixed level
  ``alpha/4/52`` (a level-``a`` test is the e-value ``1{reject}/a``); run 500 keeps run 1's power;
* **drift** (an eighth): an e-detector per numeric feature on normal scores against the
  benchmark (:mod:`service.monitors.drift`), features sharing the eighth equally: a shift is
  found on the evidence of every run since it started, not one run's;
* **harm with labels** (a half): the tracked proportion (accuracy, ...) overall and in
  every expert slice, one-sided e-detectors for drops against the benchmark that count the
  benchmark's own sampling error (:mod:`detectors.accuracy_drop`), slices sharing the share equally;
  a slice whose benchmark sample is too small to ever show even a 20-point drop at its threshold is
  not tracked (it could only take budget from the others); harm is claimed when the evidence
  reaches its threshold and the drop since the change is at least ``harm_tolerance``;
* **harm without labels** (an eighth): the label-free estimate's interval, one run, at the level
  ``alpha/8/52``.

The drift and harm detectors' state is saved with each run and resumed by the next, whichever
path runs it; a changed benchmark restarts them (:func:`service.monitors.decide.decide_run`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from detectors.accuracy_drop import drop_restart, drop_start, drop_update, evidence_capacity
from detectors.e_detector import arl_threshold
from detectors.metric_registry import is_proportion, lower_is_better
from detectors.sequential import confidence_sequence, horizon_level
from domains import evaluate
from reports.result import AuditEvidence

__all__ = ["HORIZON", "SHARES", "SPENDING", "GUARANTEE", "MEASURED", "run_alpha", "spent", "budget_summary",
           "harm_level", "threshold", "HarmCheck", "track_harm", "accuracy_counts", "estimated_harm",
           "confidence_sequence", "is_proportion"]

HORIZON = 52  # the ARL is at least HORIZON / alpha runs: a year of weekly runs, over alpha
# harm gets the most: a 0.3 sd shift is found in one run even on an eighth, while a 10-point drop in a
# slice of ~100 labelled rows a run, against a benchmark slice of a few hundred rows, is near what a valid
# test can see (benchmarks/RESULTS.md, benchmarks/harm_bound.py)
SHARES = {"audit": 0.25, "drift": 0.125, "harm": 0.5, "estimated": 0.125}
GUARANTEE = (f"When nothing changes, this monitor runs on average at least {HORIZON}/α runs before its first false "
             "alert, counting every kind of alert together.")
# the numbers of benchmarks/RESULTS.md ("Monitors over time", arcsine harm scale), not invented: re-measure with
# benchmarks/claims_calibration/over_time.py before changing them
MEASURED = ("Measured on four real tables with SYNTHETIC changes (batches of 500 rows, α = 0.05; "
            "benchmarks/RESULTS.md, benchmarks/claims_calibration/over_time.py): none of 400 unchanged monitors "
            "alerted in 30 runs; a 0.3 sd shift of a feature the model uses was caught within 2 runs in 100 %, 100 % "
            "and 98 % of 60 monitors when it began at run 3, 10 and 50; a 10-point accuracy drop in one slice of "
            "about 55 to 135 labelled rows a run within 5 runs in 32 %, 58 % and 73 % (within 10 runs in 52 %, 80 % "
            "and 93 %), slower the smaller the slice. What limits it most is the benchmark: a slice's accuracy "
            "from a few hundred benchmark rows is about as uncertain as from 5 runs of its labelled rows, and "
            "that error never averages away; a larger benchmark slice or more labelled rows a run find the drop "
            "sooner (benchmarks/harm_bound.py).")
SPENDING = (f"one budget shared, never divided away: audits' change claims at α/4/{HORIZON} a run; an e-detector per "
            f"numeric feature (an eighth); e-detectors on the tracked proportion overall and per expert slice with "
            f"labels (a half: evidence adds up over every run since a drop); the label-free estimate without "
            f"labels at α/8/{HORIZON} a run")


def run_alpha(alpha: float, k: int, *, horizon: int = HORIZON) -> float:
    """The level of the ``k``-th tested run's audit (1-based): the same for every run."""
    if k < 1:
        raise ValueError("runs are numbered from 1")
    return horizon_level(alpha * SHARES["audit"], horizon=horizon)


def spent(alpha: float, n_runs: int, *, horizon: int = HORIZON) -> float:
    """What the audits' fixed per-run level has used over the last ``horizon`` runs (at most a quarter
    of ``alpha``); the e-detectors spend nothing per run: their share is held by their thresholds."""
    return run_alpha(alpha, 1, horizon=horizon) * min(max(n_runs, 0), horizon)


def budget_summary(alpha: float, n_tested: int, *, horizon: int = HORIZON) -> dict[str, Any]:
    """The budget a monitor's page and API show: one computation for both run paths."""
    return {"alpha": alpha, "spent": spent(alpha, n_tested, horizon=horizon), "runs_tested": int(n_tested),
            "next_run_alpha": run_alpha(alpha, n_tested + 1, horizon=horizon), "method": SPENDING,
            "guarantee": GUARANTEE, "arl_runs": horizon / alpha, "measured": MEASURED}


def harm_level(alpha: float, n_tracked: int = 1, *, horizon: int = HORIZON) -> float:
    """One-sided level of the label-free harm check in one run (``n_tracked`` checks share it)."""
    return horizon_level(alpha * SHARES["estimated"], horizon=horizon) / max(n_tracked, 1)


def threshold(alpha: float, part: str, n_members: int, *, horizon: int = HORIZON) -> float:
    """The alarm threshold of one of ``n_members`` detectors sharing ``part`` of the budget equally."""
    return arl_threshold(alpha, horizon=horizon, weight=SHARES[part] / max(n_members, 1))


@dataclass(frozen=True)
class HarmCheck:
    """One slice's harm evidence after a run: the runs since the drop began against the benchmark."""

    slice: str
    metric: str
    benchmark_value: float
    benchmark_low: float  # labelled: the benchmark's value (its sampling error is in the evidence); else its bound
    production_value: float
    production_high: float  # labelled: production since the change; unlabelled: the estimate's bound on the good side
    n_production: int
    tolerance: float
    harmful: bool
    labelled: bool = True
    evidence: float | None = None  # labelled: the e-detector's statistic R (alarm at ``threshold``)
    threshold: float | None = None

    @property
    def key(self) -> str:
        return f"harm:{self.slice}"

    @property
    def continuing(self) -> bool:
        """Labelled: the rows since the drop (re)began still read worse than the benchmark by the tolerance,
        though their evidence is below the threshold. After an alarm the evidence starts over and takes
        runs to reach the threshold again; until the rows read better, the drop is not shown to be over."""
        if not self.labelled:
            return False
        worse = (self.production_value - self.benchmark_value if lower_is_better(self.metric)
                 else self.benchmark_value - self.production_value)
        return worse >= self.tolerance

    def statement(self) -> str:
        where = "overall" if self.slice == "overall" else f"on slice {self.slice}"
        if self.labelled:
            return (f"Harm {where}: production {self.metric} is {self.production_value:.3f} over the "
                    f"{self.n_production:,} labelled rows since the drop began, against {self.benchmark_value:.3f} on "
                    f"the benchmark (whose own sampling error the test counts): evidence "
                    f"{ratio_text(self.evidence)} reached this slice's threshold "
                    f"{ratio_text(self.threshold)}, and the drop is at least the tolerance {self.tolerance:.3f}.")
        bound = "at least" if lower_is_better(self.metric) else "at most"
        return (f"Harm {where}: production {self.metric} is {self.production_value:.3f} ({bound} "
                f"{self.production_high:.3f}, n={self.n_production:,}; ESTIMATED WITHOUT LABELS from the model's "
                f"confidence, one run) against {self.benchmark_value:.3f} on the benchmark: worse, and by at least "
                f"the tolerance {self.tolerance:.3f}.")


def ratio_text(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1e}" if value >= 1e6 else f"{value:,.0f}" if value >= 10 else f"{value:.2f}"


def _counts(result: AuditEvidence) -> tuple[str, dict[str, tuple]]:
    """``(metric, {slice: (benchmark value, n, production value, n)})`` of the primary metric."""
    overall = result.overall
    if overall is None or overall.production_value is None:
        return (overall.metric if overall else ""), {}
    counts: dict[str, tuple] = {
        "overall": (overall.benchmark_value, overall.n, overall.production_value, overall.n_production)}
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


def _harm_slots(good: dict[str, tuple], *, alpha: float, horizon: int) -> dict[str, Any]:
    """The slices harm tracks, fixed by the first labelled run: overall, and every slice whose benchmark
    sample could carry the evidence of the largest drop bet to the threshold it would have. A slice of
    a few dozen benchmark rows could never alarm (its benchmark's error caps the evidence below the
    threshold, however many production rows come): tracking it would only take budget from the others."""
    slots = {name: drop_start(round(bv * bn), int(bn)) for name, (bv, bn, _, _) in good.items()
             if bv is not None and bn}
    while True:  # dropping a slice raises the others' shares: repeat until every one left can alarm
        floor = math.log(threshold(alpha, "harm", len(slots), horizon=horizon))
        keep = {name: slot for name, slot in slots.items() if name == "overall" or evidence_capacity(slot) >= floor}
        if len(keep) == len(slots):
            return keep
        slots = keep


def track_harm(state: dict, result: AuditEvidence, *, alpha: float, tolerance: float, horizon: int = HORIZON,
               counts: tuple[str, dict[str, tuple]] | None = None) -> tuple[dict, list[HarmCheck]]:
    """Add this run's labelled counts to the slices' drop e-detectors and check each for harm.

    ``state`` maps slice name to its :func:`detectors.accuracy_drop.drop_start` state (JSON). The
    slice set is fixed by the first labelled run, so each slice's share of the budget never
    changes. ``counts``: the metric and per-slice ``(benchmark value, n, production value, n)`` to
    track (default: the primary metric from ``result`` when it is a proportion;
    :func:`accuracy_counts` gives accuracy from the frames otherwise).
    """
    metric, values = counts if counts is not None else _counts(result)
    # a proportion of rows, so ``value * n`` counts successes
    if not is_proportion(metric) or not values or values.get("overall", (None,) * 4)[2] is None:
        return state, []
    good = {name: tuple(_good(metric, v) if i in (0, 2) else v for i, v in enumerate(row))
            for name, row in values.items()}
    state = dict(state or {}) or _harm_slots(good, alpha=alpha, horizon=horizon)
    # the slices share harm's half equally (weights by benchmark rows, or their square root, measured no
    # better on the real tables: the log of a weight moves the threshold by a fraction of a run's evidence)
    limit = threshold(alpha, "harm", len(state), horizon=horizon)
    back = (lambda v: 1.0 - v) if lower_is_better(metric) else (lambda v: v)  # in the metric's own scale
    checks = []
    for name, slot in list(state.items()):
        _, _, pv, pn = good.get(name, (None, None, None, None))
        successes, n = (round(pv * pn), int(pn)) if pv is not None and pn else (0, 0)
        state[name], ev = drop_update(slot, min(successes, n), n)
        if ev.n_since == 0 or ev.production_since is None:
            continue  # no evidence of a drop building up: nothing to report for this slice
        r = math.exp(min(ev.log_statistic, 700.0))
        if ev.log_statistic >= math.log(limit):  # an alarm (or one below the tolerance) restarts the evidence
            state[name] = drop_restart(state[name])
        checks.append(HarmCheck(slice=name, metric=metric, benchmark_value=back(ev.benchmark_value),
                                benchmark_low=back(ev.benchmark_value), production_value=back(ev.production_since),
                                production_high=back(ev.production_since), n_production=ev.n_since,
                                tolerance=tolerance, evidence=r, threshold=limit,
                                harmful=bool(ev.log_statistic >= math.log(limit)
                                             and (ev.drop_since or 0.0) >= tolerance)))
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
        # an estimator whose point estimate is missing (NaN is stored as null) has nothing to stand in with
        if method.status == "ok" and method.estimate is not None and method.ci_high is not None and bench is not None:
            est = float(method.estimate)
            high = est + (method.ci_high - est) * widen
            b_low = b_ci[0] if b_ci[0] is not None else bench
            n_production = getattr(method, "n_production", None)  # the estimator's own field (PerformanceEstimate)
            return [HarmCheck(slice="overall", metric=str(method.metric), benchmark_value=bench,
                              benchmark_low=b_low, production_value=est, production_high=min(1.0, high),
                              n_production=int(n_production or 0), tolerance=tolerance,
                              harmful=high < b_low and bench - est >= tolerance, labelled=False)]
    return []
