"""Audits through the API: queued in the background, result shaped as the AuditResult contract, reports, recovery."""
from __future__ import annotations

from datetime import datetime, timezone
from html import escape

import pytest
from fastapi.testclient import TestClient

from domains.examples import PLANTED, make_example
from reports.result import as_result
from service.app import create_app
from tests.service.audit_support import upload_frame, wait_for_audit

SECTIONS = ("id", "status", "domain", "benchmark", "production", "verdict", "covariate", "label",
            "semantic", "slices", "limitations", "next_round")


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    from service.settings import Settings

    settings = Settings(data_dir=tmp_path_factory.mktemp("audits") / "data")
    bench, prod = make_example("medical", n_benchmark=3000, n_production=3000, shift="planted", random_state=3)
    with TestClient(create_app(settings)) as client:
        ids = upload_frame(client, bench, "bench", "benchmark"), upload_frame(client, prod, "prod", "production")
        res = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1], "domain": "medical",
                                              "options": {"budget": 300}})
        assert res.status_code == 202 and res.json()["status"] in ("queued", "running", "succeeded")
        result = wait_for_audit(client, res.json()["id"])
        yield client, result, ids


@pytest.mark.slow
def test_audit_succeeds_with_every_section(audited):
    _, result, ids = audited
    assert result["status"] == "succeeded", result.get("error")
    assert all(key in result for key in SECTIONS)
    assert result["benchmark"]["id"] == ids[0] and result["benchmark"]["n_rows"] == 3000
    feature = result["covariate"]["features"][0]
    assert {"name", "method", "statistic", "p_value", "p_value_adjusted", "effect_size", "drifted"} <= set(feature)


@pytest.mark.slow
def test_planted_weak_slice_ranks_first_and_untested_context_reported(audited):
    _, result, _ = audited
    plant = PLANTED["medical"]
    assert result["verdict"]["shift_detected"] is True
    # SYNTHETIC: the planted weak slice loses the same accuracy on both sides (a standing weakness); it leads
    # the weak slices, and when its share change folds into it, it is a change claim
    ranked = [(lim["kind"], lim["slice"], lim["claim"]) for lim in result["limitations"]]
    weak = [lim for lim in result["limitations"] if lim["kind"] == "underperforming_slice"]
    assert weak and weak[0]["slice"] == plant.weak_slice and weak[0]["rank"] <= 3, ranked
    claims = [lim["claim"] for lim in result["limitations"]]
    assert claims == sorted(claims)  # change claims rank before standing ones
    untested = [u for u in result["semantic"]["untested_contexts"]
                if u.get("column") == plant.untested_column and str(u.get("value")) == plant.untested_value]
    assert untested


def test_one_correction_across_the_audit(audited):
    _, result, _ = audited
    family = result["parameters"]["n_tests_corrected"]
    counted = (len(result["covariate"]["features"]) + len(result["covariate"].get("missing", []))
               + len(result["semantic"]["contexts"]))
    assert family >= counted


def test_reports_and_next_round(audited):
    client, result, _ = audited
    audit_id = result["id"]
    html = client.get(f"/v1/audits/{audit_id}/report")
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert len(html.content) < 1_000_000 and "<script" not in html.text.lower()
    md = client.get(f"/v1/audits/{audit_id}/report.md")
    assert md.status_code == 200 and PLANTED["medical"].weak_slice in md.text
    plan = client.get(f"/v1/audits/{audit_id}/next-round").json()
    assert plan["budget"] == 300 and plan["n_allocated"] <= 300 and plan["rows"]
    csv = client.get(f"/v1/audits/{audit_id}/next-round", params={"format": "csv"})
    assert csv.headers["content-type"].startswith("text/csv") and csv.text.count("\n") >= 2
    jsonl = client.get(f"/v1/audits/{audit_id}/next-round", params={"format": "jsonl"})
    assert jsonl.text.strip().splitlines()[0].startswith("{")
    index = client.get("/")
    assert audit_id in index.text and "report" in index.text
    # the index listed audits by id only: it names the datasets compared, the domain, the verdict and the date
    names = (result["benchmark"]["name"], result["production"]["name"])
    assert f"{names[0]} → {names[1]}" in index.text and result["verdict"]["severity"] in index.text
    assert result["domain"] in index.text and datetime.now(timezone.utc).strftime("%Y-%m-%d") in index.text


