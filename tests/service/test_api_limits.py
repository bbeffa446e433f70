"""The API's limits and safeguards: packs versioned and bounded, bounds on queries and options,
idempotent parallel uploads, auth that cannot be switched off by a typo."""
from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.service.packs.test_domains_api import CUSTOM
from tests.support.waiting import wait_until

YAML = {"Content-Type": "application/yaml"}


def test_pack_versions_update_and_retire(client):
    assert client.post("/v1/domains", content=CUSTOM, headers=YAML).json()["version"] == 1
    v2 = CUSTOM.replace("Shelf product recognition", "Shelf products, v2")
    res = client.put("/v1/domains/retail_vision", content=v2, headers=YAML)
    assert res.status_code == 200 and res.json()["version"] == 2, res.text
    got = client.get("/v1/domains/retail_vision").json()
    assert got["title"] == "Shelf products, v2" and got["version"] == 2
    runtime = client.app.state.runtime
    assert runtime.packs.get("retail_vision", version=1).title == "Shelf product recognition"
    wrong = client.put("/v1/domains/other_name", content=v2, headers=YAML)
    assert wrong.status_code == 422
    replaced = client.put("/v1/domains/medical", content=v2.replace("retail_vision", "medical"), headers=YAML)
    assert replaced.status_code == 409
    assert client.delete("/v1/domains/medical").status_code == 409
    assert client.delete("/v1/domains/retail_vision").status_code == 204
    assert client.get("/v1/domains/retail_vision").status_code == 404
    assert "retail_vision" not in {d["name"] for d in client.get("/v1/domains").json()["items"]}
    assert runtime.packs.get("retail_vision", version=2).title == "Shelf products, v2"  # pinned audits still run
    assert client.delete("/v1/domains/retail_vision").status_code == 404
    again = client.post("/v1/domains", content=CUSTOM, headers=YAML)
    assert again.status_code == 201 and again.json()["version"] == 3


def test_audit_pins_the_pack_version(client):
    import pandas as pd

    client.post("/v1/domains", content=CUSTOM, headers=YAML)
    client.put("/v1/domains/retail_vision", content=CUSTOM.replace("Shelf", "Aisle"), headers=YAML)
    runtime = client.app.state.runtime
    ds, _ = runtime.datasets.create_or_get(name="d", role="benchmark", domain=None, frame=pd.DataFrame({"a": [1]}),
                                           columns=[], validation={"success": True, "results": []}, sha256="d" * 64)
    row = runtime.audits.create(benchmark_id=ds.id, production_id=ds.id, domain="retail_vision", options={})
    client.put("/v1/domains/retail_vision", content=CUSTOM, headers=YAML)  # version 3 after the audit
    assert row.domain_version == 2 and runtime.audits.get(row.id).domain_version == 2
    assert runtime.packs.get("retail_vision", version=row.domain_version).title.startswith("Aisle")


