"""Persistence of audits and their life cycle: queued → running → succeeded | failed.

Several service instances may share one database. Every state change is therefore a
compare-and-set: ``queued → running`` claims the audit for this instance (only one claim
wins), and ``running → succeeded | failed`` or a progress update applies only while the
audit is still ``running`` and owned by this instance. Each instance keeps a heartbeat in
``instances``; recovery fails only the running audits whose owner is gone (stopped, or no
heartbeat within the lease), never those of a live neighbour.
"""
from __future__ import annotations

import builtins
import logging
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.audits.models import AuditRow, InstanceRow
from service.errors import Conflict, NotFound
from service.orm import new_id, rowcount, storable_key
from service.packs.models import DomainPackRow

log = logging.getLogger("contextshift.audits")

INTERRUPTED = {"code": "interrupted",
               "message": "The service stopped while this audit was running; submit it again."}


def _now() -> datetime:
    return datetime.now(timezone.utc)


class AuditStore:
    """Audits in the database, changed only by compare-and-set on (status, owner).

    Parameters
    ----------
    sessions, data_dir
        Database sessions; reports live under ``data_dir / "reports"``.
    instance_id : str, optional
        This process's identity as an audit owner (default: a fresh random id).
    lease_s : float
        An owner whose heartbeat is older than this is considered gone.
    """

    def __init__(self, sessions: sessionmaker[Session], data_dir: Path, *, instance_id: str | None = None,
                 lease_s: float = 60.0) -> None:
        self.sessions = sessions
        self.reports_dir = Path(data_dir) / "reports"
        self.instance_id = instance_id or f"in_{uuid.uuid4().hex}"
        self.lease_s = lease_s

    def create(self, *, benchmark_id: str, production_id: str, domain: str,
               options: dict[str, Any]) -> AuditRow:
        with self.sessions.begin() as s:
            pack = s.get(DomainPackRow, domain) if storable_key(domain) else None
            row = AuditRow(id=new_id("au"), status="queued", benchmark_id=benchmark_id,
                           production_id=production_id, domain=domain, options=options, progress=0.0,
                           stage="queued", created_at=_now(),
                           domain_version=pack.version if pack is not None else None)  # pinned
            s.add(row)
        return row

    def count_queued(self) -> int:
        """Audits waiting to run, over every instance on this database."""
        with self.sessions() as s:
            return s.scalars(select(func.count()).select_from(AuditRow).where(AuditRow.status == "queued")).one()

    def get(self, audit_id: str) -> AuditRow:
        with self.sessions() as s:
            row = s.get(AuditRow, audit_id) if storable_key(audit_id) else None
        if row is None:
            raise NotFound(f"No audit with id {audit_id!r}.", details={"audit": audit_id})
        return row

    def list(self, *, limit: int = 100, offset: int = 0) -> list[AuditRow]:
        with self.sessions() as s:
            query = select(AuditRow).order_by(AuditRow.created_at.desc()).limit(limit).offset(offset)
            return list(s.scalars(query))

    def _swap(self, audit_id: str, conditions: tuple, **values: Any) -> bool:
        with self.sessions.begin() as s:
            result = s.execute(update(AuditRow).where(AuditRow.id == audit_id, *conditions).values(**values))
        return rowcount(result) == 1

    def _owned(self) -> tuple:
        return AuditRow.status == "running", AuditRow.owner == self.instance_id

    def mark_running(self, audit_id: str) -> bool:
        """Claim a queued audit for this instance; False when another claim won."""
        now = _now()
        return self._swap(audit_id, (AuditRow.status == "queued",), status="running", owner=self.instance_id,
                          started_at=now, heartbeat_at=now, stage="loading data", progress=0.0)

    def set_progress(self, audit_id: str, progress: float, stage: str) -> bool:
        return self._swap(audit_id, self._owned(), progress=round(float(progress), 3), stage=stage,
                          heartbeat_at=_now())

    def mark_succeeded(self, audit_id: str, result: dict[str, Any], report_path: str) -> bool:
        done = self._swap(audit_id, self._owned(), status="succeeded", result=result, report_path=report_path,
                          progress=1.0, stage="done", finished_at=_now())
        if not done:
            log.warning("audit %s is no longer ours (recovered elsewhere); result dropped", audit_id)
        return done

    def mark_failed(self, audit_id: str, error: dict[str, Any]) -> bool:
        """Fail an audit still queued, or running under this instance."""
        mine = or_(AuditRow.status == "queued", and_(*self._owned()))
        return self._swap(audit_id, (mine,), status="failed", error=error, stage="failed", finished_at=_now())

    # -- instances and recovery -------------------------------------------------------------

    def register_instance(self) -> None:
        now = _now()
        with self.sessions.begin() as s:
            s.merge(InstanceRow(id=self.instance_id, started_at=now, heartbeat_at=now, stopped_at=None))

    def heartbeat(self) -> None:
        """Renew this instance's lease (and stamp the audits it is running)."""
        now = _now()
        with self.sessions.begin() as s:
            s.execute(update(InstanceRow).where(InstanceRow.id == self.instance_id).values(heartbeat_at=now))
            s.execute(update(AuditRow).where(*self._owned()).values(heartbeat_at=now))

    def stop_instance(self) -> None:
        with self.sessions.begin() as s:
            s.execute(update(InstanceRow).where(InstanceRow.id == self.instance_id).values(stopped_at=_now()))

    def live_instances(self) -> set[str]:
        cutoff = _now() - timedelta(seconds=self.lease_s)
        with self.sessions() as s:
            return set(s.scalars(select(InstanceRow.id).where(InstanceRow.stopped_at.is_(None),
                                                              InstanceRow.heartbeat_at >= cutoff)))

    def recover(self, *, own: bool = True) -> builtins.list[str]:
        """Fail running audits whose owner is gone; return the queued ones to (re-)submit.

        ``own=True`` (start-up) also takes audits recorded under this instance's id: nothing
        of ours can be running before our worker starts.
        """
        live = self.live_instances()
        if own:
            live.discard(self.instance_id)
        with self.sessions() as s:
            running = s.execute(select(AuditRow.id, AuditRow.owner).where(AuditRow.status == "running")).all()
        for audit_id, owner in running:
            if owner in live:
                continue
            same_owner = AuditRow.owner.is_(None) if owner is None else AuditRow.owner == owner
            self._swap(audit_id, (AuditRow.status == "running", same_owner), status="failed",
                       error=INTERRUPTED, stage="failed", finished_at=_now())
        with self.sessions() as s:
            return list(s.scalars(select(AuditRow.id).where(AuditRow.status == "queued")
                                  .order_by(AuditRow.created_at)))

    def delete(self, audit_id: str) -> None:
        with self.sessions.begin() as s:
            row = s.get(AuditRow, audit_id) if storable_key(audit_id) else None
            if row is None:
                raise NotFound(f"No audit with id {audit_id!r}.", details={"audit": audit_id})
            s.delete(row)
        for suffix in (".html", ".md", ".evidently.html", ".next-round.csv", ".next-round.jsonl"):
            (self.reports_dir / f"{audit_id}{suffix}").unlink(missing_ok=True)


def check_no_audit_uses(s: Session, dataset_id: str) -> None:
    """Conflict while an audit still uses the dataset (run by the dataset store before a delete)."""
    used = s.scalars(select(AuditRow.id).where(or_(AuditRow.benchmark_id == dataset_id,
                                                   AuditRow.production_id == dataset_id))).first()
    if used:
        raise Conflict(f"Dataset {dataset_id!r} is used by audit {used!r}; delete the audit first.",
                       details={"dataset": dataset_id, "audit": used})
