"""APScheduler 3 inside the service, with its job store in the service's database.

* Schedules survive restarts: the jobs (and their next run times) live in ``apscheduler_jobs``.
* Missed runs are coalesced: a service that was down over several firings runs the monitor
  once when it is back (``coalesce=True``, no misfire grace limit), which is all a monitor
  needs since a run takes every new row anyway.
* Several processes on one database may each fire the same slot; :meth:`MonitorStore.claim_firing`
  lets exactly one of them create the run, and a per-monitor lease plus the run's
  queued -> running compare-and-set make sure no run is executed twice.
* Monitors created by an API-only replica (``CONTEXTSHIFT_SCHEDULER=off``) are picked up by a
  periodic sync in every scheduling process.
* A tick every few seconds (:meth:`MonitorService.tick`) fails the runs of processes that stopped
  sending heartbeats and drains queued runs; a job of its own retries undelivered webhook
  messages.
* A firing only creates the run and hands it to the service's pool: the scheduler's threads
  never execute runs, so one slow monitor does not hold up the others' firings.
"""
from __future__ import annotations

import hashlib
import logging
import time
from datetime import datetime, timezone
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.base import ConflictingIdError, JobLookupError
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import bindparam, inspect, text
from sqlalchemy.exc import DBAPIError

from service.monitors.definitions import make_trigger
from service.monitors.heartbeat import heartbeat_interval

log = logging.getLogger("contextshift.monitors")
_HOSTS: dict[str, Any] = {}  # database key -> MonitorService of this process
JOB_TABLE = "apscheduler_jobs"


def database_key(url: str) -> str:
    """Jobs name their database by a hash: no URL (nor password) is pickled into the job table."""
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def fire(monitor_id: str, database: str) -> None:
    """The job function APScheduler stores by reference: find this process's service, fire."""
    host = _HOSTS.get(database)
    if host is None:
        log.warning("monitor %s fired but no service for its database runs here", monitor_id)
        return
    host.fire(monitor_id)


class MonitorScheduler:
    def __init__(self, service: Any, *, sync_seconds: float = 30.0) -> None:
        self.service = service
        self.key = database_key(service.runtime.settings.resolved_database_url)
        self.sync_seconds = sync_seconds
        self.scheduler: BackgroundScheduler | None = None  # between start and shutdown

    def start(self) -> None:
        _HOSTS[self.key] = self.service
        jobs = SQLAlchemyJobStore(engine=self.service.runtime.engine, tablename=JOB_TABLE)
        ensure_job_table(jobs.jobs_t, self.service.runtime.engine)
        self.scheduler = scheduler = BackgroundScheduler(
            jobstores={"default": jobs, "local": MemoryJobStore()},
            executors={"default": ThreadPoolExecutor(4)},  # runs go to the pool; a slow webhook pass holds one
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            timezone="UTC")
        scheduler.start()
        self.sync()
        scheduler.add_job(self.sync, "interval", seconds=self.sync_seconds, id="monitor-sync",
                          jobstore="local", replace_existing=True)
        # a few seconds apart: dead processes' runs are failed within a lease, webhooks retried
        tick_s = heartbeat_interval(self.service.lease_s)
        scheduler.add_job(self.service.tick, "interval", seconds=tick_s, id="monitor-tick", jobstore="local",
                          replace_existing=True)
        scheduler.add_job(self.service.deliver_webhooks, "interval", seconds=tick_s, id="monitor-webhooks",
                          jobstore="local", replace_existing=True)

    def _running(self) -> BackgroundScheduler:
        """The APScheduler instance. After shutdown there is none: a late call fails (sync logs it), as before."""
        if self.scheduler is None:
            raise RuntimeError("the monitor scheduler is not running")
        return self.scheduler

    def sync(self) -> None:
        """Every monitor has a job, no job outlives its monitor; queued runs get drained."""
        try:
            monitors = {m.id: m for m in self.service.store.list()}
            jobs = {job.id for job in self._running().get_jobs(jobstore="default")}
            for monitor_id, monitor in monitors.items():
                if monitor_id not in jobs:
                    self.add(monitor_id, monitor.schedule)
            for job_id in jobs - set(monitors):
                self._running().remove_job(job_id, jobstore="default")
            self.service.drain_queued()
        except Exception:  # a passing database fault must not stop the scheduler
            log.exception("monitor schedule sync failed")

    def add(self, monitor_id: str, schedule: dict[str, Any]) -> None:
        try:
            self._running().add_job(fire, make_trigger(schedule), args=[monitor_id, self.key], id=monitor_id,
                                    jobstore="default", name=f"monitor {monitor_id}")
        except ConflictingIdError:  # another process added it a moment ago
            pass

    def remove(self, monitor_id: str) -> None:
        try:
            self._running().remove_job(monitor_id, jobstore="default")
        except JobLookupError:
            pass

    def shutdown(self) -> None:
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=False)
            self.scheduler = None
        if _HOSTS.get(self.key) is self.service:
            del _HOSTS[self.key]


def ensure_job_table(table: Any, engine: Any, *, attempts: int = 5) -> None:
    """Create APScheduler's job table, tolerating another process creating it at the same moment.

    ``SQLAlchemyJobStore.start`` checks then creates, so two processes starting on a fresh database
    can both see no table and one fails with "table already exists"; after this the check finds it.
    """
    for attempt in range(attempts):
        try:
            table.create(engine, checkfirst=True)
            return
        except DBAPIError:
            if inspect(engine).has_table(table.name):
                return
            if attempt == attempts - 1:
                raise
            time.sleep(0.1 * (attempt + 1))


def next_run_time(engine: Any, monitor_id: str) -> datetime | None:
    """Read from the job table itself, so API-only replicas answer too."""
    try:
        with engine.connect() as conn:
            value = conn.execute(text(f"SELECT next_run_time FROM {JOB_TABLE} WHERE id = :id"),
                                 {"id": monitor_id}).scalar()
    except Exception:  # no job table yet: no scheduler has ever run on this database
        return None
    return None if value is None else datetime.fromtimestamp(float(value), tz=timezone.utc)


def next_run_times(engine: Any, monitor_ids: list[str]) -> dict[str, datetime]:
    """:func:`next_run_time` of a page of monitors in one query."""
    if not monitor_ids:
        return {}
    query = text(f"SELECT id, next_run_time FROM {JOB_TABLE} WHERE id IN :ids").bindparams(
        bindparam("ids", expanding=True))
    try:
        with engine.connect() as conn:
            rows = conn.execute(query, {"ids": list(monitor_ids)}).all()
    except Exception:  # no job table yet
        return {}
    return {i: datetime.fromtimestamp(float(v), tz=timezone.utc) for i, v in rows if v is not None}
