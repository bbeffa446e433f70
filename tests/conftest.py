"""Fixtures shared by the whole suite: isolated settings, API clients, database URLs."""
from __future__ import annotations

import os
import uuid

import pytest

os.environ.setdefault("DO_NOT_TRACK", "1")

POSTGRES_URL = os.environ.get("CONTEXTSHIFT_TEST_POSTGRES_URL",
                              "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def _postgres_reachable() -> str | None:
    """Return None when PostgreSQL answers, else the reason it does not."""
    try:
        import psycopg

        with psycopg.connect(POSTGRES_URL.replace("+psycopg", ""), connect_timeout=3):
            return None
    except Exception as exc:  # any failure means "not reachable" for the skip message
        return f"{type(exc).__name__}: {exc}".strip()


@pytest.fixture(scope="session")
def postgres_schema_url():
    """A PostgreSQL URL confined to a fresh schema, dropped after the session."""
    reason = _postgres_reachable()
    if reason is not None:
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_URL}: {reason}")
    import psycopg

    schema = f"cs_test_{uuid.uuid4().hex[:10]}"
    plain = POSTGRES_URL.replace("+psycopg", "")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in POSTGRES_URL else "?"
    yield f"{POSTGRES_URL}{sep}options=-csearch_path%3D{schema}"
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    """Run a test once on SQLite and once on PostgreSQL (skipped, with the reason, if down)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    url = request.getfixturevalue("postgres_schema_url")
    _truncate_postgres(url)
    return url


def _truncate_postgres(url: str) -> None:
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(url)
    with engine.begin() as conn:
        tables = [t for t in inspect(conn).get_table_names() if t != "alembic_version"]
        if tables:
            conn.execute(text("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " CASCADE"))
    engine.dispose()


@pytest.fixture
def settings(tmp_path):
    from service.settings import Settings

    return Settings(data_dir=tmp_path / "data")


@pytest.fixture
def client(settings):
    from fastapi.testclient import TestClient

    from service.app import create_app

    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def dask_client():
    """A Dask LocalCluster with one in-process worker (threads): starts in about a second, and its
    scheduler address works for the CLI and the API's worker in this process."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
                                       silence_logs=40)
    dask = distributed.Client(cluster, set_as_default=False)
    yield dask
    dask.close()
    cluster.close()
