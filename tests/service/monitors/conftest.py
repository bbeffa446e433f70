"""Fixtures shared by the monitors' tests."""
from __future__ import annotations

import pytest

from service.datasets.store import DatasetStore
from service.db import make_engine, migrate, session_factory
from service.monitors.store import MonitorStore
from tests.service.monitor_support import synthetic_frame


@pytest.fixture
def store_and_benchmark(database_url, tmp_path):
    """A migrated store (SQLite, then PostgreSQL) holding one small benchmark: ``(MonitorStore, benchmark id)``."""
    engine = make_engine(database_url)
    migrate(engine)
    sessions = session_factory(engine)
    bench = DatasetStore(sessions, tmp_path / "data").create(
        name="b", role="benchmark", domain=None, frame=synthetic_frame(10, 0),
        columns=[{"name": "x1", "role": "feature", "dtype": "float64"}],
        validation={"success": True, "results": []}, sha256="a" * 64)
    yield MonitorStore(sessions), bench.id
    engine.dispose()
