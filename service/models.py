"""SQLAlchemy 2 tables of datasets, audits, domain packs and service instances.

Alembic migrations in ``service/migrations`` create them; :mod:`service.tables` gathers every
resource's tables into one metadata.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from service.orm import Base, as_utc, utcnow

__all__ = ["Base", "utcnow", "as_utc", "DatasetRow", "AuditRow", "DomainPackRow", "DomainPackVersionRow", "InstanceRow"]


class DatasetRow(Base):
    __tablename__ = "datasets"
    __table_args__ = (Index("uq_datasets_name_sha256", "name", "sha256", unique=True),)  # idempotent uploads

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), index=True)
    role: Mapped[str] = mapped_column(String(16))
    domain: Mapped[str | None] = mapped_column(String(64), nullable=True)
    n_rows: Mapped[int] = mapped_column(Integer)
    n_columns: Mapped[int] = mapped_column(Integer)
    columns: Mapped[list] = mapped_column(JSON)
    validation: Mapped[dict] = mapped_column(JSON)
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    path: Mapped[str] = mapped_column(Text)  # under data_dir if copied; the resolved dir or glob if registered
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    storage: Mapped[str] = mapped_column(String(16), default="copied", server_default="copied")
    n_partitions: Mapped[int] = mapped_column(Integer, default=1, server_default="1")


class AuditRow(Base):
    __tablename__ = "audits"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    benchmark_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="RESTRICT"))
    production_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="RESTRICT"))
    domain: Mapped[str] = mapped_column(String(64))
    options: Mapped[dict] = mapped_column(JSON, default=dict)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    stage: Mapped[str | None] = mapped_column(String(64), nullable=True)
    result: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    error: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    report_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    owner: Mapped[str | None] = mapped_column(String(64), nullable=True)  # instance running it
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    domain_version: Mapped[int | None] = mapped_column(Integer, nullable=True)


class DomainPackRow(Base):
    """A user-supplied domain pack, stored as the YAML it was posted as."""

    __tablename__ = "domain_packs"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    yaml: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    retired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


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
