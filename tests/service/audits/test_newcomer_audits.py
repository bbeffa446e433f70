"""A new user's tables through the REST front door: columns present on one side only, production
labelled on some rows only."""
from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.newcomer_tables import SCHEMA, audit, notes, titanic, upload


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from service.settings import Settings

    with TestClient(create_app(Settings(data_dir=tmp_path_factory.mktemp("newcomer") / "data"))) as c:
        yield c


@pytest.mark.slow
def test_a_feature_empty_on_one_side_is_set_aside_and_the_others_are_tested(client):
    bench, prod = titanic(seed=1)
    # SYNTHETIC: a field only production records (as a JPEG quality is only recorded for JPEG images)
    bench["jpeg_quality"] = np.nan
    prod["jpeg_quality"] = np.random.default_rng(0).integers(60, 95, len(prod))
    b = upload(client, bench, "one-sided-bench", "benchmark", SCHEMA).json()["id"]
    p = upload(client, prod, "one-sided-prod", "production", SCHEMA).json()["id"]
    result = audit(client, b, p)
    tested = {f["name"] for f in result["covariate"]["features"]}
    assert {"age", "prob_yes"} <= tested and "jpeg_quality" not in tested
    text = notes(result)
    assert "'jpeg_quality' has no values in the benchmark" in text and "set aside" in text
    assert "drop them or provide values" not in text


@pytest.mark.slow
def test_partly_labelled_production_is_measured_on_its_labelled_rows(client):
    bench, prod = titanic(seed=2)
    rng = np.random.default_rng(5)
    missing = rng.random(len(prod)) < 0.5
    prod.loc[missing, "survived"] = None
    n_labelled = int((~missing).sum())
    b = upload(client, bench, "partial-bench", "benchmark", SCHEMA).json()["id"]
    p = upload(client, prod, "partial-prod", "production", SCHEMA).json()["id"]
    result = audit(client, b, p)
    assert result["production"]["labelled"] is True and result["production"]["n_labelled"] == n_labelled
    assert result["production"]["n_rows"] == len(prod)
    assert result["overall"]["n_production"] == n_labelled and result["overall"]["production_value"] is not None
    text = notes(result)
    assert f"{n_labelled:,} of {len(prod):,} production rows carry a label" in text
    # labels removed at random: the check finds no difference in the context mix
    assert "have the same mix of" in text
    html = client.get(f"/v1/audits/{result['id']}/report").text
    assert f"observed on the {n_labelled:,} of {len(prod):,} production rows that carry a label" in html
    # the next round asks for labels of unlabelled rows only
    asked = {row["id"] for row in result["next_round"]["rows"]}
    assert asked and asked <= set(prod.loc[missing, "passenger"])


@pytest.mark.slow
def test_labels_given_to_one_context_only_are_called_not_random(client):
    bench, prod = titanic(seed=3)
    # SYNTHETIC: only first- and second-class passengers got a label
    prod.loc[prod["passengerClass"] == "3rd", "survived"] = None
    b = upload(client, bench, "mnar-bench", "benchmark", SCHEMA).json()["id"]
    p = upload(client, prod, "mnar-prod", "production", SCHEMA).json()["id"]
    result = audit(client, b, p)
    assert result["production"]["n_labelled"] == int((prod["passengerClass"] != "3rd").sum())
    assert "the labels were not given at random" in notes(result) and "passengerClass" in notes(result)


def test_a_benchmark_with_its_own_names_is_warned_about_at_upload_and_in_the_audit(client):
    bench, prod = titanic(seed=4)
    prod = prod.rename(columns={"survived": "label", "predicted": "prediction"})
    res = upload(client, bench, "own-names-bench", "benchmark")  # no schema: survived, predicted, prob_yes
    body = res.json()
    sources = {c["name"]: c["source"] for c in body["columns"]}
    assert sources["survived"] == "default" and sources["predicted"] == "default"
    warnings = " ".join(body["warnings"])
    assert "No column has the role 'label'" in warnings and "'survived'" in warnings
    assert "'predicted'" in warnings and "'prob_yes'" in warnings and "PATCH /v1/datasets/" in warnings
    prod_body = upload(client, prod, "own-names-prod", "production").json()
    assert {c["name"]: c["source"] for c in prod_body["columns"]}["label"] == "inferred from name"
    assert prod_body["warnings"] == []
    result = audit(client, body["id"], prod_body["id"])
    text = notes(result)
    assert "The benchmark has no column with the role 'label'" in text
    assert "Production's labels in 'label' are not used" in text and "'survived'" in text


def test_roles_changed_with_patch_are_used_by_the_next_audit(client):
    bench, prod = titanic(seed=4)
    prod = prod.rename(columns={"survived": "label", "predicted": "prediction"})
    b = upload(client, bench, "patched-bench", "benchmark").json()["id"]
    p = upload(client, prod, "patched-prod", "production").json()["id"]
    bad = client.patch(f"/v1/datasets/{b}", json={"columns": {"survived": "labels"}})
    assert bad.status_code == 422 and "Unknown column roles" in bad.json()["error"]["message"]
    res = client.patch(f"/v1/datasets/{b}", json={"columns": {"survived": "label", "predicted": "prediction"}})
    assert res.status_code == 200, res.text
    assert {c["name"]: (c["role"], c["source"]) for c in res.json()["columns"]}["survived"] == ("label", "schema")
    assert res.json()["warnings"] == []
    result = audit(client, b, p)
    assert result["columns"]["label"] == "survived" and result["columns"]["production_label"] == "survived"
    assert result["production"]["labelled"] is True and result["overall"]["production_value"] is not None
    assert "Production's label column 'label' is compared with the benchmark's 'survived'" in notes(result)


def test_re_upload_with_other_roles_answers_409_saying_how_to_change_them(client):
    bench, _ = titanic(seed=5)
    first = upload(client, bench, "reupload", "benchmark", SCHEMA).json()
    same = upload(client, bench, "reupload", "benchmark", SCHEMA, expect=200).json()
    assert same["id"] == first["id"]
    other = {"columns": {**SCHEMA["columns"], "age": "context"}}
    res = upload(client, bench, "reupload", "benchmark", other, expect=409).json()["error"]
    assert res["code"] == "roles_differ" and f"PATCH /v1/datasets/{first['id']}" in res["message"]
    assert "'age' is stored as feature, the schema says context" in res["message"]
    assert res["details"]["patch"] == {"columns": {"age": "context"}}
