"""The scheduler: schedules survive a restart (two apps in sequence on one SQLite file), and two
service processes on one database never execute the same run. All data SYNTHETIC."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from service.app import create_app
from service.db import make_engine, migrate, session_factory
from service.monitors.store import MonitorStore, now
from service.settings import Settings
from tests.service.monitor_support import Receiver, synthetic_frame, upload_benchmark, wait_for

ROOT = Path(__file__).resolve().parents[3]


def _settings(tmp_path, **extra):
    return Settings(data_dir=tmp_path / "data", monitor_roots=[tmp_path / "drop"], monitor_min_interval_s=0.5,
                    webhook_allow_private=True,  # the receiver is on 127.0.0.1
                    **extra)


def _monitor(client, tmp_path, interval=1.0, webhook=None):
    (tmp_path / "drop").mkdir(exist_ok=True)
    bench = upload_benchmark(client, synthetic_frame(800, 0))
    body = {"name": "m", "benchmark": bench, "source": {"type": "directory", "path": str(tmp_path / "drop")},
            "schedule": {"interval_seconds": interval}, "options": {"discovery": False},
            # the SYNTHETIC x1 shift costs the model nothing (labels ignore x1): a low-severity change claim
            "alerts": {"webhook": webhook, "min_severity": "low"}}
    response = client.post("/v1/monitors", json=body)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _scheduled(client, monitor):
    return [r for r in client.get(f"/v1/monitors/{monitor}/runs").json()["items"] if r["trigger"] == "schedule"]


@pytest.mark.slow
def test_schedule_survives_restart(tmp_path):
    settings = _settings(tmp_path)
    with Receiver() as hook:
        with TestClient(create_app(settings)) as first:
            monitor = _monitor(first, tmp_path, webhook=hook.url)
            assert first.get(f"/v1/monitors/{monitor}").json()["next_run_time"] is not None
            wait_for(lambda: _scheduled(first, monitor), timeout=30)
        engine = create_engine(settings.resolved_database_url)
        with engine.connect() as conn:
            jobs = conn.execute(text("SELECT id FROM apscheduler_jobs")).scalars().all()
        engine.dispose()
        assert jobs == [monitor]  # the schedule is in the database, not in the stopped process
        time.sleep(2.5)  # firings missed while down are coalesced into one run (not replayed one by one)
        with TestClient(create_app(settings)) as second:
            second.app.state.monitors.webhook_backoff_s = 0.01
            before = {r["id"] for r in _scheduled(second, monitor)}
            # SYNTHETIC: x1 moved by 1 sd, picked up by the schedule of the restarted service (the run loads
            # the scientific stack and audits: 12 s alone, over a minute beside another worker's tests)
            # written beside the folder and moved in whole, so a firing never reads half a file
            synthetic_frame(300, 9, shift=1.0).to_csv(tmp_path / "shifted.csv", index=False)
            os.replace(tmp_path / "shifted.csv", tmp_path / "drop" / "shifted.csv")
            # a run's alerts are committed with its decisions, a moment before it is marked finished
            alerted = wait_for(lambda: [r for r in _scheduled(second, monitor) if r["id"] not in before
                                        and r["alerts"] and r["status"] not in ("queued", "running")], timeout=150)
            assert alerted[0]["status"] == "succeeded" and alerted[0]["n_rows"] == 300
            wait_for(lambda: hook.bodies, timeout=10)
        assert len(hook.bodies) == 1 and hook.bodies[0]["run"]["id"] == alerted[0]["id"]
    with TestClient(create_app(_settings(tmp_path, scheduler=False))) as replica:  # API-only replica
        assert replica.app.state.monitors.scheduler is None
        assert replica.get(f"/v1/monitors/{monitor}").json()["next_run_time"] is not None
        assert len(replica.get("/v1/alerts?state=open").json()["items"]) == 1


def test_job_table_creation_tolerates_a_concurrent_creator(tmp_path):
    """Two processes starting on one fresh database both check for the job table, both try to
    create it, one gets "already exists" (the CI failure this test pins down): that is success."""
    import threading

    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from sqlalchemy import inspect
    from sqlalchemy.exc import OperationalError

    from service.monitors.scheduler import JOB_TABLE, ensure_job_table

    engine = make_engine(f"sqlite:///{tmp_path / 'jobs.db'}")
    table = SQLAlchemyJobStore(engine=engine, tablename=JOB_TABLE).jobs_t

    class LosesTheRace:  # the other process created the table between our check and our CREATE
        name = JOB_TABLE

        def create(self, bind, checkfirst):
            table.create(bind, checkfirst=False)
            raise OperationalError("CREATE TABLE", {}, Exception(f"table {JOB_TABLE} already exists"))

    ensure_job_table(LosesTheRace(), engine)
    assert inspect(engine).has_table(JOB_TABLE)
    table.drop(engine)

    class AlwaysFails:  # a real fault (no table appears) is not swallowed
        name = JOB_TABLE

        def create(self, bind, checkfirst):
            raise OperationalError("CREATE TABLE", {}, Exception("disk I/O error"))

    with pytest.raises(OperationalError):
        ensure_job_table(AlwaysFails(), engine, attempts=2)

    errors = []
    def start():
        try:
            ensure_job_table(SQLAlchemyJobStore(engine=engine, tablename=JOB_TABLE).jobs_t, engine)
        except Exception as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)
    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors and inspect(engine).has_table(JOB_TABLE)
    engine.dispose()


def test_compare_and_set_steps(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    migrate(engine)
    store = MonitorStore(session_factory(engine))
    with TestClient(create_app(_settings(tmp_path, database_url=f"sqlite:///{tmp_path / 'x.db'}",
                                         scheduler=False))) as client:
        monitor = _monitor(client, tmp_path, interval=60)
    t = now()
    assert store.claim_firing(monitor, t, 30) and not store.claim_firing(monitor, t + timedelta(seconds=5), 30)
    assert store.claim_firing(monitor, t + timedelta(seconds=31), 30)
    run = store.create_run(monitor, "manual")
    assert store.claim_run(run.id, "a") and not store.claim_run(run.id, "b")
    assert store.acquire_lease(monitor, 60, "a") and not store.acquire_lease(monitor, 60, "b")
    store.release_lease(monitor, "a")
    assert store.acquire_lease(monitor, 60, "b")
    engine.dispose()


WORKER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from service.monitors.service import MonitorService
    from service.runtime import Runtime
    from service.settings import Settings
    base = Path(sys.argv[1])
    settings = Settings(data_dir=base / "data", monitor_roots=[base / "drop"], monitor_min_interval_s=0.5)
    runtime = Runtime.start(settings)
    service = MonitorService.start(runtime)
    claims = []
    claim = service.store.claim_firing
    service.store.claim_firing = lambda *a, **k: claims.append(claim(*a, **k)) or claims[-1]
    deadline = time.monotonic() + 60
    while not (base / "stop").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    service.close()
    runtime.close()
    print(json.dumps({"won": sum(claims), "lost": len(claims) - sum(claims)}))
""")


