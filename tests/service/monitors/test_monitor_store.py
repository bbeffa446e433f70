"""The monitor tables on SQLite and PostgreSQL: the migration matches the models, and the
compare-and-set steps hold on both."""
from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from service.datasets.store import DatasetStore
from service.db import make_engine, migrate, session_factory
from service.monitors.models import AlertRow
from service.monitors.store import MonitorStore, now

TABLES = {"monitors", "monitor_runs", "monitor_files", "alerts", "alert_deliveries", "alert_outbox"}


@pytest.fixture
def stores(database_url, tmp_path):
    engine = make_engine(database_url)
    migrate(engine)
    sessions = session_factory(engine)
    yield engine, DatasetStore(sessions, tmp_path / "data"), MonitorStore(sessions)
    engine.dispose()


def test_migration_matches_the_models(stores):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from service.tables import Base

    engine = stores[0]
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    ours = [d for d in diff if any(t in repr(d) for t in TABLES)]
    assert ours == []


def test_store_round_trip_and_compare_and_set(stores):
    _, datasets, store = stores
    frame = pd.DataFrame({"x": np.arange(5)})
    bench = datasets.create(name="b", role="benchmark", domain=None, frame=frame,
                            columns=[{"name": "x", "role": "feature", "dtype": "int64"}],
                            validation={"success": True, "results": []}, sha256="a" * 64)
    monitor = store.create(name="m", benchmark_id=bench.id, domain="generic", source={"type": "directory"},
                           schedule={"interval_seconds": 60}, options={}, alerts={}, alpha=0.05)
    t = now()
    assert store.claim_firing(monitor.id, t, 30) and not store.claim_firing(monitor.id, t + timedelta(seconds=1), 30)
    run = store.create_run(monitor.id, "schedule")
    assert store.claim_run(run.id, "p1") and not store.claim_run(run.id, "p2")
    assert store.acquire_lease(monitor.id, 60, "p1") and not store.acquire_lease(monitor.id, 60, "p2")
    store.record_files(monitor.id, run.id, [("/d/a.csv", "1" * 64)])
    with pytest.raises(RuntimeError):
        store.record_files(monitor.id, run.id, [("/d/a.csv", "1" * 64)])
    store.save_alerts([AlertRow(id="al_1", monitor_id=monitor.id, key="k", kind="covariate_shift", severity="high",
                                statement="s", state="open", opened_run_id=run.id, last_seen_run_id=run.id,
                                missed_runs=0, created_at=t, last_seen=t)])
    assert store.set_alert_state("al_1", "acknowledged").state == "acknowledged"
    store.finish_run(run.id, "succeeded", n_rows=5)
    assert store.get_run(run.id).status == "succeeded"
    store.delete(monitor.id)
    assert store.list() == [] and store.alerts() == []


def test_a_run_saves_all_it_decided_or_nothing(stores):
    """Files another run took fail the save before anything is written: the detector state, the run's
    summary and its alerts stay as they were, on both databases."""
    _, datasets, store = stores
    bench = datasets.create(name="b", role="benchmark", domain=None, frame=pd.DataFrame({"x": np.arange(5)}),
                            columns=[{"name": "x", "role": "feature", "dtype": "int64"}],
                            validation={"success": True, "results": []}, sha256="b" * 64)
    monitor = store.create(name="m", benchmark_id=bench.id, domain="generic", source={"type": "directory"},
                           schedule={"interval_seconds": 60}, options={}, alerts={}, alpha=0.05)
    first, second = store.create_run(monitor.id, "manual"), store.create_run(monitor.id, "manual")
    t = now()

    def alert(run_id, key):
        return AlertRow(id=f"al_{key}", monitor_id=monitor.id, key=key, kind="harm", severity="high", statement="s",
                        state="open", opened_run_id=run_id, last_seen_run_id=run_id, missed_runs=0, created_at=t,
                        last_seen=t)

    store.save_run(monitor.id, first.id, files=[("/d/a.csv", "1" * 64)], monitor={"n_tested": 1,
                   "detector_state": {"harm": {"overall": 1}}}, run={"n_rows": 10}, alerts=[alert(first.id, "a")])
    with pytest.raises(RuntimeError, match="already taken"):
        store.save_run(monitor.id, second.id, files=[("/d/b.csv", "2" * 64), ("/d/a.csv", "1" * 64)],
                       monitor={"n_tested": 2, "detector_state": {"harm": {"overall": 2}}}, run={"n_rows": 20},
                       alerts=[alert(second.id, "b")])
    row = store.get(monitor.id)
    assert row.n_tested == 1 and row.detector_state == {"harm": {"overall": 1}}
    assert store.get_run(first.id).n_rows == 10 and store.get_run(second.id).n_rows in (None, 0)
    assert [a.key for a in store.alerts(monitor_id=monitor.id)] == ["a"]
    assert store.taken_files(monitor.id) == {("/d/a.csv", "1" * 64)}
