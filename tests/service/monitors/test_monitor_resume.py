"""A monitor's detector state: one for both run paths, resumed after a killed run with the same
decisions, restarted on a benchmark change. All data SYNTHETIC (frames of monitor_support: a 20-point
accuracy drop and a 0.5 sd shift of x1 from the third batch)."""
from __future__ import annotations

import json
import shutil

import pytest
import yaml
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.engine import Engine

from service.app import create_app
from service.cli import main
from service.monitors import alerting
from service.settings import Settings, get_settings
from tests.service.monitor_support import (
    CHANGING_BATCHES,
    cron_environment,
    directory_monitor,
    synthetic_frame,
    twin_service_monitors,
    upload_benchmark,
    wait_run,
    write_batch,
)

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them

BATCHES = CHANGING_BATCHES


def _monitor(folder, bench_seed=0):
    (folder / "drop").mkdir(parents=True)
    synthetic_frame(1500, bench_seed).to_csv(folder / "bench.csv", index=False)
    config = {"name": "twin", "benchmark": "bench.csv", "domain": "generic",
              "source": {"type": "directory", "path": "drop", "pattern": "*.csv"},
              "options": {"alpha": 0.05, "discovery": False}, "alerts": {"min_severity": "low"}, "state": "state.json"}
    (folder / "monitor.yaml").write_text(yaml.safe_dump(config))
    return str(folder / "monitor.yaml")


def _drop(folder, i):
    write_batch(folder / "drop", i)


def _opened(folder):
    state = json.loads((folder / "state.json").read_text())
    return [sorted(a["key"] for a in state["alerts"] if a["opened_run_id"] == run["id"]) for run in state["runs"]
            if run["status"] == "succeeded"], state


def test_a_run_killed_mid_way_resumes_with_the_same_decisions(tmp_path, monkeypatch):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    cfg_a, cfg_b = _monitor(straight), _monitor(killed)
    for i in range(len(BATCHES)):
        _drop(straight, i)
        assert main(["monitor", "run", "--config", cfg_a]) == 0
    real, calls = alerting.update_alerts, []

    def dies_once(*args, **kwargs):  # the process dies after the audit and the decision, before anything is saved
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(alerting, "update_alerts", dies_once)
    for i in range(len(BATCHES)):
        _drop(killed, i)
        if i == 3:
            with pytest.raises(KeyboardInterrupt):
                main(["monitor", "run", "--config", cfg_b])
        assert main(["monitor", "run", "--config", cfg_b]) == 0
    opened_a, state_a = _opened(straight)
    opened_b, state_b = _opened(killed)
    assert opened_a == opened_b and any(opened_a)
    assert state_a["detector_state"] == state_b["detector_state"]
    assert state_b["n_tested"] == len(BATCHES) and len(state_b["taken"]) == len(BATCHES)


def test_a_changed_benchmark_restarts_the_detectors(tmp_path):
    cfg = _monitor(tmp_path)
    _drop(tmp_path, 2)
    assert main(["monitor", "run", "--config", cfg]) == 0
    before = json.loads((tmp_path / "state.json").read_text())
    assert before["detector_state"]["drift"] and not before["runs"][-1]["summary"]["detectors_reset"]
    synthetic_frame(1500, 99).to_csv(tmp_path / "bench.csv", index=False)  # a new benchmark, same columns
    _drop(tmp_path, 3)
    assert main(["monitor", "run", "--config", cfg]) == 0
    after = json.loads((tmp_path / "state.json").read_text())
    assert after["runs"][-1]["summary"]["detectors_reset"]
    assert after["detector_state"]["benchmark"] != before["detector_state"]["benchmark"]


def test_the_service_and_the_cron_path_reach_the_same_detector_state(tmp_path, monkeypatch):
    cron = tmp_path / "cron"
    cfg = _monitor(cron)
    drop = tmp_path / "roots" / "drop"
    drop.mkdir(parents=True)
    cron_environment(monkeypatch, tmp_path / "data", drop.parent)
    try:
        with TestClient(create_app(Settings())) as client:
            bench = upload_benchmark(client, synthetic_frame(1500, 0))
            monitor = directory_monitor(client, bench, drop, "twin", options={"discovery": False},
                                        alerts={"min_severity": "low"})
            for i in range(3):
                _drop(cron, i)
                assert main(["monitor", "run", "--config", cfg]) == 0
                shutil.copy(cron / "drop" / f"batch{i}.csv", drop / f"batch{i}.csv")
                wait_run(client, monitor, client.post(f"/v1/monitors/{monitor}/run").json()["run_id"])
            service_state = client.app.state.monitors.store.get(monitor).detector_state
    finally:
        get_settings.cache_clear()
    cron_state = json.loads((cron / "state.json").read_text())["detector_state"]
    assert service_state["harm"] and service_state["drift"]
    assert service_state["harm"] == cron_state["harm"] and service_state["drift"] == cron_state["drift"]


def _service_opened(store, monitor_id):
    runs = sorted((r for r in store.runs(monitor_id) if r.status == "succeeded"), key=lambda r: r.created_at)
    opened = {run.id: [] for run in runs}
    for alert in store.alerts(monitor_id=monitor_id):
        if alert.opened_run_id in opened:
            opened[alert.opened_run_id].append(alert.key)
    return [sorted(opened[run.id]) for run in runs]


def test_a_service_run_killed_while_it_saves_resumes_with_the_same_decisions(tmp_path, monkeypatch):
    """The service saves a run's files taken, detector state, summary and alerts; a process killed as
    the new detector state is being written (after the files taken were) must leave none of it, so
    the next run re-reads the same rows from the same detector state and decides as the killed run
    would have. A save in several transactions lost the killed run's rows: taken, never counted."""
    source = tmp_path / "source"
    _monitor(source)
    for i in range(len(BATCHES)):
        _drop(source, i)
    saves = []

    def dies_once_while_saving(conn, cursor, statement, parameters, context, executemany):
        params = json.dumps(parameters, default=str)
        if statement.startswith("UPDATE monitors ") and "detector_state" in statement and ids["killed"] in params:
            saves.append(1)
            if len(saves) == 4:  # the fourth run's save: the process dies mid-way
                raise KeyboardInterrupt

    with twin_service_monitors(tmp_path, monkeypatch) as (client, ids, roots):
        service = client.app.state.monitors
        event.listen(Engine, "before_cursor_execute", dies_once_while_saving)
        try:
            for i in range(len(BATCHES)):
                for name, monitor in ids.items():
                    shutil.copy(source / "drop" / f"batch{i}.csv", roots / name / f"batch{i}.csv")
                    run, done = service.run_now(monitor)
                    if name == "killed" and i == 3:
                        with pytest.raises(KeyboardInterrupt):
                            done.result(timeout=120)
                        service.store.interrupt_own()  # what a restarted service finds: the run failed
                        run, done = service.run_now(monitor)
                    done.result(timeout=120)
                    assert service.store.get_run(run.id).status == "succeeded"
        finally:
            event.remove(Engine, "before_cursor_execute", dies_once_while_saving)
        store = service.store
        straight, killed = store.get(ids["straight"]), store.get(ids["killed"])
        opened = [_service_opened(store, ids[name]) for name in ("straight", "killed")]
    assert len(saves) == len(BATCHES) + 1  # the killed save, then one save per run
    assert opened[0] == opened[1] and any(opened[0])
    assert killed.detector_state == straight.detector_state and killed.n_tested == straight.n_tested == len(BATCHES)
