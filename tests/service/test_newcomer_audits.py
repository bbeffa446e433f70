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


def test_labels_given_to_one_context_only_are_called_not_random(client):
    bench, prod = titanic(seed=3)
    # SYNTHETIC: only first- and second-class passengers got a label
    prod.loc[prod["passengerClass"] == "3rd", "survived"] = None
    b = upload(client, bench, "mnar-bench", "benchmark", SCHEMA).json()["id"]
    p = upload(client, prod, "mnar-prod", "production", SCHEMA).json()["id"]
    result = audit(client, b, p)
    assert result["production"]["n_labelled"] == int((prod["passengerClass"] != "3rd").sum())
    assert "the labels were not given at random" in notes(result) and "passengerClass" in notes(result)
