"""The objects one running service shares: settings, database and stores."""
from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from service.db import make_engine, migrate, session_factory
from service.settings import Settings
from service.store import DatasetStore

log = logging.getLogger("contextshift")


@dataclass
class Runtime:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    datasets: DatasetStore

    @classmethod
    def start(cls, settings: Settings) -> "Runtime":
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = make_engine(settings.resolved_database_url)
        migrate(engine)
        sessions = session_factory(engine)
        runtime = cls(settings=settings, engine=engine, sessions=sessions,
                      datasets=DatasetStore(sessions, settings.data_dir))
        removed = runtime.datasets.remove_orphans()
        if removed:
            log.info("removed %d unreferenced data files left by an interrupted upload", removed)
        return runtime

    def close(self) -> None:
        self.engine.dispose()
