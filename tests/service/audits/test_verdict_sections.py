"""Every flagged detector section reaches the verdict as the right kind.
All data here is SYNTHETIC, with the truth planted by construction."""
from __future__ import annotations

import numpy as np
import pandas as pd

from audit.roles import infer_roles
from domains import load_builtin
from service.audits.local import audit_frames


def _outputs_only(rng, n, logit_shift=0.0, labelled=True):
    """An image model seen only through its outputs: no tabular feature, no context column."""
    y = rng.integers(0, 2, n)
    logit = rng.normal(np.where(y == 1, 1.0, -1.0) + logit_shift, 1.0)
    score = 1 / (1 + np.exp(-logit))
    frame = pd.DataFrame({"id": np.arange(n), "score": score, "prediction": np.where(score >= 0.5, "1", "0")})
    if labelled:
        frame["label"] = y.astype(str)
    return frame


def _audit(bench, prod, seed=0):
    pack = load_builtin("generic")
    outcome = audit_frames(bench, prod, pack=pack, options={"seed": seed},
                           benchmark_roles=infer_roles(bench.columns), production_roles=infer_roles(prod.columns))
    return outcome.result_json


def test_output_shift_alone_is_a_covariate_shift_in_the_verdict():
    rng = np.random.default_rng(5)
    result = _audit(_outputs_only(rng, 3000), _outputs_only(rng, 3000, logit_shift=1.5, labelled=False))
    assert any(t["drifted"] for t in result["covariate"]["outputs"]["tests"])
    assert result["covariate"]["is_shift"] is True and result["verdict"]["shift_detected"] is True
    kinds = {lim["kind"] for lim in result["limitations"]}
    kinds |= {r["kind"] for lim in result["limitations"] for r in lim["related"]}
    assert "covariate_shift" in kinds
    statement = next(lim["statement"] for lim in result["limitations"] if lim["kind"] == "covariate_shift") \
        if any(lim["kind"] == "covariate_shift" for lim in result["limitations"]) else ""
    assert not statement or "outputs" in statement


def test_unchanged_outputs_stay_quiet():
    rng = np.random.default_rng(6)
    result = _audit(_outputs_only(rng, 3000), _outputs_only(rng, 3000, labelled=False))
    assert not any(lim["kind"] == "covariate_shift" for lim in result["limitations"])


def test_a_recall_drop_with_the_class_mix_unchanged_is_not_a_label_shift():
    """Both class recalls fall 0.9 → 0.8, class mix 50/50 on both sides: no label-shift finding and the
    label section says no shift (the observed labels decide it when production is labelled)."""
    rng = np.random.default_rng(7)

    def side(n, recall):
        y = rng.integers(0, 2, n)
        correct = rng.random(n) < recall
        pred = np.where(correct, y, 1 - y)
        return pd.DataFrame({"id": np.arange(n), "label": y.astype(str), "prediction": pred.astype(str)})

    result = _audit(side(4000, 0.9), side(4000, 0.8))
    assert result["label"]["decided_by"] == "observed_labels"
    assert result["label"]["is_shift"] is False
    kinds = {lim["kind"] for lim in result["limitations"]}
    assert "label_shift" not in kinds
    assert "concept_shift" in kinds | {r["kind"] for lim in result["limitations"] for r in lim["related"]}