@pytest.mark.slow  # two cold service processes: ~40 s on the shared 2-core machine
def test_two_processes_never_execute_the_same_run(tmp_path):
    settings = _settings(tmp_path, scheduler=False)
    with TestClient(create_app(settings)) as client:
        monitor = _monitor(client, tmp_path, interval=1.0)
    drop = tmp_path / "drop"
    for i in range(2):
        synthetic_frame(100, 10 + i).to_csv(drop / f"a{i}.csv", index=False)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    store = MonitorStore(session_factory(make_engine(settings.resolved_database_url)))
    try:
        wait_for(lambda: any(r.status == "succeeded" for r in store.runs(monitor)), timeout=45, step=0.3)
        synthetic_frame(100, 20).to_csv(drop / "b.csv", index=False)  # arrives while both are running
        wait_for(lambda: len(store.taken_files(monitor)) == 3, timeout=30, step=0.3)
        time.sleep(3)  # a few more contested slots
    finally:
        (tmp_path / "stop").touch()
        outputs = [proc.communicate(timeout=60)[0] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    claims = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    runs = store.runs(monitor)
    assert all(c["won"] + c["lost"] > 0 for c in claims), claims  # both processes fired the schedule
    assert sum(c["lost"] for c in claims) > 0, claims  # slots were contested ...
    # ... one run each (consecutive no-data runs are kept as one row that counts them)
    assert sum(c["won"] for c in claims) == sum(r.no_data_count or 1 for r in runs if r.trigger == "schedule")
    # a run still going when a process is told to stop is failed as "interrupted" (documented); any other
    # failure is a bug
    finished = [r for r in runs if not (r.status == "failed" and (r.error or {}).get("code") == "interrupted")]
    assert {r.status for r in finished} <= {"succeeded", "no_new_data", "queued"}, [(r.status, r.error) for r in runs]
    assert sum(r.n_rows or 0 for r in runs) == 300  # every row audited once, none twice
    assert sorted(Path(p).name for p, _ in store.taken_files(monitor)) == ["a0.csv", "a1.csv", "b.csv"]
    assert all(r.executed_by for r in runs if r.status != "queued")
