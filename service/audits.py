"""Persistence of audits and their life cycle: queued → running → succeeded | failed."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from service.errors import NotFound
from service.models import AuditRow
from service.store import new_id

INTERRUPTED = {"code": "interrupted",
               "message": "The service stopped while this audit was running; submit it again."}


def _now() -> datetime:
    return datetime.now(timezone.utc)


class AuditStore:
    def __init__(self, sessions: sessionmaker[Session], data_dir: Path) -> None:
        self.sessions = sessions
        self.reports_dir = Path(data_dir) / "reports"

    def create(self, *, benchmark_id: str, production_id: str, domain: str,
               options: dict[str, Any]) -> AuditRow:
        row = AuditRow(id=new_id("au"), status="queued", benchmark_id=benchmark_id,
                       production_id=production_id, domain=domain, options=options, progress=0.0,
                       stage="queued", created_at=_now())
        with self.sessions.begin() as s:
            s.add(row)
        return row

    def get(self, audit_id: str) -> AuditRow:
        with self.sessions() as s:
            row = s.get(AuditRow, audit_id)
        if row is None:
            raise NotFound(f"No audit with id {audit_id!r}.", details={"audit": audit_id})
        return row

    def list(self, *, limit: int = 100, offset: int = 0) -> list[AuditRow]:
        with self.sessions() as s:
            query = select(AuditRow).order_by(AuditRow.created_at.desc()).limit(limit).offset(offset)
            return list(s.scalars(query))

    def _update(self, audit_id: str, **values: Any) -> None:
        with self.sessions.begin() as s:
            s.execute(update(AuditRow).where(AuditRow.id == audit_id).values(**values))

    def mark_running(self, audit_id: str) -> None:
        self._update(audit_id, status="running", started_at=_now(), stage="loading data", progress=0.0)

    def set_progress(self, audit_id: str, progress: float, stage: str) -> None:
        self._update(audit_id, progress=round(float(progress), 3), stage=stage)

    def mark_succeeded(self, audit_id: str, result: dict[str, Any], report_path: str) -> None:
        self._update(audit_id, status="succeeded", result=result, report_path=report_path,
                     progress=1.0, stage="done", finished_at=_now())

    def mark_failed(self, audit_id: str, error: dict[str, Any]) -> None:
        self._update(audit_id, status="failed", error=error, stage="failed", finished_at=_now())

    def recover(self) -> list[str]:
        """After a restart: fail audits left running; return queued ones to re-submit."""
        with self.sessions.begin() as s:
            s.execute(update(AuditRow).where(AuditRow.status == "running")
                      .values(status="failed", error=INTERRUPTED, stage="failed", finished_at=_now()))
            return list(s.scalars(select(AuditRow.id).where(AuditRow.status == "queued")
                                  .order_by(AuditRow.created_at)))

    def delete(self, audit_id: str) -> None:
        with self.sessions.begin() as s:
            row = s.get(AuditRow, audit_id)
            if row is None:
                raise NotFound(f"No audit with id {audit_id!r}.", details={"audit": audit_id})
            s.delete(row)
        for suffix in (".html", ".md", ".evidently.html", ".next-round.csv", ".next-round.jsonl"):
            (self.reports_dir / f"{audit_id}{suffix}").unlink(missing_ok=True)
