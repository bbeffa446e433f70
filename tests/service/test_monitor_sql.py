"""A SQL monitor takes only the rows newer than its watermark: on the local PostgreSQL (skipped
with the reason when unreachable) and on a SQLite file. All data SYNTHETIC."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine

from service.app import create_app
from service.settings import Settings
from tests.service.monitor_support import synthetic_frame, upload_benchmark, wait_run

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _rows(n, seed, offset, epoch):
    frame = synthetic_frame(n, seed)
    stamps = [START + timedelta(minutes=offset + i) for i in range(n)]
    frame["ts"] = [int(s.timestamp()) for s in stamps] if epoch else stamps
    return frame


@pytest.fixture(params=["postgresql", "sqlite"])
def warehouse(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'warehouse.db'}", True
    return request.getfixturevalue("postgres_schema_url"), False


def test_sql_monitor_takes_only_new_rows(tmp_path, warehouse):
    url, epoch = warehouse
    engine = create_engine(url)
    table = f"events_{tmp_path.name[-8:].replace('-', '_')}"
    _rows(200, 1, 0, epoch).to_sql(table, engine, index=False, if_exists="replace")
    settings = Settings(data_dir=tmp_path / "data", scheduler=False, monitor_databases={"warehouse": url})
    with TestClient(create_app(settings)) as client:
        bench = upload_benchmark(client, synthetic_frame(600, 0))
        created = client.post("/v1/monitors", json={
            "name": "sql", "benchmark": bench, "options": {"discovery": False},
            "source": {"type": "sql", "database": "warehouse", "query": f"SELECT * FROM {table}",
                       "timestamp_column": "ts"},
            "schedule": {"interval_seconds": 3600}})
        assert created.status_code == 201, created.text
        assert "postgresql" not in created.text and "sqlite" not in created.text  # no URL travels
        monitor = created.json()["id"]

        def run():
            return wait_run(client, monitor, client.post(f"/v1/monitors/{monitor}/run").json()["run_id"])

        first = run()
        assert (first["status"], first["n_rows"]) == ("succeeded", 200), first
        assert run()["status"] == "no_new_data"
        _rows(150, 2, 200, epoch).to_sql(table, engine, index=False, if_exists="append")
        second = run()
        assert (second["status"], second["n_rows"]) == ("succeeded", 150), second
        assert run()["status"] == "no_new_data"
        audit = client.get(f"/v1/audits/{second['audit_id']}").json()
        assert audit["production"]["n_rows"] == 150
    engine.dispose()
