"""GET /metrics: Prometheus text from prometheus-client, one registry per app. Data SYNTHETIC."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from service.app import create_app
from service.settings import Settings
from tests.service.monitor_support import synthetic_frame, upload_benchmark, wait_run


def _samples(text):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@pytest.mark.slow
def test_metrics_report_runs_alerts_freshness_and_the_primary_metric(tmp_path):
    drop = tmp_path / "drop"
    drop.mkdir()
    settings = Settings(data_dir=tmp_path / "data", monitor_roots=[drop], scheduler=False)
    with TestClient(create_app(settings)) as client, \
            TestClient(create_app(Settings(data_dir=tmp_path / "other", scheduler=False))) as other:
        bench = upload_benchmark(client, synthetic_frame(800, 0))
        monitor = client.post("/v1/monitors", json={
            "name": "m", "benchmark": bench, "source": {"type": "directory", "path": str(drop)},
            "schedule": {"interval_seconds": 3600}, "options": {"discovery": False},
            # the SYNTHETIC x1 shift costs the model nothing (labels ignore x1): a low-severity change claim
            "alerts": {"min_severity": "low"}}).json()["id"]
        synthetic_frame(300, 5, shift=1.0).to_csv(drop / "a.csv", index=False)
        wait_run(client, monitor, client.post(f"/v1/monitors/{monitor}/run").json()["run_id"])
        wait_run(client, monitor, client.post(f"/v1/monitors/{monitor}/run").json()["run_id"])
        response = client.get("/metrics")
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
        samples = _samples(response.text)
        assert samples[("contextshift_audits", (("status", "succeeded"),))] == 1
        assert samples[("contextshift_monitor_runs", (("monitor", monitor), ("status", "succeeded")))] == 1
        assert samples[("contextshift_monitor_runs", (("monitor", monitor), ("status", "no_new_data")))] == 1
        assert samples[("contextshift_alerts", (("severity", "low"), ("state", "open")))] == 1
        assert samples[("contextshift_open_alerts", (("monitor", monitor),))] == 1
        assert 0 <= samples[("contextshift_monitor_seconds_since_success", (("monitor", monitor),))] < 120
        (metric,) = [v for (name, labels), v in samples.items() if name == "contextshift_monitor_primary_metric"]
        assert 0.7 < metric < 1.0
        # a second app in the same process has its own registry: nothing of the first leaks in
        assert "contextshift_monitor_runs{" not in other.get("/metrics").text


def test_metrics_need_the_api_key_when_keys_are_set(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", scheduler=False, api_keys=["k1"])
    with TestClient(create_app(settings)) as client:
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers={"Authorization": "Bearer k1"}).status_code == 200
