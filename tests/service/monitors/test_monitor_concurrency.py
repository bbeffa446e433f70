"""Runs of different monitors execute side by side: a monitor whose source takes 8 s does not hold
up another monitor's run, whether the runs come from the schedule (``fire``) or are posted; one
monitor still never runs twice at once. All data SYNTHETIC."""
from __future__ import annotations

import threading
import time

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.monitors import runner
from service.settings import Settings
from tests.service.monitor_support import synthetic_frame, upload_benchmark, wait_for

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them

SLOW_S = 8.0


@pytest.fixture
def client(tmp_path, monkeypatch):
    drop = tmp_path / "drop"
    drop.mkdir()
    real_take = runner.take
    active: dict[str, int] = {}
    peak: dict[str, int] = {}
    lock = threading.Lock()

    def take(monitor, store, settings):  # the "slow" monitor's source answers after SLOW_S (a slow SQL query)
        with lock:
            active[monitor.id] = active.get(monitor.id, 0) + 1
            peak[monitor.id] = max(peak.get(monitor.id, 0), active[monitor.id])
        try:
            if monitor.name == "slow":
                time.sleep(SLOW_S)
            return real_take(monitor, store, settings)
        finally:
            with lock:
                active[monitor.id] -= 1

    monkeypatch.setattr(runner, "take", take)
    settings = Settings(data_dir=tmp_path / "data", monitor_roots=[drop], scheduler=False)
    with TestClient(create_app(settings)) as c:
        yield c, drop, peak


def _monitor(client, drop, name, bench):
    body = {"name": name, "benchmark": bench, "source": {"type": "directory", "path": str(drop)},
            "schedule": {"interval_seconds": 3600}, "options": {"discovery": False}}
    response = client.post("/v1/monitors", json=body)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _final(service, run_id):
    run = service.store.get_run(run_id)
    return run if run.status not in ("queued", "running") else None


@pytest.mark.parametrize("how", ["schedule", "posted"])
def test_a_slow_run_does_not_delay_another_monitors_run(client, how):
    client, drop, peak = client
    service = client.app.state.monitors
    bench = upload_benchmark(client, synthetic_frame(400, 0))
    slow, fast = _monitor(client, drop, "slow", bench), _monitor(client, drop, "fast", bench)
    started = time.monotonic()
    if how == "schedule":
        slow_run = service.fire(slow)
        fast_run = service.fire(fast)
    else:
        slow_run = service.store.get_run(client.post(f"/v1/monitors/{slow}/run").json()["run_id"])
        fast_run = service.store.get_run(client.post(f"/v1/monitors/{fast}/run").json()["run_id"])
        again = client.post(f"/v1/monitors/{slow}/run").json()["run_id"]  # the same monitor: queued behind
    assert time.monotonic() - started < SLOW_S / 2  # firing does not execute the run in the caller's thread
    done = wait_for(lambda: _final(service, fast_run.id), timeout=SLOW_S * 3)
    fast_took = time.monotonic() - started
    assert done.status == "no_new_data"
    assert service.store.get_run(slow_run.id).status == "running", "the fast run waited for the slow one"
    assert fast_took < SLOW_S, fast_took
    wait_for(lambda: _final(service, slow_run.id), timeout=SLOW_S * 4)
    if how == "posted":
        wait_for(lambda: _final(service, again), timeout=SLOW_S * 4)
    assert peak[slow] == 1  # never two runs of one monitor at once
