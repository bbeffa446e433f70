"""Tables of scheduled monitoring: monitors, their runs, the files they took, alerts, webhook messages
(the outbox) and their delivery attempts.

APScheduler keeps its own ``apscheduler_jobs`` table (created by its job store); these tables hold
everything the service itself needs, so a monitor works the same from cron without the scheduler.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from service.orm import Base, utcnow


class MonitorRow(Base):
    __tablename__ = "monitors"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    benchmark_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="RESTRICT"))
    domain: Mapped[str] = mapped_column(String(64))
    source: Mapped[dict] = mapped_column(JSON)
    schedule: Mapped[dict] = mapped_column(JSON)
    options: Mapped[dict] = mapped_column(JSON, default=dict)
    alerts: Mapped[dict] = mapped_column(JSON, default=dict)
    alpha: Mapped[float] = mapped_column(Float, default=0.05)
    # What the source has already handed over (SQL: the timestamp watermark, as ISO text or number).
    watermark: Mapped[str | None] = mapped_column(Text, nullable=True)
    n_tested: Mapped[int] = mapped_column(Integer, default=0)  # runs that spent part of the budget
    alpha_spent: Mapped[float] = mapped_column(Float, default=0.0)
    detector_state: Mapped[dict] = mapped_column(JSON, default=dict)  # the e-detectors' evidence (decide.py)
    # Compare-and-set guards: one process fires a schedule slot, one process runs at a time.
    last_fired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    lease_owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class MonitorRunRow(Base):
    __tablename__ = "monitor_runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    monitor_id: Mapped[str] = mapped_column(ForeignKey("monitors.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    trigger: Mapped[str] = mapped_column(String(16))  # schedule | manual | cli
    executed_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    n_rows: Mapped[int | None] = mapped_column(Integer, nullable=True)
    audit_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    alpha: Mapped[float | None] = mapped_column(Float, nullable=True)
    verdict: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    summary: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # trend numbers for the report
    alert_ids: Mapped[list] = mapped_column(JSON, default=list)
    error: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # Refreshed every few seconds by the process executing the run: a stale one means it died.
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # Consecutive no-data runs are one row: how many it stands for, and when the first was.
    no_data_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    no_data_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class MonitorFileRow(Base):
    """A file a directory monitor has taken; the same path with new content is a new file."""

    __tablename__ = "monitor_files"
    __table_args__ = (UniqueConstraint("monitor_id", "path", "sha256", name="uq_monitor_file"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    monitor_id: Mapped[str] = mapped_column(ForeignKey("monitors.id", ondelete="CASCADE"), index=True)
    path: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))
    run_id: Mapped[str] = mapped_column(String(32))
    taken_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class AlertRow(Base):
    __tablename__ = "alerts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    monitor_id: Mapped[str] = mapped_column(ForeignKey("monitors.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(64))
    severity: Mapped[str] = mapped_column(String(16))
    statement: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), index=True)  # open | acknowledged | resolved
    opened_run_id: Mapped[str] = mapped_column(String(32))
    last_seen_run_id: Mapped[str] = mapped_column(String(32))
    missed_runs: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    acknowledged_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class DeliveryRow(Base):
    """One attempt to deliver one webhook message."""

    __tablename__ = "alert_deliveries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    monitor_id: Mapped[str] = mapped_column(ForeignKey("monitors.id", ondelete="CASCADE"), index=True)
    run_id: Mapped[str] = mapped_column(String(32))
    event: Mapped[str] = mapped_column(String(16))  # opened | resolved
    attempt: Mapped[int] = mapped_column(Integer)
    ok: Mapped[bool] = mapped_column(Boolean)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class OutboxRow(Base):
    """One webhook message to deliver, kept until it is delivered (or refused by its receiver).

    Written with the alerts it announces, so an alert opened while the receiver is down, or while
    its URL does not pass the target checks, is delivered by a later pass instead of being lost.
    """

    __tablename__ = "alert_outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    monitor_id: Mapped[str] = mapped_column(ForeignKey("monitors.id", ondelete="CASCADE"), index=True)
    run_id: Mapped[str] = mapped_column(String(32))
    event: Mapped[str] = mapped_column(String(16))  # opened | resolved
    alert_ids: Mapped[list] = mapped_column(JSON, default=list)
    body: Mapped[dict] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), index=True)  # pending | delivered | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True, index=True)
    # compare-and-set claim, so two instances never send one message at the same time
    claimed_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