@pytest.mark.slow
def test_pack_body_is_bounded_while_streaming(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", max_pack_kb=4)
    with TestClient(create_app(settings)) as client:
        def chunks():
            for _ in range(1000):
                yield b"#" * 1024
        res = client.post("/v1/domains", content=chunks(), headers=YAML)
        assert res.status_code == 413 and res.json()["error"]["code"] == "pack_too_large"
        deep = client.post("/v1/domains", content="a: " + "[" * 1500 + "]" * 1500, headers=YAML)
        assert deep.status_code == 422
        bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n"
        assert client.post("/v1/domains", content=bomb, headers=YAML).status_code == 422


def test_domain_list_parses_each_pack_once(client, monkeypatch):
    client.post("/v1/domains", content=CUSTOM, headers=YAML)
    import service.packs.store as packs

    calls = []
    real = packs.parse_pack
    monkeypatch.setattr(packs, "parse_pack", lambda text: calls.append(1) or real(text))
    for _ in range(3):
        assert client.get("/v1/domains").status_code == 200
    assert calls == []  # parsed when posted, cached by content hash since


@pytest.mark.parametrize("query", ["offset=99999999999999999999999", "limit=99999999999999999999",
                                   "offset=-1", "limit=0"])
def test_list_bounds_are_422(client, query):
    for route in ("/v1/datasets", "/v1/audits"):
        res = client.get(f"{route}?{query}")
        assert res.status_code == 422 and res.json()["error"]["code"] == "invalid_request"


def test_seed_beyond_32_bits_is_refused(client):
    res = client.post("/v1/audits", json={"benchmark": "a", "production": "b", "options": {"seed": 2**32}})
    assert res.status_code == 422 and "seed" in res.text


def test_nul_and_deep_schema_fields_are_4xx(client):
    csv = b"id,x\n1,2\n2,3\n"
    res = client.post("/v1/datasets", files={"file": ("a.csv", csv)}, data={"name": "a\x00b", "role": "benchmark"})
    assert res.status_code == 422 and res.json()["error"]["details"]["field"] == "name"
    deep = client.post("/v1/datasets", files={"file": ("a.csv", csv)},
                       data={"name": "a", "role": "benchmark", "schema": "[" * 10_000 + "]" * 10_000})
    assert deep.status_code == 422 and deep.json()["error"]["code"] == "invalid_schema"


@pytest.mark.slow
def test_parallel_identical_uploads_through_the_api(tmp_path, database_url):
    settings = Settings(data_dir=tmp_path / "data", database_url=database_url)
    csv = ("id,x\n" + "\n".join(f"{i},{i * 0.5}" for i in range(200))).encode()
    with TestClient(create_app(settings)) as client:
        statuses, ids = [], set()

        def upload():
            res = client.post("/v1/datasets", files={"file": ("same.csv", csv)},
                              data={"name": "same", "role": "benchmark"})
            statuses.append(res.status_code)
            ids.add(res.json().get("id"))

        threads = [threading.Thread(target=upload) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert sorted(statuses).count(201) == 1 and set(statuses) <= {200, 201}, statuses
        assert len(ids) == 1 and len(client.get("/v1/datasets").json()["items"]) == 1
        listed = client.get("/v1/datasets").json()["items"][0]["created_at"]
        assert listed.endswith("Z") or listed.endswith("+00:00")  # a UTC offset on every database


@pytest.mark.parametrize("value", [" , ", "key,", ",", "a,,b"])
def test_api_keys_typo_refuses_to_start(monkeypatch, value):
    monkeypatch.setenv("CONTEXTSHIFT_API_KEYS", value)
    with pytest.raises(ValueError, match="empty key"):
        Settings()


def _failed(client, audit_id):
    """The audit's body once it has failed, else None."""
    body = client.get(f"/v1/audits/{audit_id}").json()
    return body if body["status"] == "failed" else None


@pytest.mark.slow
def test_audit_failure_hides_server_paths(client, monkeypatch):
    from service.audits.worker import AuditWorker

    def boom(self, audit_id):
        raise FileNotFoundError(2, "No such file", "/srv/secret/data/ds_1.parquet")

    monkeypatch.setattr(AuditWorker, "_execute", boom)
    runtime = client.app.state.runtime
    csv = ("id,x\n" + "\n".join(f"{i},{i}" for i in range(50))).encode()
    ids = [client.post("/v1/datasets", files={"file": (f"{r}.csv", csv)}, data={"name": r, "role": r}).json()["id"]
           for r in ("benchmark", "production")]
    audit = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1]}).json()
    runtime.worker.futures.get(audit["id"]) and runtime.worker.futures[audit["id"]].result(30)
    body = wait_until(lambda: _failed(client, audit["id"]), timeout_s=30, interval_s=0.05,
                      what=f"audit {audit['id']} to fail")
    assert body["status"] == "failed" and "/srv/secret" not in str(body) and "trace" not in body["error"]["details"]


def test_deeply_nested_slice_expression_is_a_422(client):
    deep = "'" + "(" * 400 + 'store_format == "express"' + ")" * 400 + "'"
    res = client.post("/v1/domains", content=CUSTOM.replace("""'store_format == "express"'""", deep), headers=YAML)
    assert res.status_code == 422 and "nested more than" in res.json()["error"]["message"]
