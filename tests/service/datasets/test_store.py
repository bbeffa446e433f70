"""The dataset store on SQLite and PostgreSQL: atomic writes, idempotency, orphan clean-up."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from service.datasets.store import DatasetStore
from service.db import make_engine, migrate, session_factory
from service.errors import NotFound


@pytest.fixture
def store(database_url, tmp_path):
    engine = make_engine(database_url)
    migrate(engine)
    yield DatasetStore(session_factory(engine), tmp_path / "data")
    engine.dispose()


def _frame(n=100):
    rng = np.random.default_rng(1)
    return pd.DataFrame({"id": np.arange(n), "x": rng.normal(size=n), "c": rng.choice(["a", "b"], n)})


def _create(store, frame, name="d", sha="a" * 64):
    return store.create(name=name, role="benchmark", domain=None, frame=frame,
                        columns=[{"name": c, "role": "feature", "dtype": "x"} for c in frame.columns],
                        validation={"success": True, "results": []}, sha256=sha)


def test_create_get_load_delete(store):
    frame = _frame()
    row = _create(store, frame)
    assert store.get(row.id).n_rows == 100
    pd.testing.assert_frame_equal(store.load_frame(row.id), frame)
    assert store.find_duplicate("d", "a" * 64).id == row.id
    assert store.find_duplicate("d", "b" * 64) is None
    store.delete(row.id)
    with pytest.raises(NotFound):
        store.get(row.id)
    assert list(store.datasets_dir.glob("*")) == []


def test_migrate_is_idempotent(database_url):
    engine = make_engine(database_url)
    migrate(engine)
    migrate(engine)
    engine.dispose()


def test_failed_commit_leaves_no_file(store, monkeypatch):
    def broken_begin():
        raise RuntimeError("database went away")

    monkeypatch.setattr(store.sessions, "begin", broken_begin)
    with pytest.raises(RuntimeError):
        _create(store, _frame())
    assert list(store.datasets_dir.glob("*")) == []
    assert not any(store.tmp_dir.glob("*"))


def test_orphans_from_a_crash_are_removed(store):
    kept = _create(store, _frame())
    store.tmp_dir.mkdir(parents=True, exist_ok=True)
    (store.tmp_dir / "half-written.part").write_bytes(b"PAR1 partial")
    (store.tmp_dir / "staging-x").mkdir()  # parts of an upload that never got renamed
    (store.tmp_dir / "staging-x" / "part-00000.parquet").write_bytes(b"PAR1")
    (store.datasets_dir / "ds_orphan.parquet").write_bytes(b"renamed but never committed")
    (store.datasets_dir / "ds_orphan_dir").mkdir()  # a partitioned dataset renamed, row never committed
    assert store.remove_orphans() == 4
    assert [p.name for p in store.datasets_dir.iterdir()] == [kept.id]
    assert [p.name for p in (store.datasets_dir / kept.id).iterdir()] == ["part-00000.parquet"]
    assert store.list()[0].id == kept.id


def test_audit_life_cycle_and_recovery(store, database_url):
    from service.audits.store import AuditStore
    from service.packs.store import PackRegistry

    bench, prod = _create(store, _frame(), name="b"), _create(store, _frame(), name="p", sha="b" * 64)
    audits = AuditStore(store.sessions, store.data_dir)
    done = audits.create(benchmark_id=bench.id, production_id=prod.id, domain="generic", options={"alpha": 0.05})
    audits.mark_running(done.id)
    audits.set_progress(done.id, 0.5, "slices")
    assert audits.get(done.id).stage == "slices"
    audits.mark_succeeded(done.id, {"verdict": {"shift_detected": False}}, "r.html")
    died = audits.create(benchmark_id=bench.id, production_id=prod.id, domain="generic", options={})
    audits.mark_running(died.id)
    waiting = audits.create(benchmark_id=bench.id, production_id=prod.id, domain="generic", options={})
    assert audits.recover() == [waiting.id]
    assert audits.get(died.id).status == "failed" and audits.get(died.id).error["code"] == "interrupted"
    assert audits.get(done.id).result["verdict"]["shift_detected"] is False
    packs = PackRegistry(store.sessions)
    assert "dermatology" in packs.names() and packs.get("medical").name == "dermatology"
