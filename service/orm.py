"""The declarative base every table of the service derives from, its one load rule, and the
row ids every resource mints and checks.

SQLite hands back naive datetimes even for ``DateTime(timezone=True)`` columns, so a GET showed
no UTC offset where the POST had one. Every write uses :func:`utcnow`, so every loaded naive
datetime is UTC: the ``load`` hook below attaches it, for every table of every module.
"""
from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any, cast

from sqlalchemy import CursorResult, Result, event
from sqlalchemy.orm import DeclarativeBase

__all__ = ["Base", "utcnow", "as_utc", "new_id", "storable_key", "rowcount"]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def storable_key(key: str) -> bool:
    """False for keys no row can have and PostgreSQL refuses to compare (NUL, over-long)."""
    return "\x00" not in key and len(key) <= 255


def rowcount(result: Result[Any]) -> int:
    """The rows an UPDATE or DELETE matched. ``Session.execute`` is typed to return a plain ``Result``,
    but for those statements it is a ``CursorResult``, the one that counts them."""
    return cast(CursorResult[Any], result).rowcount


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
