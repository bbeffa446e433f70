"""Persistence of monitors, runs, taken files, alerts and deliveries, with the compare-and-set
steps that keep two service processes on one database from firing or executing a run twice."""
from __future__ import annotations

import builtins
import os
import socket
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.errors import Conflict, NotFound
from service.monitors.models import AlertRow, DeliveryRow, MonitorFileRow, MonitorRow, MonitorRunRow, OutboxRow
from service.orm import new_id, rowcount, storable_key

WORKER_ID = f"{socket.gethostname()[:40]}:{os.getpid()}"
INTERRUPTED = {"code": "interrupted", "message": "The service stopped during this run; the next run takes its rows "
               "only if they were not recorded as taken.", "details": {}}


OPEN_RUN = ("queued", "running")  # a run in any other status has ended


class _NotRunning(Exception):
    """Aborts a finish_run or save_run transaction whose run has already ended."""


def now() -> datetime:
    return datetime.now(timezone.utc)


class MonitorStore:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    # -- monitors -----------------------------------------------------------------------------
    def create(self, **values: Any) -> MonitorRow:
        row = MonitorRow(id=new_id("mo"), n_tested=0, alpha_spent=0.0, detector_state={}, created_at=now(), **values)
        with self.sessions.begin() as s:
            s.add(row)
        return row

    def get(self, monitor_id: str) -> MonitorRow:
        with self.sessions() as s:
            row = s.get(MonitorRow, monitor_id) if storable_key(monitor_id) else None
        if row is None:
            raise NotFound(f"No monitor with id {monitor_id!r}.", details={"monitor": monitor_id})
        return row

    def list(self, *, limit: int | None = None, offset: int = 0) -> builtins.list[MonitorRow]:
        query = select(MonitorRow).order_by(MonitorRow.created_at, MonitorRow.id).offset(offset)
        with self.sessions() as s:
            return list(s.scalars(query if limit is None else query.limit(limit)))

    def delete(self, monitor_id: str) -> None:
        self.get(monitor_id)
        with self.sessions.begin() as s:
            for table in (DeliveryRow, OutboxRow, AlertRow, MonitorFileRow, MonitorRunRow):
                s.execute(delete(table).where(table.monitor_id == monitor_id))
            if rowcount(s.execute(delete(MonitorRow).where(MonitorRow.id == monitor_id))) == 0:
                raise NotFound(f"No monitor with id {monitor_id!r}.", details={"monitor": monitor_id})

    def update(self, monitor_id: str, **values: Any) -> None:
        with self.sessions.begin() as s:
            s.execute(update(MonitorRow).where(MonitorRow.id == monitor_id).values(**values))

    def claim_firing(self, monitor_id: str, at: datetime, min_gap_s: float) -> bool:
        """One schedule slot fires once: only the process whose update moves ``last_fired_at`` wins."""
        cutoff = at - timedelta(seconds=min_gap_s)
        with self.sessions.begin() as s:
            done = s.execute(update(MonitorRow).where(
                MonitorRow.id == monitor_id,
                or_(MonitorRow.last_fired_at.is_(None), MonitorRow.last_fired_at <= cutoff))
                .values(last_fired_at=at))
        return rowcount(done) == 1

    def acquire_lease(self, monitor_id: str, seconds: float, owner: str = WORKER_ID) -> bool:
        """At most one process runs a monitor at a time (its source hands out each row once)."""
        t = now()
        with self.sessions.begin() as s:
            done = s.execute(update(MonitorRow).where(
                MonitorRow.id == monitor_id,
                or_(MonitorRow.lease_owner.is_(None), MonitorRow.lease_until < t, MonitorRow.lease_owner == owner))
                .values(lease_owner=owner, lease_until=t + timedelta(seconds=seconds)))
        return rowcount(done) == 1

    def release_lease(self, monitor_id: str, owner: str = WORKER_ID) -> None:
        with self.sessions.begin() as s:
            s.execute(update(MonitorRow).where(MonitorRow.id == monitor_id, MonitorRow.lease_owner == owner)
                      .values(lease_owner=None, lease_until=None))

    # -- runs ---------------------------------------------------------------------------------
    def create_run(self, monitor_id: str, trigger: str) -> MonitorRunRow:
        row = MonitorRunRow(id=new_id("run"), monitor_id=monitor_id, status="queued", trigger=trigger,
                            alert_ids=[], created_at=now())
        with self.sessions.begin() as s:
            s.add(row)
        return row

    def claim_run(self, run_id: str, owner: str = WORKER_ID) -> bool:
        """queued -> running, for exactly one caller."""
        with self.sessions.begin() as s:
            done = s.execute(update(MonitorRunRow).where(MonitorRunRow.id == run_id, MonitorRunRow.status == "queued")
                             .values(status="running", started_at=now(), heartbeat_at=now(), executed_by=owner))
        return rowcount(done) == 1

    def heartbeat(self, lease_s: float, owner: str = WORKER_ID) -> int:
        """This process is alive: its running runs' heartbeats and its monitor leases move on."""
        t = now()
        with self.sessions.begin() as s:
            done = s.execute(update(MonitorRunRow).where(MonitorRunRow.status == "running",
                                                         MonitorRunRow.executed_by == owner)
                             .values(heartbeat_at=t))
            s.execute(update(MonitorRow).where(MonitorRow.lease_owner == owner)
                      .values(lease_until=t + timedelta(seconds=lease_s)))
        return rowcount(done)

    def finish_run(self, run_id: str, status: str, **values: Any) -> bool:
        """running -> final; False when the run was already ended (e.g. marked interrupted).

        A no-data run right after another no-data run of its monitor takes that run's place: the
        older row is deleted and its count carried over, so an idle monitor keeps one row, not one
        per check.
        """
        try:
            with self.sessions.begin() as s:
                done = s.execute(update(MonitorRunRow).where(MonitorRunRow.id == run_id,
                                                             MonitorRunRow.status == "running")
                                 .values(status=status, finished_at=now(), **values))
                if rowcount(done) != 1:
                    raise _NotRunning
                if status == "no_new_data":
                    run = s.get(MonitorRunRow, run_id)
                    assert run is not None  # the update above matched it, in this transaction
                    self._compact(s, run)
        except _NotRunning:
            return False
        return True

    @staticmethod
    def _compact(s: Session, run: MonitorRunRow) -> None:
        previous = s.scalars(select(MonitorRunRow).where(
            MonitorRunRow.monitor_id == run.monitor_id, MonitorRunRow.id != run.id,
            MonitorRunRow.status.notin_(("queued", "running"))).order_by(MonitorRunRow.finished_at.desc())
            .limit(1)).first()
        run.no_data_count, run.no_data_since = 1, run.started_at or run.created_at
        if previous is not None and previous.status == "no_new_data":
            run.no_data_count = (previous.no_data_count or 1) + 1
            run.no_data_since = previous.no_data_since or previous.started_at or previous.created_at
            s.delete(previous)

    def interrupt_own(self, owner: str = WORKER_ID) -> int:
        """At shutdown: this process's running runs are ended as :meth:`recover` ends them, and its
        leases released; returns how many runs were failed as interrupted."""
        with self.sessions.begin() as s:
            interrupted = _end_stopped(s, MonitorRunRow.executed_by == owner, now())
            s.execute(update(MonitorRow).where(MonitorRow.lease_owner == owner).values(lease_owner=None,
                                                                                      lease_until=None))
        return interrupted

    def update_run(self, run_id: str, **values: Any) -> None:
        with self.sessions.begin() as s:
            s.execute(update(MonitorRunRow).where(MonitorRunRow.id == run_id).values(**values))

    def get_run(self, run_id: str) -> MonitorRunRow:
        with self.sessions() as s:
            row = s.get(MonitorRunRow, run_id) if storable_key(run_id) else None
        if row is None:
            raise NotFound(f"No monitor run with id {run_id!r}.", details={"run": run_id})
        return row

    def runs(self, monitor_id: str, *, status: str | None = None,
             limit: int = 1000) -> builtins.list[MonitorRunRow]:
        query = select(MonitorRunRow).where(MonitorRunRow.monitor_id == monitor_id)
        if status:
            query = query.where(MonitorRunRow.status == status)
        with self.sessions() as s:
            return list(s.scalars(query.order_by(MonitorRunRow.created_at.desc()).limit(limit)))

    def last_runs(self, monitor_ids: builtins.list[str]) -> dict[str, MonitorRunRow]:
        """The newest run of each monitor, in one query (a page of monitors)."""
        if not monitor_ids:
            return {}
        newest = (select(MonitorRunRow.monitor_id, func.max(MonitorRunRow.created_at).label("at"))
                  .where(MonitorRunRow.monitor_id.in_(monitor_ids)).group_by(MonitorRunRow.monitor_id).subquery())
        query = select(MonitorRunRow).join(newest, (MonitorRunRow.monitor_id == newest.c.monitor_id)
                                           & (MonitorRunRow.created_at == newest.c.at))
        with self.sessions() as s:
            return {r.monitor_id: r for r in s.scalars(query)}

    def open_alerts(self, monitor_ids: builtins.list[str]) -> dict[str, builtins.list[AlertRow]]:
        out: dict[str, builtins.list[AlertRow]] = {m: [] for m in monitor_ids}
        if not monitor_ids:
            return out
        with self.sessions() as s:
            for row in s.scalars(select(AlertRow).where(AlertRow.monitor_id.in_(monitor_ids), AlertRow.state == "open")
                                 .order_by(AlertRow.created_at, AlertRow.id)):
                out[row.monitor_id].append(row)
        return out

    def queued_monitors(self) -> builtins.list[str]:
        with self.sessions() as s:
            return list(s.scalars(select(MonitorRunRow.monitor_id).where(MonitorRunRow.status == "queued")
                                  .distinct()))

    def all_runs(self) -> builtins.list[MonitorRunRow]:
        with self.sessions() as s:
            return list(s.scalars(select(MonitorRunRow)))

    def recover(self, lease_s: float) -> int:
        """Runs left ``running`` by a process that died are failed as interrupted (those whose
        decisions were saved are finished as ``succeeded``: :func:`_end_stopped`); returns how many
        were failed.

        Dead means: no heartbeat (or, before the first one, no start) for ``lease_s``, or the
        monitor's lease expired. Any live instance calls this on each scheduler tick, so a killed
        process blocks its monitors for about one lease, not until something restarts.
        """
        t = now()
        stale = t - timedelta(seconds=lease_s)
        with self.sessions.begin() as s:
            dead = select(MonitorRow.id).where(or_(MonitorRow.lease_owner.is_(None), MonitorRow.lease_until < t))
            silent = or_(MonitorRunRow.heartbeat_at < stale,
                         (MonitorRunRow.heartbeat_at.is_(None)) & (MonitorRunRow.started_at < stale))
            return _end_stopped(s, or_(MonitorRunRow.monitor_id.in_(dead), silent), t)

    # -- directory files ----------------------------------------------------------------------
    def taken_files(self, monitor_id: str) -> set[tuple[str, str]]:
        with self.sessions() as s:
            rows = s.execute(select(MonitorFileRow.path, MonitorFileRow.sha256)
                             .where(MonitorFileRow.monitor_id == monitor_id))
            return {(p, h) for p, h in rows}

    def record_files(self, monitor_id: str, run_id: str, files: builtins.list[tuple[str, str]]) -> None:
        try:
            with self.sessions.begin() as s:
                s.add_all([MonitorFileRow(monitor_id=monitor_id, path=p, sha256=h, run_id=run_id, taken_at=now())
                           for p, h in files])
        except IntegrityError:  # another process took them first: the lease makes this a bug, say so
            raise RuntimeError("files already taken by another run of this monitor") from None

    def save_run(self, monitor_id: str, run_id: str, *, files: builtins.list[tuple[str, str]], monitor: dict[str, Any],
                 run: dict[str, Any], alerts: builtins.list[AlertRow], messages: Sequence[OutboxRow] = ()) -> None:
        """What a run that audited decided, in one transaction: the files it took, the monitor's detector
        state and counters (``monitor``), the run's summary and audit (``run``), its alerts and their
        webhook messages. A process killed before the commit leaves none of it, so the next run takes
        the same rows from the same detector state and decides alike; after the commit none of it is
        lost, and a run killed before it is marked finished is finished as ``succeeded`` by recovery.

        A run already ended elsewhere (recovery failed it as interrupted, so another process may hold
        the monitor now) saves nothing: :class:`~service.errors.Conflict` (``run_ended``)."""
        try:
            with self.sessions.begin() as s:
                done = s.execute(update(MonitorRunRow).where(MonitorRunRow.id == run_id,
                                                             MonitorRunRow.status.in_(OPEN_RUN)).values(**run))
                if rowcount(done) != 1:
                    raise _NotRunning
                s.add_all([MonitorFileRow(monitor_id=monitor_id, path=p, sha256=h, run_id=run_id, taken_at=now())
                           for p, h in files])
                s.flush()  # files another run took fail here, before anything else is written
                s.execute(update(MonitorRow).where(MonitorRow.id == monitor_id).values(**monitor))
                for row in alerts:
                    s.merge(row)
                s.add_all(list(messages))
        except IntegrityError:  # another process took them first: the lease makes this a bug, say so
            raise RuntimeError("files already taken by another run of this monitor") from None
        except _NotRunning:
            raise Conflict(f"Monitor run {run_id!r} was ended (failed as interrupted) before its decisions were "
                           "saved; none of them was stored, and the next run takes its rows.", code="run_ended",
                           details={"run": run_id}) from None

    def run_open(self, run_id: str) -> bool:
        """The run has not ended yet (queued or running)."""
        with self.sessions() as s:
            return s.scalar(select(MonitorRunRow.status).where(MonitorRunRow.id == run_id)) in OPEN_RUN

    # -- alerts -------------------------------------------------------------------------------
    def alerts(self, *, monitor_id: str | None = None, state: str | None = None,
               states: tuple[str, ...] | None = None, limit: int | None = None,
               offset: int = 0) -> builtins.list[AlertRow]:
        query = select(AlertRow)
        if monitor_id and not storable_key(monitor_id):
            return []
        if monitor_id:
            query = query.where(AlertRow.monitor_id == monitor_id)
        if state:
            query = query.where(AlertRow.state == state)
        if states:
            query = query.where(AlertRow.state.in_(states))
        query = query.order_by(AlertRow.created_at, AlertRow.id).offset(offset)
        with self.sessions() as s:
            return list(s.scalars(query if limit is None else query.limit(limit)))

    def get_alert(self, alert_id: str) -> AlertRow:
        with self.sessions() as s:
            row = s.get(AlertRow, alert_id) if storable_key(alert_id) else None
        if row is None:
            raise NotFound(f"No alert with id {alert_id!r}.", details={"alert": alert_id})
        return row

    def save_alerts(self, rows: builtins.list[AlertRow], messages: Sequence[OutboxRow] = ()) -> None:
        """The alerts and the webhook messages announcing them, in one transaction."""
        with self.sessions.begin() as s:
            for row in rows:
                s.merge(row)
            s.add_all(list(messages))

    def set_alert_state(self, alert_id: str, state: str) -> AlertRow:
        self.get_alert(alert_id)
        stamp = {"acknowledged": "acknowledged_at", "resolved": "resolved_at"}[state]
        with self.sessions.begin() as s:
            s.execute(update(AlertRow).where(AlertRow.id == alert_id).values(state=state, **{stamp: now()}))
        return self.get_alert(alert_id)

    def record_delivery(self, **values: Any) -> None:
        with self.sessions.begin() as s:
            s.add(DeliveryRow(at=now(), **values))

    def deliveries(self, monitor_id: str) -> builtins.list[DeliveryRow]:
        with self.sessions() as s:
            return list(s.scalars(select(DeliveryRow).where(DeliveryRow.monitor_id == monitor_id)
                                  .order_by(DeliveryRow.id)))


