"""Tables of the hardening work: service instances (audit leases) and domain pack versions.

Also: SQLite hands back naive datetimes even for ``DateTime(timezone=True)`` columns, so a
GET showed no UTC offset where the POST had one. Every loaded row gets UTC attached here.
"""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import DateTime, Integer, String, Text, event
from sqlalchemy.orm import Mapped, mapped_column

from service.models import Base, utcnow


class InstanceRow(Base):
    """One running service process; its heartbeat is the lease on the audits it owns."""

    __tablename__ = "instances"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    stopped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class DomainPackVersionRow(Base):
    """Every version a custom pack ever had; audits name the version they used."""

    __tablename__ = "domain_pack_versions"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    yaml: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


def as_utc(value: datetime | None) -> datetime | None:
    """Naive datetimes from the database are UTC (all writes use ``utcnow``)."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


@event.listens_for(Base, "load", propagate=True)
def _utc_on_load(target, _context) -> None:
    state = target.__dict__  # written directly: not a change the session should flush
    for key, value in list(state.items()):
        if isinstance(value, datetime) and value.tzinfo is None:
            state[key] = value.replace(tzinfo=timezone.utc)
