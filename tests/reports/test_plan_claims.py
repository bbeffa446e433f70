"""The next-round plan follows the audit's claims, end to end on the demo data.

The data is SYNTHETIC: ``domains.make_example("medical")`` plants a weak slice, an untested clinic
(``clinical_site == "site_e"``, about 10 % of production) and a hidden weak slice; on top of it
80 production rows are moved to 80 new one-row clinics. Before the plan followed the claims, the
untested clinic got no labels at all (its own slice twin hid it) while slices with a gap of 0.00
did, and each one-row clinic took a label of its own. Pooled into one group of new values, the
80 clinics are one target with 80 rows.
"""
from __future__ import annotations

import numpy as np
import pytest

from audit.roles import infer_roles
from domains.examples import make_example
from service.audits.local import audit_frames, load_pack

SITE_E = 'clinical_site == "site_e"'


@pytest.fixture(scope="module")
def demo_result():
    pack = load_pack("medical")
    bench, prod = make_example("medical", n_benchmark=4000, n_production=8000, shift="planted", random_state=0)
    rows = np.random.default_rng(0).choice(np.flatnonzero(prod["clinical_site"] != "site_e"), 80, replace=False)
    prod.loc[rows, "clinical_site"] = [f"clinic_{i:02d}" for i in range(80)]
    contexts = [c.name for c in pack.context]
    return audit_frames(bench, prod, pack=pack, benchmark_roles=infer_roles(bench.columns, context_columns=contexts),
                        production_roles=infer_roles(prod.columns, context_columns=contexts),
                        options={"evidently_companion": False, "budget": 500}).result_json


@pytest.mark.slow
def test_the_untested_clinic_gets_its_labels_first(demo_result):
    plan = demo_result["next_round"]
    site_e = [a for a in plan["allocations"] if a["definition"] == SITE_E]
    assert len(site_e) == 1 and site_e[0]["kind"] == "untested_context"
    assert site_e[0]["n_to_label"] >= demo_result["parameters"]["min_slice_size"]
    assert site_e[0]["key"] == f"untested_context:{SITE_E}" and site_e[0]["reason"]
    assert plan["allocations"][0]["kind"] == "untested_context"


@pytest.mark.slow
def test_no_labels_for_one_row_clinics_or_slices_without_a_gap(demo_result):
    plan, min_size = demo_result["next_round"], demo_result["parameters"]["min_slice_size"]
    labelled = [a for a in plan["allocations"] if a["n_to_label"] > 0 and a["kind"] != "production_sample"]
    assert labelled and all(a["n_production"] >= min_size for a in labelled)
    assert not [a for a in labelled if "== \"clinic_" in (a["definition"] or a["slice"])]  # none on its own
    pooled = [a for a in labelled if "clinic_" in (a["definition"] or a["slice"])]
    assert len(pooled) <= 1  # pooled into one group ("new values of clinical_site"), it is one allocation
    assert all(a["gap"] is None or a["gap"] > 0 for a in labelled)
    keys = {lim["key"] for lim in demo_result["limitations"]}
    assert all(a["key"] in keys for a in labelled)  # every allocation answers a stated limitation
    assert plan["n_allocated"] == 500
