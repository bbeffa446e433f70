"""Benchmark rounds through the API: from an audit's plan to a registered round
that fills the plan's top slice, the series page, exports, and an audit against the series.

SYNTHETIC data from :func:`domains.examples.make_example` (planted untested clinical site).
"""
from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from domains.examples import PLANTED, make_example
from service.app import create_app
from tests.service.audit_support import upload_frame, wait_for_audit

PLANT = PLANTED["medical"]


def _untested(result) -> set[tuple[str, str]]:
    return {(str(u.get("column")), str(u.get("value"))) for u in result["semantic"]["untested_contexts"]}


@pytest.fixture(scope="module")
def journey(tmp_path_factory):
    """Audit → plan → round 1 (the benchmark) and round 2 (rows of the plan's top slice) → audit the series."""
    from service.settings import Settings

    settings = Settings(data_dir=tmp_path_factory.mktemp("rounds") / "data")
    bench, prod = make_example("medical", n_benchmark=1500, n_production=1500, random_state=5)
    _, fresh = make_example("medical", n_benchmark=10, n_production=1500, random_state=11)
    with TestClient(create_app(settings)) as client:
        ids = {"bench": upload_frame(client, bench, "bench"), "prod": upload_frame(client, prod, "prod", "production")}
        res = client.post("/v1/audits", json={"benchmark": ids["bench"], "production": ids["prod"],
                                              "domain": "medical", "options": {"budget": 300}})
        first = wait_for_audit(client, res.json()["id"])
        assert first["status"] == "succeeded", first.get("error")
        top = first["next_round"]["allocations"][0]
        from domains.expressions import evaluate
        collected = fresh[evaluate(top["definition"], fresh).to_numpy()].head(max(top["n_to_label"], 40))
        collected = collected.assign(id=[f"r2_{i}" for i in range(len(collected))])
        ids["round2"] = upload_frame(client, collected.reset_index(drop=True), "round2")
        r1 = client.post("/v1/benchmarks/derm/rounds", json={"dataset": ids["bench"], "model": "v1"})
        r2 = client.post("/v1/benchmarks/derm/rounds", json={"dataset": ids["round2"], "plan": first["id"],
                                                            "model": "v2"})
        series = client.get("/v1/benchmarks/derm")
        again = client.post("/v1/audits", json={"benchmark_series": "derm", "production": ids["prod"],
                                                "options": {"budget": 300}})
        assert again.status_code == 202, again.text
        second = wait_for_audit(client, again.json()["id"])
        yield {"client": client, "ids": ids, "first": first, "second": second, "top": top, "r1": r1, "r2": r2,
               "series": series, "n_collected": len(collected)}


@pytest.mark.slow
def test_rounds_are_numbered_in_order(journey):
    assert journey["r1"].status_code == 201, journey["r1"].text
    assert journey["r2"].status_code == 201, journey["r2"].text
    assert (journey["r1"].json()["number"], journey["r2"].json()["number"]) == (1, 2)
    listed = journey["client"].get("/v1/benchmarks").json()["items"]
    assert [(s["name"], s["domain"], s["n_rounds"]) for s in listed] == [("derm", "medical", 2)]


@pytest.mark.slow
def test_plan_top_slice_is_an_untested_context(journey):
    top = journey["top"]
    assert top["kind"] == "untested_context" and PLANT.untested_value in top["definition"]
    assert (PLANT.untested_column, PLANT.untested_value) in _untested(journey["first"])


def test_series_page_shows_the_filled_slice(journey):
    body = journey["series"].json()
    assert journey["series"].status_code == 200, body
    assert {"name", "domain", "metric", "rounds", "stalled", "stalled_at", "saturated", "summary"} <= set(body)
    assert body["metric"] == "sensitivity" and len(body["rounds"]) == 2
    one, two = body["rounds"]
    assert one["plan_coverage"] is None and one["improvement"] is None
    assert {"difference", "ci_low", "ci_high", "p_value"} <= set(two["improvement"])
    cover = {c["key"]: c for c in two["plan_coverage"]}
    top = cover[f"untested_context:{journey['top']['definition']}"]
    assert top["planned"] == journey["top"]["n_to_label"]
    assert top["collected"] == journey["n_collected"] >= top["planned"]
    for r in body["rounds"]:
        for part in ("metric", "cumulative", "mer"):
            assert r[part]["ci_low"] <= r[part]["value"] <= r[part]["ci_high"]
        assert r["vmer"] is None  # the generator's rows carry no validation flag
    assert two["cumulative"]["value"] is not None and body["stalled"] is False


