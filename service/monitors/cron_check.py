"""A cron schedule must fire: ``0 0 31 2 *`` (31 February) is valid syntax and never runs."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from apscheduler.triggers.cron import CronTrigger

from service.errors import InvalidRequest

HORIZON = timedelta(days=5 * 366)  # a schedule silent this long is a mistake, not a plan
FIELDS = ("minute", "hour", "day", "month", "weekday")


def _fires(cron: str, now: datetime) -> bool:
    first = CronTrigger.from_crontab(cron, timezone="UTC").get_next_fire_time(None, now)
    return first is not None and first - now <= HORIZON


def check_cron_fires(cron: str, *, now: datetime | None = None) -> None:
    """422 ``cron_never_fires`` naming the fields that cannot match together, unless ``cron``
    fires within about five years."""
    now = now or datetime.now(timezone.utc)
    if _fires(cron, now):
        return
    parts = cron.split()
    culprits: list[str] = [name for i, name in enumerate(FIELDS)
                           if parts[i] != "*" and _fires(" ".join(parts[:i] + ["*"] + parts[i + 1:]), now)]
    named = culprits or [n for n, p in zip(FIELDS, parts) if p != "*"]
    fields = ", ".join(f"{n} ({parts[FIELDS.index(n)]})" for n in named)
    raise InvalidRequest(f"Cron expression {cron!r} never fires in the next five years: the fields {fields} "
                         "never match together (e.g. day 31 in February).", code="cron_never_fires",
                         details={"cron": cron, "fields": named})
