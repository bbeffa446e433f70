"""One run path for both stores: the service's runs (a database) and ``contextshift monitor run
--config`` (a state file) fail the same way (error code and message, never a traceback), validate
new rows the same way, and refuse the Dask engine when the monitor is defined. All data SYNTHETIC."""
from __future__ import annotations

import json

import pytest
import yaml
from fastapi.testclient import TestClient

from service.app import create_app
from service.cli import main
from service.monitors import alerting, local, run_path
from service.settings import Settings
from tests.service.monitor_support import synthetic_frame, upload_benchmark, wait_run


def _broken_roles(frame, side):
    raise RuntimeError("no roles under /srv/contextshift/secret/path for this frame")


@pytest.fixture
def drop(tmp_path):
    folder = tmp_path / "roots" / "drop"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def client(tmp_path, drop):
    settings = Settings(data_dir=tmp_path / "data", monitor_roots=[drop.parent], scheduler=False)
    with TestClient(create_app(settings)) as c:
        yield c


def _config(tmp_path, drop, **options) -> str:
    synthetic_frame(600, 0).to_csv(tmp_path / "bench.csv", index=False)
    config = {"name": "cron", "benchmark": "bench.csv", "source": {"type": "directory", "path": str(drop)},
              "options": {"discovery": False, **options}, "state": "state.json"}
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(config))
    return str(tmp_path / "monitor.yaml")


def _api_monitor(client, drop, bench=None, **options) -> tuple[int, dict]:
    bench = bench or upload_benchmark(client, synthetic_frame(600, 0))
    response = client.post("/v1/monitors", json={
        "name": "weekly", "benchmark": bench, "source": {"type": "directory", "path": str(drop)},
        "schedule": {"interval_seconds": 3600}, "options": {"discovery": False, **options}})
    return response.status_code, response.json()


def test_a_failed_run_stores_code_and_message_in_both_paths(client, tmp_path, drop, monkeypatch, capsys):
    monkeypatch.setattr(run_path, "production_roles", _broken_roles)
    synthetic_frame(200, 1).to_csv(drop / "a.csv", index=False)
    status, monitor = _api_monitor(client, drop)
    assert status == 201, monitor
    run = wait_run(client, monitor["id"], client.post(f"/v1/monitors/{monitor['id']}/run").json()["run_id"])
    service_error = client.app.state.monitors.store.get_run(run["id"]).error

    assert main(["monitor", "run", "--config", _config(tmp_path, drop)]) == 2
    assert "RuntimeError" in capsys.readouterr().err
    state = json.loads((tmp_path / "state.json").read_text())
    local_error = state["runs"][-1]["error"]
    assert state["runs"][-1]["status"] == "failed" and state["n_tested"] == 0
    for error in (service_error, local_error):
        assert error["code"] == "run_error" and error["details"] == {"exception": "RuntimeError"}, error
        assert "/srv/contextshift" not in error["message"] and "<path>" in error["message"], error
        assert "Traceback" not in json.dumps(error)
    assert service_error == local_error
    # what the failed run took stays taken in both: the next run has nothing new
    assert main(["monitor", "run", "--config", str(tmp_path / "monitor.yaml")]) == 0
    assert "no new data" in capsys.readouterr().out


def test_new_rows_failing_their_expectations_fail_the_cron_run_as_they_fail_the_service_run(tmp_path, drop,
                                                                                               capsys):
    rows = synthetic_frame(200, 1)
    rows["score"] = rows["score"] + 2.0  # scores outside [0, 1]
    rows.to_csv(drop / "a.csv", index=False)
    assert main(["monitor", "run", "--config", _config(tmp_path, drop)]) == 2
    assert "validation_failed" in capsys.readouterr().err
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["runs"][-1]["error"]["code"] == "validation_failed" and len(state["taken"]) == 1


def test_the_dask_engine_is_refused_when_a_monitor_is_defined(client, tmp_path, drop, capsys):
    bench = upload_benchmark(client, synthetic_frame(600, 0))
    status, body = _api_monitor(client, drop, bench, engine="dask")
    assert status == 422 and body["error"]["code"] == "engine_not_supported", body
    assert "dask" in body["error"]["message"]
    assert main(["monitor", "run", "--config", _config(tmp_path, drop, engine="dask")]) == 2
    assert "engine_not_supported" in capsys.readouterr().err
    assert _api_monitor(client, drop, bench, engine="pandas")[0] == 201


@pytest.mark.slow
def test_a_cron_run_works_out_the_benchmark_once(tmp_path, drop, monkeypatch):
    """Validation, roles and content hash of the benchmark are kept in the state file: later runs only read it."""
    from service.audits import local as service_local

    calls = []
    real = service_local.read_dataset
    monkeypatch.setattr(service_local, "read_dataset", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    config = _config(tmp_path, drop)
    for i in range(2):
        synthetic_frame(200, 10 + i).to_csv(drop / f"b{i}.csv", index=False)
        assert main(["monitor", "run", "--config", config]) == 0
    assert len(calls) == 1
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["n_tested"] == 2 and len(state["benchmark"]["digest"]) == 64
    synthetic_frame(700, 5).to_csv(tmp_path / "bench.csv", index=False)  # a new benchmark file is worked out again
    synthetic_frame(200, 20).to_csv(drop / "c.csv", index=False)
    assert main(["monitor", "run", "--config", config]) == 0
    assert len(calls) == 2


def test_the_state_file_counts_the_same_alert_states_as_active():
    assert local.ACTIVE == alerting.ACTIVE
