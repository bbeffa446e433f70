"""SQLAlchemy table of stored datasets (created by the Alembic migrations in ``service/migrations``)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from service.orm import Base, utcnow

__all__ = ["DatasetRow"]


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
