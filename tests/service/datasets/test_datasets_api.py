"""Upload, list, get, delete datasets through the API; every bad input is a clean 4xx."""
from __future__ import annotations

import gzip
import io
import json

import numpy as np
import pandas as pd
import pytest


def _csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    n = 500
    return pd.DataFrame({
        "id": np.arange(n),
        "age": rng.normal(40, 10, n).round(1),
        "site": rng.choice(["a", "b", "c"], n),
        "label": rng.choice(["benign", "malignant"], n),
        "prediction": rng.choice(["benign", "malignant"], n),
        "score": rng.uniform(0, 1, n),
        "emb_0": rng.normal(size=n),
        "emb_1": rng.normal(size=n),
    })


def upload(client, content: bytes, filename="bench.csv", name="bench", role="benchmark", **fields):
    data = {"name": name, "role": role, **fields}
    return client.post("/v1/datasets", files={"file": (filename, content)}, data=data)


def assert_nothing_stored(client, settings):
    assert client.get("/v1/datasets").json()["items"] == []
    stored = list((settings.data_dir / "datasets").glob("*")) if (settings.data_dir / "datasets").exists() else []
    leftovers = list((settings.data_dir / "tmp").glob("*")) if (settings.data_dir / "tmp").exists() else []
    assert stored == [] and leftovers == []


@pytest.mark.slow
def test_csv_upload_infers_roles_and_validates(client, frame):
    res = upload(client, _csv_bytes(frame))
    assert res.status_code == 201, res.text
    body = res.json()
    assert body["n_rows"] == 500 and body["n_columns"] == 8
    roles = {c["name"]: c["role"] for c in body["columns"]}
    assert roles == {"id": "id", "age": "feature", "site": "feature", "label": "label",
                     "prediction": "prediction", "score": "score", "emb_0": "embedding",
                     "emb_1": "embedding"}
    assert body["validation"]["success"] is True
    assert {r["expectation"] for r in body["validation"]["results"]} >= {
        "expect_column_values_to_be_unique", "expect_column_values_to_be_between"}
    assert len(body["sha256"]) == 64


@pytest.mark.slow
def test_same_content_and_name_returns_existing(client, frame):
    first = upload(client, _csv_bytes(frame))
    again = upload(client, _csv_bytes(frame))
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    other_name = upload(client, _csv_bytes(frame), name="copy")
    assert other_name.status_code == 201 and other_name.json()["id"] != first.json()["id"]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv.gz", "parquet.gz", "jsonl.gz"])
def test_other_formats_round_trip(client, frame, fmt):
    buf = io.BytesIO()
    base = fmt.removesuffix(".gz")
    if base == "parquet":
        frame.to_parquet(buf, index=False)
    elif base == "jsonl":
        buf.write(frame.to_json(orient="records", lines=True).encode())
    else:
        buf.write(_csv_bytes(frame))
    content = gzip.compress(buf.getvalue()) if fmt.endswith(".gz") else buf.getvalue()
    res = upload(client, content, filename=f"data.{fmt}")
    assert res.status_code == 201, res.text
    assert res.json()["n_rows"] == len(frame)


def test_schema_overrides_roles_and_domain_is_checked(client, frame):
    schema = json.dumps({"columns": {"site": "context", "emb_0": "ignore"}})
    res = upload(client, _csv_bytes(frame), schema=schema)
    roles = {c["name"]: c["role"] for c in res.json()["columns"]}
    assert roles["site"] == "context" and roles["emb_0"] == "ignore"
    res = upload(client, _csv_bytes(frame), name="x", domain="no-such-domain")
    assert res.status_code == 422 and res.json()["error"]["code"] == "unknown_domain"