def _end_stopped(s: Session, stopped: Any, t: datetime) -> int:
    """End the running runs ``stopped`` selects, whose process stopped; returns how many were failed.

    A run whose decisions were saved (:meth:`MonitorStore.save_run`, the only writer of a run's
    ``audit_id``) has finished although its process stopped before marking it (e.g. while its
    webhooks were being sent): it is ``succeeded``, with its alerts; the others are interrupted."""
    running = (MonitorRunRow.status == "running", stopped)
    s.execute(update(MonitorRunRow).where(*running, MonitorRunRow.audit_id.is_not(None))
              .values(status="succeeded", finished_at=t))
    return rowcount(s.execute(update(MonitorRunRow).where(*running).values(status="failed", finished_at=t,
                                                                           error=INTERRUPTED)))


def check_no_monitor_uses(s: Session, dataset_id: str) -> None:
    """Conflict while a monitor audits against the dataset (run by the dataset store before a delete)."""
    monitor = s.scalars(select(MonitorRow.id).where(MonitorRow.benchmark_id == dataset_id)).first()
    if monitor is not None:
        raise Conflict(f"Dataset {dataset_id!r} is the benchmark of monitor {monitor!r}; delete the monitor "
                       "first.", details={"dataset": dataset_id, "monitor": monitor})
