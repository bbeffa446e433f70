"""Replicas starting at once on a fresh database migrate one at a time (SQLite and PostgreSQL)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from tests.conftest import POSTGRES_URL, _postgres_reachable
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]

MIGRATOR = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from service.db import make_engine, migrate
    engine = make_engine(sys.argv[1])
    go = Path(sys.argv[2])
    (Path(sys.argv[3]) / str(os.getpid())).touch()  # imports done: ready to race the others
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:  # all start together
        time.sleep(0.01)
    migrate(engine)
    engine.dispose()
""")


def _migrate_concurrently(url: str, tmp_path: Path, n: int = 4) -> None:
    go, ready = tmp_path / "go", tmp_path / "ready"
    ready.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", MIGRATOR, url, str(go), str(ready)], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    # released together once every process has done its imports (one that exits early is reported below)
    wait_until(lambda: len(list(ready.iterdir())) == n or any(proc.poll() is not None for proc in procs),
               timeout_s=120, what="every migrator process imported")
    go.touch()
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), "\n".join(errors)
    engine = create_engine(url)
    with engine.connect() as conn:
        versions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        tables = set(inspect(conn).get_table_names())
    engine.dispose()
    assert len(versions) == 1 and {"datasets", "audits", "monitors"} <= tables


@pytest.mark.slow  # four cold processes
def test_concurrent_first_start_on_sqlite(tmp_path):
    _migrate_concurrently(f"sqlite:///{tmp_path / 'fresh.db'}", tmp_path)


@pytest.mark.slow
def test_concurrent_first_start_on_postgres(tmp_path):
    reason = _postgres_reachable()
    if reason is not None:
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_URL}: {reason}")
    import psycopg

    schema = f"cs_migrate_{uuid.uuid4().hex[:10]}"
    plain = POSTGRES_URL.replace("+psycopg", "")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        sep = "&" if "?" in POSTGRES_URL else "?"
        _migrate_concurrently(f"{POSTGRES_URL}{sep}options=-csearch_path%3D{schema}", tmp_path)
    finally:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
