"""One run's decisions (harm, alert-worthy changes, present keys), shared by both run paths. Data SYNTHETIC."""
from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pandas as pd

from service.monitors.alerting import update_alerts
from service.monitors.decide import decide_run
from tests.service.monitor_support import concluded

ROLES = {"site": "context", "label": "label", "prediction": "prediction"}


def _frame(n, rng, *, drop_in_a=0.0):
    site = rng.choice(["a", "b", "c", "d"], n)
    label = rng.choice(["x", "y"], n)
    right = rng.random(n) < np.where(site == "a", 0.85 - drop_in_a, 0.85)
    return pd.DataFrame({"site": site, "label": label,
                         "prediction": np.where(right, label, np.where(label == "x", "y", "x"))})


def _result(bench, prod):
    """The AuditResult a run decides from: the primary metric is not a proportion."""
    return concluded({"overall": {"metric": "balanced_accuracy", "benchmark_value": 0.85, "n": len(bench),
                                  "production_value": 0.8, "n_production": len(prod)},
                      "slices": [{"name": "site a", "source": "expert", "definition": 'site == "a"',
                                  "metric": "balanced_accuracy"}],
                      "benchmark": {"n_rows": len(bench)}, "production": {"n_rows": len(prod), "labelled": True}})


def _delay(rng, *, drop, start=4, runs=14):
    bench, state = _frame(5000, rng), {}
    for run in range(1, runs + 1):
        prod = _frame(1000, rng, drop_in_a=drop if run >= start else 0.0)
        d = decide_run(_result(bench, prod), benchmark=bench, production=prod, benchmark_roles=ROLES,
                       production_roles=ROLES, detector_state=state, open_keys=[], alpha=0.05, tolerance=0.05,
                       min_severity="medium")
        state = d.detector_state
        if d.harm:
            return run - start + 1, d
    return None, d


def test_harm_tracks_accuracy_when_the_primary_metric_is_not_a_proportion():
    """With balanced accuracy as the primary metric, harm tracked nothing, so a 10-point slice drop never alerted."""
    rng = np.random.default_rng(0)
    delays = [_delay(rng, drop=0.10)[0] for _ in range(6)]
    assert all(d is not None and d <= 4 for d in delays), delays
    _, decision = _delay(rng, drop=0.10)
    assert {f.key for f in decision.harm} <= {"harm:site a", "harm:overall"}
    assert "accuracy" in decision.harm[0].statement


def test_no_harm_without_a_drop():
    rng = np.random.default_rng(1)
    assert sum(_delay(rng, drop=0.0, runs=20)[0] is not None for _ in range(10)) == 0


def _alert_states(rng, *, drop_runs, runs):
    """The harm alert's state after each run ("open", "resolved" at the run it resolves, else None): a
    10-point drop in site a (about 100 of 400 rows a run) during ``drop_runs``."""
    bench, state, active, states = _frame(5000, rng), {}, [], []
    for run in range(1, runs + 1):
        prod = _frame(400, rng, drop_in_a=0.10 if run in drop_runs else 0.0)
        d = decide_run(_result(bench, prod), benchmark=bench, production=prod, benchmark_roles=ROLES,
                       production_roles=ROLES, detector_state=state, open_keys=[a.key for a in active],
                       alpha=0.05, tolerance=0.05, min_severity="medium")
        state = d.detector_state
        update = update_alerts(active, d.alerting, d.present_keys, monitor_id="mo", run_id=f"run{run}",
                               at=datetime.now(timezone.utc))
        active = [a for a in active + update.opened if a.state == "open"]
        states.append(next((a.state for a in active + update.resolved if a.key == "harm:site a"), None))
    return states


def test_a_drop_that_goes_on_keeps_its_alert_open_and_one_that_ends_resolves_it():
    """After an alarm the evidence starts over and takes runs to reach the threshold again: the alert was
    resolved three runs later while the drop went on, then opened again (a resolution message and a new
    alert each time). It stays open while the rows since the drop still read worse, and resolves once
    they read as the benchmark's again."""
    rng = np.random.default_rng(3)
    not_open = 0  # runs, after the alert first opened, in which it was not open though the drop went on
    for _ in range(4):
        states = _alert_states(rng, drop_runs=range(3, 31), runs=30)
        assert "open" in states, states
        not_open += sum(s != "open" for s in states[states.index("open"):])
        states = _alert_states(rng, drop_runs=range(3, 13), runs=30)  # the drop ends after run 12
        assert "open" in states and "resolved" in states[12:24] and states[-1] is None, states
    assert not_open <= 2  # about 10 when an alert resolved three runs after each alarm
