"""The lifetime false-alarm budget, harm tracking and alert de-duplication, as properties."""
from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from service.monitors import budget
from service.monitors.alerting import RESOLVE_AFTER, update_alerts
from service.monitors.findings import Finding, alertable, finding_key, is_standing


def test_alpha_spending_never_exceeds_half_the_budget():
    for alpha in (0.01, 0.05, 0.1):
        assert budget.spent(alpha, 10_000) < alpha / 2
        assert budget.spent(alpha, 10_000) > 0.99 * alpha / 2  # and it is nearly all usable
        levels = [budget.run_alpha(alpha, k) for k in range(1, 50)]
        assert levels == sorted(levels, reverse=True)


def test_confidence_sequence_covers_the_truth_at_every_time_at_once():
    """Anytime validity: the share of paths on which p ever leaves the sequence is at most alpha."""
    rng = np.random.default_rng(0)
    alpha, p, paths, horizon, step = 0.1, 0.8, 300, 2000, 50
    misses = 0
    for _ in range(paths):
        draws = rng.random(horizon) < p
        cum = np.cumsum(draws)
        for n in range(step, horizon + 1, step):
            low, high = budget.confidence_sequence(float(cum[n - 1]), n, alpha)
            if not low <= p <= high:
                misses += 1
                break
    assert misses / paths <= alpha  # observed ~0.01-0.03: the mixture bound is conservative


def test_confidence_sequence_shrinks_with_n():
    widths = [np.subtract(*budget.confidence_sequence(0.8 * n, n, 0.05)[::-1]) for n in (50, 500, 5000)]
    assert widths[0] > widths[1] > widths[2] > 0


def _result(prod_value, n_prod, bench_value=0.85, n_bench=2000, metric="accuracy"):
    return {"overall": {"metric": metric, "benchmark_value": bench_value, "n": n_bench, "production_value": prod_value,
                        "n_production": n_prod, "benchmark_ci": [bench_value - 0.02, bench_value + 0.02]},
            "slices": [], "production": {"labelled": True}}


def test_harm_tracking_no_false_alarm_without_harm_and_catches_a_drop():
    rng = np.random.default_rng(1)
    false_alarms = 0
    for _ in range(40):
        state = {}
        for _ in range(20):  # 20 runs of 200 labelled rows, no change
            state, checks = budget.track_harm(state, _result(rng.binomial(200, 0.85) / 200, 200), alpha=0.05,
                                              tolerance=0.0)
            if any(c.harmful for c in checks):
                false_alarms += 1
                break
    assert false_alarms / 40 <= 0.05
    state, caught = {}, None
    for run in range(1, 30):  # a 10-point drop
        state, checks = budget.track_harm(state, _result(rng.binomial(200, 0.75) / 200, 200), alpha=0.05,
                                          tolerance=0.0)
        if any(c.harmful for c in checks):
            caught = run
            break
    assert caught is not None and caught <= 10
    assert "anytime-valid" in checks[0].statement()


def test_label_free_estimate_stands_in_and_says_so():
    result = {"production": {"labelled": False}, "overall": {"benchmark_value": 0.9, "benchmark_ci": [0.88, 0.92]},
              "label": {"estimated_performance": {"methods": {"confidence_based": {
                  "status": "ok", "metric": "accuracy", "estimate": 0.7, "ci_low": 0.66, "ci_high": 0.74,
                  "n_production": 500}}}}}
    (check,) = budget.estimated_harm(result, tolerance=0.05)
    assert check.harmful and not check.labelled
    assert "WITHOUT LABELS" in check.statement()


def test_standing_limitations_never_alert():
    result = {"slices": [{"name": "old", "metric": "accuracy", "benchmark_value": 0.6, "production_value": 0.62},
                         {"name": "new", "metric": "accuracy", "benchmark_value": 0.85, "production_value": 0.6}],
              "limitations": [
                  {"kind": "benchmark_saturation", "severity": "high", "statement": "s", "slice": None},
                  {"kind": "underperforming_slice", "severity": "high", "statement": "s", "slice": "old"},
                  {"kind": "underperforming_slice", "severity": "high", "statement": "s", "slice": "new"},
                  {"kind": "untested_context", "severity": "low", "statement": "s", "slice": "x"}]}
    assert [is_standing(lim, result) for lim in result["limitations"]] == [True, True, False, False]
    changes, others = alertable(result, "medium")
    assert [c.key for c in changes] == ["underperforming_slice:new"]
    assert len(others) == 3
    assert [c.key for c in alertable(result, "low")[0]] == ["underperforming_slice:new", "untested_context:x"]
    assert finding_key({"key": "k:1", "kind": "x"}) == "k:1"


def test_alert_opens_once_stays_open_and_resolves_after_three_absent_runs():
    at = datetime.now(timezone.utc)
    shift = Finding(key="covariate_shift:inputs", kind="covariate_shift", severity="high", statement="x moved")
    first = update_alerts([], [shift], {shift.key}, monitor_id="mo", run_id="r1", at=at)
    assert len(first.opened) == 1
    active = first.opened
    for run in ("r2", "r3"):
        again = update_alerts(active, [shift], {shift.key}, monitor_id="mo", run_id=run, at=at)
        assert again.opened == [] and active[0].last_seen_run_id == run
    for i in range(RESOLVE_AFTER):
        gone = update_alerts(active, [], set(), monitor_id="mo", run_id=f"q{i}", at=at)
        assert (active[0].state == "resolved") == (i == RESOLVE_AFTER - 1)
    assert gone.resolved == active
    back = update_alerts([], [shift], {shift.key}, monitor_id="mo", run_id="r9", at=at)
    assert len(back.opened) == 1 and back.opened[0].id != active[0].id
