"""The declarative base every table of the service derives from, and its one load rule.

SQLite hands back naive datetimes even for ``DateTime(timezone=True)`` columns, so a GET showed
no UTC offset where the POST had one. Every write uses :func:`utcnow`, so every loaded naive
datetime is UTC: the ``load`` hook below attaches it, for every table of every module.
"""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import event
from sqlalchemy.orm import DeclarativeBase

__all__ = ["Base", "utcnow", "as_utc"]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    pass


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
