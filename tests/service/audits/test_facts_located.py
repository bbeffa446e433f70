"""A concept shift planted in one slice is one claim of kind ``concept_shift`` with that slice's definition.

Real crash records (``DAAG/nassCDS``, :mod:`tests.service.audits.nass_worlds`); the change is SYNTHETIC: in
production, 30 % of the labels of unbelted occupants (``seatbelt == "none"``, an expert slice) are
flipped, nothing else. Before, the audit claimed a class-mix change and an ``underperforming_slice``
(and, depending on the seed, an overall concept shift and weak discovered slices) instead.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.service.audits import nass_worlds

SLICE = 'seatbelt == "none"'


def _flipped(pool, seed: int, share: float = 0.3):
    rng = np.random.default_rng(seed)
    prod = pool.copy()
    flip = (prod["seatbelt"] == "none").to_numpy() & (rng.random(len(prod)) < share)
    prod.loc[flip, "label"] = np.where(prod.loc[flip, "label"] == "dead", "alive", "dead")
    return prod


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 4])
def test_flips_in_one_slice_are_one_concept_shift_of_that_slice(seed):
    bench, pool = nass_worlds.split(seed)
    result = nass_worlds.audit(bench, _flipped(pool, seed), seed=seed)
    changes = [lim for lim in result["limitations"]
               if lim.get("claim", "change") == "change" and lim["kind"] != "benchmark_saturation"]
    assert len(changes) == 1, [lim["key"] for lim in changes]
    head = changes[0]
    assert head["kind"] == "concept_shift" and head["definition"] == SLICE
    assert head["key"] == f"concept_shift:{SLICE}"
    assert "fell from" in head["statement"] and "concept shift" in head["statement"]
    # the class-mix change the flips brought is theirs: folded into the located change, not a claim of its own
    folded = {r["kind"] for r in head["related"]}
    assert "label_shift" in folded


@pytest.mark.slow
def test_without_flips_no_concept_shift_is_located():
    bench, pool = nass_worlds.split(5)
    result = nass_worlds.audit(bench, pool, seed=5)
    assert not [lim for lim in result["limitations"] if lim["kind"] == "concept_shift"]