def test_audit_against_the_series_no_longer_lists_the_slice_as_untested(journey):
    second = journey["second"]
    assert second["status"] == "succeeded", second.get("error")
    assert second["benchmark_series"]["name"] == "derm" and second["benchmark_series"]["rounds"] == [1, 2]
    assert second["parameters"]["benchmark_series"] == second["benchmark_series"]  # recorded with the options
    assert second["benchmark"]["n_rows"] == 1500 + journey["n_collected"]
    assert (PLANT.untested_column, PLANT.untested_value) not in _untested(second)
    assert not any(a["definition"] == journey["top"]["definition"] and a["kind"] == "untested_context"
                   for a in second["next_round"]["allocations"])


def test_report_is_offline_html(journey):
    res = journey["client"].get("/v1/benchmarks/derm/report")
    assert res.status_code == 200 and res.headers["content-type"].startswith("text/html")
    html = res.text
    assert "<svg" in html and "Plan coverage" in html and "Annotators" in html
    assert "<script" not in html.lower() and "http://" not in html and "https://" not in html
    assert journey["top"]["definition"].replace('"', "&#34;") in html


def test_exports_dynabench_jsonl_and_csv(journey):
    client = journey["client"]
    res = client.get("/v1/benchmarks/derm/rounds/2/export", params={"format": "jsonl"})
    assert res.status_code == 200
    lines = [json.loads(line) for line in res.text.splitlines()]
    assert len(lines) == journey["n_collected"]
    first = lines[0]
    assert {"uid", "context", "label", "tags", "metadata"} <= set(first)
    assert first["context"][PLANT.untested_column] == PLANT.untested_value
    assert "round:2" in first["tags"] and f"untested_context:{journey['top']['definition']}" in first["tags"]
    assert first["metadata"]["round"] == 2 and first["metadata"]["model"] == "v2"
    rows = list(csv.DictReader(io.StringIO(client.get("/v1/benchmarks/derm/rounds/2/export",
                                                      params={"format": "csv"}).text)))
    assert len(rows) == journey["n_collected"] and rows[0]["uid"] == first["uid"]
    assert client.get("/v1/benchmarks/derm/rounds/9/export").status_code == 404


def test_registration_errors(journey):
    client = journey["client"]
    unknown = client.post("/v1/benchmarks/derm/rounds", json={"dataset": "ds_nope"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    bare = pd.DataFrame({"id": ["a", "b"], "clinical_site": ["site_a", "site_b"], "label": ["benign", "malignant"]})
    res = client.post("/v1/benchmarks/derm/rounds", json={"dataset": upload_frame(client, bare, "nopred", domain=None)})
    assert res.status_code == 422 and res.json()["error"]["code"] == "round_not_labelled"
    alien = pd.DataFrame({"id": ["a", "b"], "label": ["cat", "dog"], "prediction": ["cat", "cat"]})
    res = client.post("/v1/benchmarks/derm/rounds", json={"dataset": upload_frame(client, alien, "alien", domain=None)})
    assert res.status_code == 422 and res.json()["error"]["code"] == "round_contradicts_domain"
    again = client.post("/v1/benchmarks/derm/rounds", json={"dataset": journey["ids"]["round2"]})
    assert again.status_code == 409
    assert client.get("/v1/benchmarks/nothing").status_code == 404
    both = client.post("/v1/audits", json={"benchmark": journey["ids"]["bench"], "benchmark_series": "derm",
                                           "production": journey["ids"]["prod"]})
    assert both.status_code == 422


@pytest.mark.slow
def test_routes_never_answer_5xx(client):
    from hypothesis import HealthCheck, given, settings as hyp_settings, strategies as st

    text = st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters="/?#%"),
                   min_size=1, max_size=30)
    body = st.dictionaries(st.sampled_from(["dataset", "plan", "model", "x"]),
                           st.none() | st.integers() | st.text(max_size=20), max_size=3)

    @hyp_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(name=text, payload=body, number=st.integers(-5, 5), fmt=text)
    def check(name, payload, number, fmt):
        for res in (client.post(f"/v1/benchmarks/{name}/rounds", json=payload), client.get(f"/v1/benchmarks/{name}"),
                    client.get(f"/v1/benchmarks/{name}/report"),
                    client.get(f"/v1/benchmarks/{name}/rounds/{number}/export", params={"format": fmt}),
                    client.post("/v1/audits", json={"benchmark_series": name, "production": "ds_x"})):
            assert res.status_code < 500, (res.status_code, res.text[:300])
            if res.status_code >= 400:
                assert set(res.json()["error"]) == {"code", "message", "details"}

    check()


def test_a_round_dataset_cannot_be_deleted(journey):
    res = journey["client"].delete(f"/v1/datasets/{journey['ids']['round2']}")
    assert res.status_code == 409, res.text
    assert res.json()["error"]["details"]["benchmark"] == "derm"
