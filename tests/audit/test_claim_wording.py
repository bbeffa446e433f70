"""Every limitation's statement agrees with its ``claim`` field, whatever its kind.

A change claim that ends "a standing limitation, not a change" tells the user two things at once
(it happened when a standing weakness absorbed a change of its rows and kept its old sentence). The
audits below cover the kinds: SYNTHETIC changes planted in a real table (a class-mix change, a tilted
input, labels changed in a slice, a new population, a slice whose share grew), with production
labelled and unlabelled, and the stored dermatology fixture (label quality, saturation, a weak slice
whose share grew).
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.claims_calibration.auditing import audit_pair
from benchmarks.claims_calibration.planted import plant
from benchmarks.claims_calibration.setups import PLANTED_TABLES
from benchmarks.claims_calibration.tables import prepare

FIXTURE = Path(__file__).resolve().parents[1] / "reports" / "fixtures" / "audit_example.json"
STANDING_WORDS = ("a standing limitation, not a change", "not as a change", "stated as a standing limitation")
CHANGE_WORDS = ("It got worse in production", "More of production is here than on the benchmark",
                "It changed in production:")
SCENARIOS = ("class_mix", "tilt_context", "slice_concept", "new_population", "slice_concept_share")


def _records(limitations: list[dict]) -> list[dict]:
    """The claims and every finding folded into them (a folded one is part of its head's claim)."""
    out = []
    for lim in limitations:
        out.append(lim)
        out += [{**r, "claim": lim["claim"], "folded": True} for r in lim["related"]]
    return out


@pytest.fixture(scope="module")
def limitations() -> list[dict]:
    setup = next(s for s in PLANTED_TABLES if s.table == "crash")
    table = prepare(setup.table)
    found = json.loads(FIXTURE.read_text(encoding="utf-8"))["limitations"]
    for i, scenario in enumerate(SCENARIOS):
        bench, prod = plant(table, setup, scenario, 1500, np.random.default_rng(40 + i))
        if i % 2:
            prod = prod.drop(columns=["label"])
        found += audit_pair(table, bench, prod, seed=40 + i)["limitations"]
    return found


@pytest.mark.slow
def test_the_audits_cover_both_claims_and_the_kinds(limitations):
    assert {lim["claim"] for lim in limitations} == {"change", "standing"}
    kinds = {r["kind"] for r in _records(limitations)}
    assert kinds >= {"underperforming_slice", "untested_context", "context_mix_shift", "covariate_shift",
                     "label_shift", "concept_shift", "label_quality", "benchmark_saturation"}, kinds


@pytest.mark.slow
def test_a_change_claim_never_reads_as_standing(limitations):
    for lim in limitations:
        if lim["claim"] == "change":
            assert not any(w in lim["statement"] for w in STANDING_WORDS), (lim["key"], lim["statement"])


def test_a_standing_limitation_never_reads_as_a_change(limitations):
    for lim in limitations:
        if lim["claim"] == "standing":
            assert not any(w in lim["statement"] for w in CHANGE_WORDS), (lim["key"], lim["statement"])
