"""The monitors of one running service: definitions, runs (a bounded pool of threads), the
heartbeat of its runs, the webhook outbox and the scheduler.

Runs of different monitors execute side by side (``CONTEXTSHIFT_MONITOR_WORKERS`` threads), so a
slow source stalls only its own monitor; one monitor never runs twice at once (its lease). A
heartbeat thread refreshes this process's running runs and its monitor leases every few seconds,
so a run whose process died is failed as interrupted by any live instance within one lease
(``CONTEXTSHIFT_MONITOR_RUN_LEASE_S``) and the monitor's schedule goes on.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from service.errors import InvalidRequest
from service.monitors.budget import budget_summary
from service.monitors.definitions import check_schedule, check_source, check_webhook, min_gap_s
from service.monitors.heartbeat import Heartbeat
from service.monitors.models import MonitorRow, MonitorRunRow
from service.monitors.outbox import Outbox
from service.monitors.runner import BenchmarkCache, check_engine, execute
from service.monitors.scheduler import MonitorScheduler, next_run_time
from service.monitors.schemas import MonitorCreate
from service.monitors.store import MonitorStore, now

log = logging.getLogger("contextshift.monitors")


class MonitorService:
    def __init__(self, runtime: Any, *, webhook_backoff_s: float = 0.5) -> None:
        settings = runtime.settings
        self.runtime = runtime
        self.store = MonitorStore(runtime.sessions)
        self.cache = BenchmarkCache()
        self.lease_s = float(settings.monitor_run_lease_s)
        self.outbox = Outbox(runtime.sessions, allow_private=settings.webhook_allow_private,
                             retry_s=settings.webhook_retry_s, backoff_s=webhook_backoff_s)
        self.pool = ThreadPoolExecutor(max_workers=settings.monitor_workers, thread_name_prefix="monitor")
        self.scheduler: MonitorScheduler | None = None  # None where CONTEXTSHIFT_SCHEDULER is off
        self._draining: set[str] = set()
        self._lock = threading.Lock()
        self.heartbeat = Heartbeat(self.store, lease_s=self.lease_s).start()

    @property
    def webhook_backoff_s(self) -> float:
        return self.outbox.backoff_s

    @webhook_backoff_s.setter
    def webhook_backoff_s(self, value: float) -> None:
        self.outbox.backoff_s = value

    def tick(self) -> None:
        """Each scheduler tick: fail runs of dead processes, run what is queued."""
        try:
            recovered = self.store.recover(self.lease_s)
            if recovered:
                log.warning("marked %d monitor run(s) interrupted: their process stopped sending heartbeats",
                            recovered)
            self.drain_queued()
        except Exception:
            log.exception("monitor tick failed")

    def deliver_webhooks(self) -> None:
        """Retry due webhook messages (a job of its own: a receiver timing out never delays a tick)."""
        self.outbox.deliver_pending()

    @classmethod
    def start(cls, runtime: Any) -> "MonitorService":
        service = cls(runtime)
        recovered = service.store.recover(service.lease_s)
        if recovered:
            log.info("marked %d monitor runs failed: their process stopped", recovered)
        if runtime.settings.scheduler:
            service.scheduler = MonitorScheduler(service)
            service.scheduler.start()
        return service

    def close(self) -> None:
        self.heartbeat.stop()
        if self.scheduler is not None:
            self.scheduler.shutdown()
        self.pool.shutdown(wait=False, cancel_futures=True)
        try:  # a run cut short by the shutdown is failed now, not left "running" until its lease expires
            self.store.interrupt_own()
        except Exception:
            log.exception("could not mark this process's monitor runs interrupted")

    # -- definitions --------------------------------------------------------------------------
    def create(self, body: MonitorCreate) -> MonitorRow:
        settings, runtime = self.runtime.settings, self.runtime
        bench = runtime.datasets.get(body.benchmark)
        if bench.role != "benchmark":
            raise InvalidRequest(f"'benchmark' must name a benchmark dataset (got role {bench.role!r}).",
                                 code="invalid_dataset_role", details={"benchmark": bench.role})
        runtime.packs.get(body.domain)
        source = check_source(body.source, settings)
        schedule = check_schedule(body.schedule, settings.monitor_min_interval_s)
        check_webhook(body.alerts.webhook, allow_private=settings.webhook_allow_private)
        options = body.options.model_dump()
        check_engine(options)
        row = self.store.create(name=body.name, benchmark_id=bench.id, domain=body.domain, source=source,
                                schedule=schedule, options=options, alerts=body.alerts.model_dump(),
                                alpha=options["alpha"])
        if self.scheduler is not None:
            self.scheduler.add(row.id, schedule)
        return row

    def delete(self, monitor_id: str) -> None:
        self.store.delete(monitor_id)
        self.cache = BenchmarkCache()
        if self.scheduler is not None:
            self.scheduler.remove(monitor_id)

    def budget(self, monitor: MonitorRow) -> dict[str, Any]:
        return budget_summary(monitor.alpha, monitor.n_tested)

    # -- runs ---------------------------------------------------------------------------------
    def fire(self, monitor_id: str) -> MonitorRunRow | None:
        """A schedule slot (from APScheduler or cron): at most one process creates its run."""
        monitor = self.store.get(monitor_id)
        if not self.store.claim_firing(monitor_id, now(), min_gap_s(monitor.schedule)):
            return None
        run = self.store.create_run(monitor_id, "schedule")
        self.pool.submit(self.drain, monitor_id)  # the pool, not the scheduler's thread: monitors run side by side
        return run

    def run_now(self, monitor_id: str) -> tuple[MonitorRunRow, Future]:
        self.store.get(monitor_id)
        run = self.store.create_run(monitor_id, "manual")
        return run, self.pool.submit(self.drain, monitor_id)

    def drain(self, monitor_id: str) -> None:
        """Execute this monitor's queued runs, oldest first, while holding its lease."""
        with self._lock:
            if monitor_id in self._draining:
                return
            self._draining.add(monitor_id)
        try:
            while self.store.acquire_lease(monitor_id, self.lease_s):
                try:
                    queued = sorted(self.store.runs(monitor_id, status="queued"), key=lambda r: r.created_at)
                    for run in queued:
                        if self.store.claim_run(run.id):
                            execute(self.runtime, self.store, self.cache, run.id, outbox=self.outbox)
                finally:
                    self.store.release_lease(monitor_id)
                if not self.store.runs(monitor_id, status="queued", limit=1):
                    break
        finally:
            with self._lock:
                self._draining.discard(monitor_id)

    def drain_queued(self) -> None:
        """Runs left queued (e.g. posted to a replica without the scheduler) get executed here."""
        for monitor_id in self.store.queued_monitors():
            with self._lock:
                if monitor_id in self._draining:
                    continue
            self.pool.submit(self.drain, monitor_id)

    def next_run_time(self, monitor_id: str):
        return next_run_time(self.runtime.engine, monitor_id)
