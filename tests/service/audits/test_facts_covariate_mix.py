"""A covariate shift is one claim, not also a context-mix change of every context cut from the input.

Real rows, SYNTHETIC change: production occupants are drawn from real crash records with weights
exp(0.6 z) of their standardised age, so production is older and every row keeps its own inputs,
label and model output. Before the covariate re-test the audit claimed "the inputs have changed"
and, separately, "the mix of age_group has changed" and "the share of occupants 65 and over
changed": one fact, three change claims (on a PCR table, eight).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.service.audits import nass_worlds

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them


def _changes(result):
    return [lim for lim in result["limitations"]
            if lim.get("claim", "change") == "change" and lim["kind"] != "benchmark_saturation"]


def _older(pool: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    z = (pool["age"] - pool["age"].mean()) / pool["age"].std()
    w = np.exp(0.6 * z.to_numpy())
    rows = rng.choice(len(pool), n, replace=False, p=w / w.sum())
    return pool.iloc[rows].reset_index(drop=True)


def test_an_older_production_is_one_covariate_shift_claim_with_its_context_mixes_folded():
    bench, pool = nass_worlds.split(5)
    prod = _older(pool, 3000, 5)
    result = nass_worlds.audit(bench, prod)
    changes = _changes(result)
    kinds = [lim["kind"] for lim in changes]
    assert kinds and kinds[0] == "covariate_shift", kinds
    assert "context_mix_shift" not in kinds, kinds
    head = changes[0]
    folded = [r for r in head["related"] if r["reason"] == "adjusted"]
    assert folded and any(r["kind"] == "context_mix_shift" for r in folded)
    assert any("age" in r["note"] for r in folded)


def test_a_context_mix_the_inputs_do_not_explain_stays_its_own_claim():
    """Production with 60 % unbelted occupants: seat-belt use is a context, and
    its mix change is not the age shift."""
    bench, pool = nass_worlds.split(6)
    rng = np.random.default_rng(6)
    unbelted = np.flatnonzero(pool["seatbelt"] == "none")
    belted = np.flatnonzero(pool["seatbelt"] != "none")
    rows = np.concatenate([rng.choice(unbelted, 1800, replace=len(unbelted) < 1800),
                           rng.choice(belted, 1200, replace=False)])
    result = nass_worlds.audit(bench, pool.iloc[rows].reset_index(drop=True))
    mix = [lim for lim in _changes(result) if lim["kind"] == "context_mix_shift" and "seatbelt" in lim["key"]]
    covariate = [lim for lim in _changes(result) if lim["kind"] == "covariate_shift"]
    assert mix or any(r["kind"] == "context_mix_shift" and "seatbelt" in r["key"] and r["reason"] != "adjusted"
                      for lim in covariate for r in lim["related"])