def test_a_result_stored_in_an_older_shape_is_listed_with_its_verdict_and_plan(audited):
    """Listings validate only the sections they show: a section an older version stored in a shape the
    contract no longer accepts (the classifier test nested one level down) hides neither the verdict
    nor the plan. The result itself is never served unchecked: its route says what is wrong and how to
    get a result that fits (it used to serve the stored JSON as it was)."""
    client, result, ids = audited
    covariate = result["covariate"]
    old = {**result, "covariate": {**covariate, "multivariate": {"test": {**(covariate["multivariate"] or {}),
                                                                         "name": "classifier"}}}}
    with pytest.raises(ValueError, match="multivariate"):
        as_result(old)
    audits = client.app.state.runtime.audits
    row = audits.create(benchmark_id=ids[0], production_id=ids[1], domain="medical", options={})
    assert audits.mark_running(row.id) and audits.mark_succeeded(row.id, old, f"{row.id}.html")
    listed = next(a for a in client.get("/v1/audits").json()["items"] if a["id"] == row.id)
    assert listed["verdict"] == result["verdict"]
    served = client.get(f"/v1/audits/{row.id}")
    error = served.json()["error"]
    assert served.status_code == 500 and error["code"] == "stored_result_invalid"
    assert "run the audit again" in error["message"] and "multivariate" in error["details"]["problem"]
    assert client.get(f"/v1/audits/{row.id}/next-round").json() == result["next_round"]
    index = client.get("/").text
    assert row.id in index and escape(result["verdict"]["summary"]) in index


def test_an_audit_whose_own_verdict_no_longer_fits_is_listed_with_the_problem_not_a_failed_list(audited):
    """One audit whose stored verdict does not fit the contract used to turn the whole list and the index
    page into a bare 500: it is listed with its problem, and the other audits with their verdicts."""
    client, result, ids = audited
    broken = {**result, "verdict": {**result["verdict"], "status": "maybe"},
              "next_round": {**(result["next_round"] or {}), "allocations": "all of them"}}
    audits = client.app.state.runtime.audits
    row = audits.create(benchmark_id=ids[0], production_id=ids[1], domain="medical", options={})
    assert audits.mark_running(row.id) and audits.mark_succeeded(row.id, broken, f"{row.id}.html")
    listing = client.get("/v1/audits")
    assert listing.status_code == 200
    items = {a["id"]: a for a in listing.json()["items"]}
    assert items[row.id]["verdict"] is None and items[row.id]["error"]["code"] == "stored_result_invalid"
    assert "run the audit again" in items[row.id]["error"]["message"]
    assert items[result["id"]]["verdict"] == result["verdict"]
    index = client.get("/")
    assert index.status_code == 200 and "does not fit the AuditResult contract" in index.text
    assert escape(result["verdict"]["summary"]) in index.text
    plan = client.get(f"/v1/audits/{row.id}/next-round")
    assert plan.status_code == 500 and plan.json()["error"]["code"] == "stored_result_invalid"


def test_options_are_stored_as_json_and_read_back_typed(audited):
    """The options a POST gave are stored flat (every AuditOptions field) and parse back to the type."""
    from audit.options import AuditOptions
    from service.audits.schemas import AuditRequest

    client, result, _ = audited
    stored = client.app.state.runtime.audits.get(result["id"]).options
    assert set(stored) == set(AuditOptions.model_fields) and stored["budget"] == 300
    request = AuditRequest.from_stored(result["id"], stored)
    assert request.options == AuditOptions(budget=300) and request.annotations is None


def test_stored_options_that_no_longer_parse_fail_the_audit_clearly(audited):
    """A row whose stored options do not fit AuditOptions any more is not run on a guess: it fails
    with a code of its own, naming the field."""
    client, _, ids = audited
    runtime = client.app.state.runtime
    row = runtime.audits.create(benchmark_id=ids[0], production_id=ids[1], domain="medical",
                                options={"alpha": 0.7, "budget": 300})
    runtime.worker.submit(row.id)
    body = wait_for_audit(client, row.id)
    assert body["status"] == "failed" and body["error"]["code"] == "stored_options_invalid", body
    assert "alpha" in body["error"]["details"]["problem"] and "submit it again" in body["error"]["message"]


