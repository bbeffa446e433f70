"""Engine, sessions and migrations. SQLite by default, PostgreSQL by URL."""
from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import Iterator

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).parent / "migrations"


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # durability + concurrent readers
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


MIGRATION_LOCK_KEY = 0x63735F6D6967  # "cs_mig": the advisory lock every service process takes to migrate


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision.

    Several service processes may start at once on a fresh database (replicas behind one load
    balancer): they migrate one at a time, and each later one finds the schema at head. PostgreSQL
    serialises them with a transaction-scoped advisory lock, SQLite with a lock file beside the
    database (SQLite databases are local files, so all their processes share one file system).
    """
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with _sqlite_file_lock(engine), engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")


@contextlib.contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
        yield


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)
