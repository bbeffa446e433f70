"""A monitor run whose process is killed (kill -9) is failed as ``interrupted`` by a live instance
within one run lease, and the monitor's schedule goes on there without any restart; the
heartbeat and recovery steps on SQLite and PostgreSQL. All data SYNTHETIC."""
from __future__ import annotations

import io
import os
import signal
import time
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update

from service.db import make_engine, session_factory
from service.monitors.models import MonitorRunRow
from service.monitors.store import MonitorStore, now
from tests.service.monitor_support import synthetic_frame, wait_for
from tests.service.server import ServerProcess

LEASE_S = 6.0


@pytest.mark.slow  # two service processes and several audits: ~60 s per database on 2 cores
def test_killed_run_is_interrupted_and_the_schedule_goes_on(database_url, tmp_path):
    drop = tmp_path / "drop"
    drop.mkdir()
    env = {"CONTEXTSHIFT_DATABASE_URL": database_url, "CONTEXTSHIFT_MONITOR_ROOTS": str(drop),
           "CONTEXTSHIFT_MONITOR_MIN_INTERVAL_S": "1", "CONTEXTSHIFT_MONITOR_RUN_LEASE_S": str(LEASE_S)}
    servers = [ServerProcess(tmp_path / "data", **env).start() for _ in range(2)]
    engine = make_engine(database_url)
    store = MonitorStore(session_factory(engine))
    try:
        url = servers[0].url
        buf = io.BytesIO()
        synthetic_frame(2000, 0).to_csv(buf, index=False)
        bench = httpx.post(f"{url}/v1/datasets", files={"file": ("b.csv", buf.getvalue())},
                           data={"name": "b", "role": "benchmark"}, timeout=60).json()["id"]
        synthetic_frame(20000, 1).to_csv(drop / "big.csv", index=False)  # a run of a few seconds
        created = httpx.post(f"{url}/v1/monitors", timeout=30, json={
            "name": "k", "benchmark": bench, "source": {"type": "directory", "path": str(drop)},
            "schedule": {"interval_seconds": 2}, "options": {"discovery": False}})
        assert created.status_code == 201, created.text
        monitor = created.json()["id"]
        running = wait_for(lambda: [r for r in store.runs(monitor) if r.status == "running"], timeout=90, step=0.05)[0]
        pid = int(running.executed_by.rsplit(":", 1)[1])
        victim = next(s for s in servers if s.proc.pid == pid)
        survivor = next(s for s in servers if s is not victim)
        os.kill(pid, signal.SIGKILL)  # mid-run: no shutdown hook marks anything
        victim.proc.wait(10)
        killed_at = time.monotonic()
        synthetic_frame(500, 2).to_csv(drop / "after.csv", index=False)  # arrives while the monitor is blocked

        def interrupted():
            run = store.get_run(running.id)
            return run if run.status == "failed" else None

        run = wait_for(interrupted, timeout=LEASE_S + 20, step=0.2)
        assert run.error["code"] == "interrupted"
        recovered_after = time.monotonic() - killed_at
        def took_the_new_file():
            runs = [r for r in store.runs(monitor) if r.status == "succeeded" and r.n_rows in (500, 20500)]
            return runs if runs and any(p.endswith("after.csv") for p, _ in store.taken_files(monitor)) else None

        try:
            taken = wait_for(took_the_new_file, timeout=LEASE_S + 60, step=0.3)[0]
        except AssertionError:
            raise AssertionError([(r.status, r.trigger, r.n_rows, r.executed_by, r.error) for r in store.runs(monitor)])
        assert taken.trigger == "schedule" and taken.executed_by.endswith(f":{survivor.proc.pid}")
        assert recovered_after < LEASE_S + 10, recovered_after  # within a lease (and a tick), no restart
        assert survivor.proc.poll() is None
    finally:
        for server in servers:
            server.stop()
        engine.dispose()


@pytest.fixture
def store(store_and_benchmark):
    return store_and_benchmark


def test_heartbeat_and_recovery_steps(store):
    store, bench = store
    monitors = [store.create(name=f"m{i}", benchmark_id=bench, domain="generic", source={"type": "directory"},
                             schedule={"interval_seconds": 60}, options={}, alerts={}, alpha=0.05).id
                for i in range(2)]
    dead_run, live_run = (store.create_run(m, "schedule") for m in monitors)
    assert store.acquire_lease(monitors[0], LEASE_S, "dead") and store.claim_run(dead_run.id, "dead")
    assert store.acquire_lease(monitors[1], LEASE_S, "live") and store.claim_run(live_run.id, "live")
    assert store.recover(LEASE_S) == 0  # both just started
    stale = now() - timedelta(seconds=LEASE_S * 2)
    with store.sessions.begin() as s:  # the dead owner's last beat was two leases ago, the live one's too ...
        s.execute(update(MonitorRunRow).values(heartbeat_at=stale))
    assert store.heartbeat(LEASE_S, "live") == 1  # ... but the live one beats again now
    assert store.recover(LEASE_S) == 1
    assert store.get_run(dead_run.id).status == "failed"
    assert store.get_run(dead_run.id).error["code"] == "interrupted"
    assert store.get_run(live_run.id).status == "running"
    assert not store.finish_run(dead_run.id, "succeeded")  # the dead owner cannot finish it late
    assert not store.acquire_lease(monitors[1], LEASE_S, "other")  # the live owner's lease was renewed