@pytest.mark.parametrize("body,status,code", [
    ({"benchmark": "ds_missing", "production": "ds_missing"}, 404, "not_found"),
    ({"benchmark": "A", "production": "B", "domain": "astrology"}, 422, "unknown_domain"),
    ({"benchmark": "A", "production": "B", "options": {"alpha": 2}}, 422, "invalid_request"),
    ({"benchmark": "B", "production": "A"}, 422, "invalid_dataset_role"),
])
def test_bad_audit_requests(audited, body, status, code):
    client, _, ids = audited
    body = {k: ({"A": ids[0], "B": ids[1]}.get(v, v) if isinstance(v, str) else v) for k, v in body.items()}
    res = client.post("/v1/audits", json=body)
    assert res.status_code == status and res.json()["error"]["code"] == code, res.text


def test_datasets_in_use_cannot_be_deleted(audited):
    client, _, ids = audited
    res = client.delete(f"/v1/datasets/{ids[0]}")
    assert res.status_code == 409 and res.json()["error"]["code"] == "conflict"


def test_running_audit_is_failed_after_restart(tmp_path):
    from service.settings import Settings

    settings = Settings(data_dir=tmp_path / "data")
    bench, prod = make_example("deepfake", n_benchmark=300, n_production=300, random_state=0)
    with TestClient(create_app(settings)) as client:
        ids = (upload_frame(client, bench, "b", "benchmark", "deepfake"),
               upload_frame(client, prod, "p", "production", "deepfake"))
        runtime = client.app.state.runtime
        row = runtime.audits.create(benchmark_id=ids[0], production_id=ids[1], domain="deepfake", options={})
        runtime.audits.mark_running(row.id)  # as if the process died right here
    with TestClient(create_app(settings)) as client:
        body = client.get(f"/v1/audits/{row.id}").json()
        assert body["status"] == "failed" and body["error"]["code"] == "interrupted"
        report = client.get(f"/v1/audits/{row.id}/report")
        assert report.status_code == 409 and report.json()["error"]["code"] == "audit_not_ready"


@pytest.mark.slow
def test_audit_with_an_annotations_dataset(tmp_path):
    import numpy as np

    from service.settings import Settings
    from tests.service.audits.test_pipeline import _annotations

    settings = Settings(data_dir=tmp_path / "data")
    bench, prod = make_example("medical", n_benchmark=1200, n_production=1200, random_state=2)
    notes = _annotations(bench, np.random.default_rng(1))
    with TestClient(create_app(settings)) as client:
        ids = upload_frame(client, bench, "b", "benchmark"), upload_frame(client, prod, "p", "production")
        notes_id = upload_frame(client, notes, "notes", "annotations", domain="generic")
        wrong = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1], "annotations": ids[0]})
        assert wrong.status_code == 422 and wrong.json()["error"]["code"] == "invalid_dataset_role"
        res = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1], "domain": "medical",
                                              "annotations": notes_id})
        result = wait_for_audit(client, res.json()["id"])
    assert result["status"] == "succeeded", result.get("error")
    assert result["label_quality"]["n_items"] == 600
    assert any(lim["kind"] == "label_quality" for lim in result["limitations"])


@pytest.mark.slow
def test_audit_round_trip_on_each_database(database_url, tmp_path):
    from service.settings import Settings

    settings = Settings(data_dir=tmp_path / "data", database_url=database_url)
    bench, prod = make_example("deepfake", n_benchmark=800, n_production=800, shift="planted", random_state=1)
    with TestClient(create_app(settings)) as client:
        ids = (upload_frame(client, bench, "b", "benchmark", "deepfake"),
               upload_frame(client, prod, "p", "production", "deepfake"))
        res = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1], "domain": "deepfake"})
        result = wait_for_audit(client, res.json()["id"])
        assert result["status"] == "succeeded", result.get("error")
        assert client.get(f"/v1/audits/{result['id']}/report").status_code == 200
        assert [a["id"] for a in client.get("/v1/audits").json()["items"]] == [result["id"]]
