"""Idempotent uploads and compare-and-set audit states, on SQLite and PostgreSQL."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import update

from service.audits.models import InstanceRow
from service.audits.store import AuditStore
from service.datasets.store import DatasetStore
from service.db import make_engine, migrate, session_factory


@pytest.fixture
def sessions(database_url):
    engine = make_engine(database_url)
    migrate(engine)
    yield session_factory(engine)
    engine.dispose()


def _frame():
    return pd.DataFrame({"id": np.arange(50), "x": np.linspace(0, 1, 50)})


def _upload(store, name="same", sha="c" * 64):
    return store.create_or_get(name=name, role="benchmark", domain=None, frame=_frame(),
                               columns=[{"name": "id", "role": "id", "dtype": "int64"}],
                               validation={"success": True, "results": []}, sha256=sha)


def test_parallel_identical_uploads_store_one_dataset(sessions, tmp_path):
    store = DatasetStore(sessions, tmp_path / "data")
    results, barrier = [], threading.Barrier(12)

    def one():
        barrier.wait()
        results.append(_upload(store))

    threads = [threading.Thread(target=one) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 12
    assert len({row.id for row, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert len(store.list(limit=100)) == 1
    assert len(list((tmp_path / "data" / "datasets").glob("*/*.parquet"))) == 1  # losers left no parts
    other, created = _upload(store, name="other")
    assert created and other.id != results[0][0].id


def _audit(audits, datasets):
    bench, _ = _upload(datasets, name="b", sha="b" * 64)
    return audits.create(benchmark_id=bench.id, production_id=bench.id, domain="generic", options={})


def test_only_one_instance_claims_a_queued_audit(sessions, tmp_path):
    datasets = DatasetStore(sessions, tmp_path / "data")
    a, b = AuditStore(sessions, tmp_path / "data"), AuditStore(sessions, tmp_path / "data")
    row = _audit(a, datasets)
    claims = []
    threads = [threading.Thread(target=lambda s=s: claims.append(s.mark_running(row.id))) for s in (a, b) * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(claims) == [False] * 7 + [True]
    owner = a if a.get(row.id).owner == a.instance_id else b
    thief = b if owner is a else a
    assert not thief.mark_succeeded(row.id, {"x": 1}, "r.html")  # not the owner: no effect
    assert thief.get(row.id).status == "running"
    assert owner.mark_succeeded(row.id, {"x": 1}, "r.html") and owner.get(row.id).status == "succeeded"
    assert not owner.mark_failed(row.id, {"code": "late"})  # succeeded is final


def test_recovery_takes_only_audits_whose_owner_is_gone(sessions, tmp_path):
    datasets = DatasetStore(sessions, tmp_path / "data")
    a = AuditStore(sessions, tmp_path / "data", lease_s=30)
    b = AuditStore(sessions, tmp_path / "data", lease_s=30)
    a.register_instance()
    live = _audit(a, datasets)
    assert a.mark_running(live.id)
    b.register_instance()
    b.recover()  # B starts while A is alive: A's audit is left alone
    assert a.get(live.id).status == "running"
    with sessions.begin() as s:  # A stops beating
        s.execute(update(InstanceRow).where(InstanceRow.id == a.instance_id)
                  .values(heartbeat_at=datetime.now(timezone.utc) - timedelta(seconds=31)))
    b.recover(own=False)
    after = b.get(live.id)
    assert after.status == "failed" and after.error["code"] == "interrupted"
    assert not a.mark_succeeded(live.id, {"x": 1}, "r.html")  # A wakes up too late: no overwrite
    assert b.get(live.id).status == "failed"


@pytest.mark.slow
def test_clean_stop_releases_audits_at_once(sessions, tmp_path):
    datasets = DatasetStore(sessions, tmp_path / "data")
    a, b = AuditStore(sessions, tmp_path / "data"), AuditStore(sessions, tmp_path / "data")
    a.register_instance()
    row = _audit(a, datasets)
    a.mark_running(row.id)
    a.heartbeat()
    a.stop_instance()
    b.register_instance()
    assert b.recover() == [] and b.get(row.id).status == "failed"
    assert b.get(row.id).created_at.tzinfo is not None  # UTC offsets on SQLite too


def test_migration_keeps_old_duplicates_under_a_new_name(tmp_path):
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text

    from service.db import MIGRATIONS

    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002")
        for i in range(2):  # what the old race could leave behind
            conn.execute(text("INSERT INTO datasets VALUES (:i, 'same', 'benchmark', NULL, 1, 1, '[]', '{}', "
                              ":s, 'x', :c)"), {"i": f"ds_{i}", "s": "f" * 64, "c": f"2026-01-0{i + 1} 00:00:00"})
        conn.execute(text("INSERT INTO domain_packs VALUES ('mine', 'name: mine', '2026-01-01 00:00:00')"))
    migrate(engine)
    with engine.connect() as conn:
        names = dict(conn.execute(text("SELECT id, name FROM datasets")).fetchall())
        versions = conn.execute(text("SELECT name, version FROM domain_pack_versions")).fetchall()
    engine.dispose()
    assert names["ds_0"] == "same" and names["ds_1"] == "same (duplicate ds_1)"
    assert versions == [("mine", 1)]
