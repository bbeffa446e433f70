"""All of production in a population the benchmark lacks is one claim, with what it brings folded in.

Real crash records, SYNTHETIC split: the benchmark holds occupants under 65 only and production
occupants of 65 and over only. Before, the audit made four or five change claims of it: the untested
context, a covariate shift (age), a label shift (older occupants die more often) and concept shifts
located in slices — none of which a benchmark without a single older occupant can tell apart from
the new population.
"""
from __future__ import annotations

import pytest

from reports.grouping import EXPLAINS
from tests.service.audits import nass_worlds

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them


def test_all_of_production_in_a_new_context_is_one_change_claim():
    bench, pool = nass_worlds.split(7)
    bench = bench[bench["age_group"] != "65+"].reset_index(drop=True)
    prod = pool[pool["age_group"] == "65+"].reset_index(drop=True)
    result = nass_worlds.audit(bench, prod)
    changes = [lim for lim in result["limitations"] if lim.get("claim") == "change"]
    assert [lim["kind"] for lim in changes] == ["untested_context"], [lim["key"] for lim in changes]
    head = changes[0]
    assert "65+" in head["key"] and "100 %" in result["verdict"]["summary"]
    folded = {r["kind"] for r in head["related"] if r["reason"] in EXPLAINS}
    assert "covariate_shift" in folded, head["related"]
    # with every production row in the new context removed, nothing is left to tell the others apart
    assert any("apart" in r["note"] for r in head["related"] if r["reason"] in EXPLAINS)
