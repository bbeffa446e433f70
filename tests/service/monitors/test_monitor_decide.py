"""One run's decisions (harm, alert-worthy changes, present keys), shared by both run paths. Data SYNTHETIC."""
from __future__ import annotations

import numpy as np
import pandas as pd

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
