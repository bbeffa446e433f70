"""Tables of benchmark series and their rounds; migration ``0005``."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from service.orm import Base, utcnow


class BenchmarkSeriesRow(Base):
    """A named series of rounds; created by its first round, which fixes its domain."""

    __tablename__ = "benchmark_series"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    domain: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class BenchmarkRoundRow(Base):
    """One labelled dataset registered as round ``number`` of a series."""

    __tablename__ = "benchmark_rounds"
    __table_args__ = (UniqueConstraint("series", "number", name="uq_benchmark_rounds_series_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    series: Mapped[str] = mapped_column(ForeignKey("benchmark_series.name", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("datasets.id", ondelete="RESTRICT"))
    # the audit whose next-round plan this round answers; kept as text so deleting the audit
    # does not rewrite the round's history
    plan_audit_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    model: Mapped[str | None] = mapped_column(String(128), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
