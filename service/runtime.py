"""The objects one running service shares: settings, database and stores."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from service.audits.store import AuditStore, check_no_audit_uses
from service.audits.worker import AuditWorker
from service.datasets.store import DatasetStore
from service.db import make_engine, migrate, session_factory
from service.monitors.store import check_no_monitor_uses
from service.packs.store import PackRegistry
from service.rounds.store import RoundStore, check_no_round_uses
from service.settings import Settings

log = logging.getLogger("contextshift")
_cache_lock = threading.Lock()


@dataclass
class Runtime:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    datasets: DatasetStore
    audits: AuditStore
    packs: PackRegistry
    worker: AuditWorker | None = None
    _reference_cache: Any = field(default=None, repr=False)

    @property
    def rounds(self) -> RoundStore:
        """Benchmark series and their rounds, over this runtime's datasets, audits and packs."""
        return RoundStore(self.sessions, self.datasets, self.audits, self.packs)

    def reference_cache(self) -> Any:
        """The benchmark-side fit cache (``audit.pipeline.reference_cache``) under
        ``data_dir/cache/reference``, shared by the audit worker and monitor runs; None when
        ``CONTEXTSHIFT_REFERENCE_CACHE=off``. Made on first use: importing the pipeline is slow."""
        if not self.settings.reference_cache:
            return None
        with _cache_lock:
            if self._reference_cache is None:
                from audit.pipeline.reference_cache import ReferenceCache  # lazy: the pipeline, ~2 s

                self._reference_cache = ReferenceCache(self.settings.data_dir / "cache" / "reference", max_items=32)
        return self._reference_cache

    @classmethod
    def start(cls, settings: Settings) -> "Runtime":
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = make_engine(settings.resolved_database_url)
        migrate(engine)
        sessions = session_factory(engine)
        runtime = cls(settings=settings, engine=engine, sessions=sessions,
                      datasets=DatasetStore(sessions, settings.data_dir, partition_rows=settings.partition_rows,
                                            roots=settings.data_roots,
                                            users=(check_no_audit_uses, check_no_round_uses, check_no_monitor_uses)),
                      audits=AuditStore(sessions, settings.data_dir, lease_s=settings.audit_lease_s),
                      packs=PackRegistry(sessions))
        removed = runtime.datasets.remove_orphans()
        if removed:
            log.info("removed %d unreferenced data files left by an interrupted upload", removed)
        return runtime

    def start_worker(self) -> None:
        """Start the audit pool and the heartbeat; audits left running by a dead instance fail."""
        self.worker = AuditWorker(self, max_workers=self.settings.audit_workers)
        self.audits.register_instance()
        for audit_id in self.audits.recover():
            self.worker.submit(audit_id)
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="heartbeat", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        """Renew the lease; take over audits of instances that died since (never our own)."""
        worker = self.worker
        assert worker is not None  # start_worker sets it before it starts this thread, and nothing unsets it
        while not self._stop.wait(self.settings.audit_lease_s / 4):
            try:
                self.audits.heartbeat()
                for audit_id in self.audits.recover(own=False):
                    if audit_id not in worker.futures:  # claims are compare-and-set: no double run
                        worker.submit(audit_id)
            except Exception:  # a database hiccup must not kill the heartbeat
                log.exception("heartbeat failed")

    def close(self) -> None:
        if self.worker is not None:
            self._stop.set()
            self.worker.shutdown(wait=False)
            try:
                self.audits.stop_instance()
            except Exception:
                log.exception("could not record this instance as stopped")
        self.datasets.close()  # releases this instance's scratch lock and removes its empty folder
        self.engine.dispose()
