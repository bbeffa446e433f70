"""Datasets registered in place from Parquet directories or globs inside CONTEXTSHIFT_DATA_ROOTS:
the path rule's refusals, delete keeps the files, an audit runs on them. SYNTHETIC data."""
from __future__ import annotations

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.service.monitor_support import synthetic_frame


def write_parts(folder, frame: pd.DataFrame, n_parts: int = 3) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(frame) // n_parts)
    for i in range(n_parts):
        frame.iloc[i * size:(i + 1) * size].to_parquet(folder / f"part-{i}.parquet", index=False)


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "lake"
    write_parts(root / "bench", synthetic_frame(1200, 0))
    write_parts(root / "prod", synthetic_frame(1200, 1, shift=1.0))
    (root / "bench" / "_SUCCESS").write_text("")  # what Spark leaves beside the parts: skipped
    return root


@pytest.fixture
def client(tmp_path, root):
    settings = Settings(data_dir=tmp_path / "data", data_roots=[root], scheduler=False)
    with TestClient(create_app(settings)) as c:
        yield c


def register(client, path, name="bench", role="benchmark", **extra):
    return client.post("/v1/datasets/register", json={"name": name, "role": role, "path": str(path), **extra})


def test_register_a_directory_and_a_glob(client, root):
    res = register(client, root / "bench")
    assert res.status_code == 201, res.text
    body = res.json()
    assert body["storage"] == "registered" and body["registered_path"] == str((root / "bench").resolve())
    assert body["n_rows"] == 1200 and body["n_partitions"] == 3 and body["n_columns"] == 7
    assert body["validation"]["success"] and body["validation"]["rows_checked"] == 1200
    assert {c["name"]: c["role"] for c in body["columns"]}["id"] == "id"
    assert register(client, root / "bench").json()["id"] == body["id"]  # same name and files: 200, same dataset
    glob = register(client, root / "*" / "part-[01].parquet", name="first parts")
    assert glob.status_code == 201, glob.text
    assert glob.json()["n_partitions"] == 4 and glob.json()["n_rows"] == 1600
    store = client.app.state.runtime.datasets
    assert len(store.load_frame(glob.json()["id"])) == 1600
    assert store.location(body["id"]).registered is True
    assert len(client.get("/v1/datasets").json()["items"]) == 2


def test_refusals_name_the_rule(client, root, tmp_path):
    outside = tmp_path / "outside"
    write_parts(outside, synthetic_frame(100, 2), n_parts=1)
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "linked").mkdir()
    (root / "linked" / "part-0.parquet").symlink_to(outside / "part-0.parquet")
    write_parts(root / "mixed", synthetic_frame(100, 3), n_parts=1)
    synthetic_frame(100, 4).drop(columns=["x2"]).to_parquet(root / "mixed" / "part-9.parquet", index=False)
    (root / "text").mkdir()
    (root / "text" / "rows.csv").write_text("a,b\n1,2\n")
    write_parts(root / "bad", synthetic_frame(100, 5).assign(score=2.0), n_parts=1)
    cases = [
        (outside, "path_not_allowed"),
        (root / ".." / "outside", "path_not_allowed"),
        (f"{root}/bench/../../outside/*.parquet", "path_not_allowed"),
        (root / "escape", "path_not_allowed"),
        (root / "linked", "path_not_allowed"),
        (root / "nothing-*.parquet", "no_files"),
        (root / "mixed", "schema_mismatch"),
        (root / "text", "not_parquet"),
        (root / "bad", "validation_failed"),
    ]
    for path, code in cases:
        res = register(client, path)
        assert res.status_code == 422, (path, res.text)
        assert res.json()["error"]["code"] == code, (path, res.json())
    assert client.get("/v1/datasets").json()["items"] == []


def test_registration_is_refused_without_roots(tmp_path, root):
    with TestClient(create_app(Settings(data_dir=tmp_path / "data", scheduler=False))) as c:
        res = register(c, root / "bench")
    assert res.status_code == 422 and res.json()["error"]["code"] == "registration_disabled"
    assert "CONTEXTSHIFT_DATA_ROOTS" in res.json()["error"]["message"]


def test_delete_keeps_the_files_and_changed_files_are_refused(client, root):
    ds = register(client, root / "bench").json()["id"]
    before = sorted(p.name for p in (root / "bench").iterdir())
    assert client.delete(f"/v1/datasets/{ds}").status_code == 204
    assert sorted(p.name for p in (root / "bench").iterdir()) == before
    assert client.get(f"/v1/datasets/{ds}").status_code == 404
    ds = register(client, root / "prod", name="prod").json()["id"]
    synthetic_frame(10, 9).to_parquet(root / "prod" / "part-3.parquet", index=False)  # appended after
    store = client.app.state.runtime.datasets
    with pytest.raises(Exception) as caught:
        store.load_frame(ds)
    assert getattr(caught.value, "code", None) == "dataset_changed"


def test_audit_on_registered_datasets(client, root):
    from tests.service.audit_support import wait_for_audit

    bench = register(client, root / "bench").json()["id"]
    prod = register(client, f"{root}/prod/*.parquet", name="prod", role="production").json()["id"]
    res = client.post("/v1/audits", json={"benchmark": bench, "production": prod, "domain": "generic",
                                          "options": {"budget": 100, "discovery": False}})
    assert res.status_code == 202, res.text
    result = wait_for_audit(client, res.json()["id"])
    assert result["status"] == "succeeded", result.get("error")
    assert result["verdict"]["shift_detected"] is True