def test_get_list_delete(client, frame):
    created = upload(client, _csv_bytes(frame)).json()
    assert client.get(f"/v1/datasets/{created['id']}").json()["name"] == "bench"
    assert [d["id"] for d in client.get("/v1/datasets").json()["items"]] == [created["id"]]
    assert client.delete(f"/v1/datasets/{created['id']}").status_code == 204
    missing = client.get(f"/v1/datasets/{created['id']}")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def _truncated_parquet(frame):
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()[: len(buf.getvalue()) // 2]


BAD_INPUTS = {
    "empty file": ("a.csv", b"", 400, "empty_file"),
    "wrong extension": ("a.xlsx", b"id,x\n1,2\n", 415, "unsupported_format"),
    "binary content in .csv": ("a.csv", b"PAR1\x00\x01\x02binary", 400, "invalid_content"),
    "broken CSV quoting": ("a.csv", b'id,x\n1,"unterminated\n2,3\n', 400, "invalid_csv"),
    "truncated parquet": ("a.parquet", None, 400, "invalid_parquet"),
    "not gzip": ("a.csv.gz", b"id,x\n1,2\n", 400, "invalid_gzip"),
    "truncated gzip": ("a.csv.gz", gzip.compress(b"id,x\n" + b"".join(
        b"%d,%d\n" % (i, i * 7919 % 10007) for i in range(5000)))[:2000], 400, "invalid_gzip"),
    "non-UTF-8 text": ("a.csv", "id,name\n1,Zoë\n".encode("latin-1"), 400, "invalid_encoding"),
    "duplicate column names": ("a.csv", b"id,x,x\n1,2,3\n", 400, "duplicate_columns"),
    "header but no rows": ("a.csv", b"id,x\n", 400, "no_rows"),
    "bad JSON line": ("a.jsonl", b'{"id": 1}\n{"id": \n', 400, "invalid_jsonl"),
    "failed expectation": ("a.csv", b"id,score\n1,0.5\n1,1.7\n", 422, "validation_failed"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_rejected_and_nothing_stored(client, settings, frame, case):
    filename, content, status, code = BAD_INPUTS[case]
    if content is None:
        content = _truncated_parquet(frame)
    res = upload(client, content, filename=filename)
    assert res.status_code == status, res.text
    error = res.json()["error"]
    assert error["code"] == code and error["message"]
    if status != 415:
        assert error["details"].get("file") == filename
    assert_nothing_stored(client, settings)


def test_failed_expectation_names_column_and_values(client):
    res = upload(client, b"id,score\n1,0.5\n2,1.7\n3,-2\n")
    failure = res.json()["error"]["details"]["failures"][0]
    assert failure["column"] == "score"
    assert failure["expectation"] == "expect_column_values_to_be_between"
    assert sorted(failure["partial_unexpected_list"]) == [-2, 1.7]


@pytest.mark.parametrize("fields,code", [
    ({"role": "training"}, "invalid_role"),
    ({"schema": "{not json"}, "invalid_schema"),
    ({"schema": json.dumps({"columns": {"nope": "feature"}})}, "invalid_schema"),
    ({"schema": json.dumps({"columns": {"x": "weird"}})}, "invalid_schema"),
])
def test_bad_fields_are_rejected(client, settings, fields, code):
    data = {"name": "n", "role": "benchmark", **fields}
    res = client.post("/v1/datasets", files={"file": ("a.csv", b"id,x\n1,2\n")}, data=data)
    assert res.status_code == 422 and res.json()["error"]["code"] == code, res.text
    assert_nothing_stored(client, settings)


def test_missing_fields_use_error_shape(client):
    res = client.post("/v1/datasets", data={"name": "n"})
    assert res.status_code == 422
    assert res.json()["error"]["code"] == "invalid_request"


def test_upload_over_limit_is_413_and_not_stored(tmp_path):
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    small = Settings(data_dir=tmp_path / "d", max_upload_mb=0.05)
    with TestClient(create_app(small)) as client:
        big = b"id,x\n" + b"".join(b"%d,1\n" % i for i in range(400_000))
        res = client.post("/v1/datasets", files={"file": ("big.csv", big)},
                          data={"name": "big", "role": "benchmark"})
        assert res.status_code == 413 and res.json()["error"]["code"] == "upload_too_large"
        assert_nothing_stored(client, small)


def test_healthz_and_openapi(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    spec = client.get("/openapi.json").json()
    assert "/v1/datasets" in spec["paths"]


@pytest.mark.slow
def test_domain_pack_expectations_checked_on_upload(client, settings):
    from domains.examples import make_example

    bench, _ = make_example("medical", n_benchmark=300, n_production=10, random_state=0)
    ok = upload(client, _csv_bytes(bench), name="derm", domain="medical")
    assert ok.status_code == 201, ok.text
    roles = {c["name"]: c["role"] for c in ok.json()["columns"]}
    assert roles["fitzpatrick"] == "context" and roles["score"] == "score"
    assert any(r["source"] == "domain:medical" for r in ok.json()["validation"]["results"])
    bad = bench.assign(fitzpatrick=bench["fitzpatrick"].where(bench.index > 2, 9))
    res = upload(client, _csv_bytes(bad), name="derm-bad", domain="medical")
    # outside the declared range is a data-quality warning naming the rows, not a refusal
    assert res.status_code == 201, res.text
    report = res.json()["validation"]
    assert report["success"] is True
    (warning,) = [w for w in report["warnings"] if w["column"] == "fitzpatrick"]
    assert warning["severity"] == "warning" and warning["kind"] == "out_of_declared_range"
    assert warning["rows"] == list(bad["id"][:3]) and warning["n_rows"] == 3 and warning["values"] == [9.0] * 3
    bad_site = bench.assign(modality=bench["modality"].where(bench.index > 2, "x-ray"))
    res = upload(client, _csv_bytes(bad_site), name="derm-bad-site", domain="medical")
    assert res.status_code == 422, res.text  # a value the pack does not allow still refuses
    failure = next(f for f in res.json()["error"]["details"]["failures"] if f["column"] == "modality")
    assert "x-ray" in failure["partial_unexpected_list"] and failure["source"] == "domain:medical"
