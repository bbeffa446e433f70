"""SQLAlchemy tables of custom domain packs and every version they had (created by the Alembic
migrations in ``service/migrations``)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from service.orm import Base, utcnow

__all__ = ["DomainPackRow", "DomainPackVersionRow"]


class DomainPackRow(Base):
    """A user-supplied domain pack, stored as the YAML it was posted as."""

    __tablename__ = "domain_packs"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    yaml: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    retired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class DomainPackVersionRow(Base):
    """Every version a custom pack ever had; audits name the version they used."""

    __tablename__ = "domain_pack_versions"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    yaml: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
