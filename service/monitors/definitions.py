"""Checks of a monitor definition against the service's settings: every bad one is a 4xx."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from service.datasets.paths import Roots, inside_roots, resolve_dir  # noqa: F401  (one rule for every root check)
from service.errors import InvalidRequest
from service.monitors.cron_check import check_cron_fires
from service.monitors.schemas import DirectorySource, Schedule, SqlSource
from service.monitors.sql_source import check_sql_definition  # one read-only SELECT; warnings on its user
from service.monitors.webhook_targets import check_webhook_url


def resolve_directory(path: str, roots: list[Path]) -> Path:
    """``path`` made absolute with symlinks and ``..`` resolved; it must lie inside one of ``roots``."""
    return resolve_dir(path, Roots(tuple(roots), "CONTEXTSHIFT_MONITOR_ROOTS", "directory_sources_disabled",
                                   "Reading directory sources"))


def check_source(source: DirectorySource | SqlSource, settings: Any) -> dict[str, Any]:
    if isinstance(source, DirectorySource):
        if "/" in source.pattern or ".." in source.pattern or "\x00" in source.pattern:
            raise InvalidRequest("The file pattern must be a plain name pattern such as '*.csv'.",
                                 code="invalid_pattern", details={"pattern": source.pattern})
        resolved = resolve_directory(source.path, list(settings.monitor_roots))
        return {**source.model_dump(), "path": str(resolved)}
    if source.database not in settings.monitor_databases:
        raise InvalidRequest(f"Unknown database {source.database!r}; configured: "
                             f"{sorted(settings.monitor_databases)} (CONTEXTSHIFT_MONITOR_DATABASES).",
                             code="unknown_database", details={"database": source.database})
    return check_sql_definition(source.model_dump(), settings.monitor_databases[source.database])


def make_trigger(schedule: dict[str, Any], *, timezone: str = "UTC") -> Any:
    """The APScheduler trigger of a schedule."""
    if schedule.get("cron"):
        return CronTrigger.from_crontab(schedule["cron"], timezone=timezone)
    return IntervalTrigger(seconds=float(schedule["interval_seconds"]), timezone=timezone)


def check_schedule(schedule: Schedule, min_interval_s: float) -> dict[str, Any]:
    if (schedule.interval_seconds is None) == (schedule.cron is None):
        raise InvalidRequest("Give exactly one of schedule.interval_seconds and schedule.cron.",
                             code="invalid_schedule")
    if schedule.interval_seconds is not None and schedule.interval_seconds < min_interval_s:
        raise InvalidRequest(f"An interval of {schedule.interval_seconds:g} s is below the minimum of "
                             f"{min_interval_s:g} s (CONTEXTSHIFT_MONITOR_MIN_INTERVAL_S).",
                             code="interval_too_short", details={"minimum": min_interval_s})
    if schedule.cron is not None:
        if len(schedule.cron.split()) != 5:
            raise InvalidRequest(f"Cron expression {schedule.cron!r} must have 5 fields "
                                 "(minute hour day month weekday).", code="invalid_cron")
        try:
            make_trigger({"cron": schedule.cron})
        except Exception as exc:  # APScheduler raises several types for bad fields
            raise InvalidRequest(f"Invalid cron expression {schedule.cron!r}: {exc}", code="invalid_cron",
                                 details={"cron": schedule.cron}) from None
        check_cron_fires(schedule.cron)  # valid syntax that never fires, e.g. 31 February
    return schedule.model_dump(exclude_none=True)


def check_webhook(url: str | None, *, allow_private: bool = False) -> None:
    check_webhook_url(url, allow_private=allow_private)  # the target rules: service/monitors/webhook_targets.py


def min_gap_s(schedule: dict[str, Any]) -> float:
    """Half the shortest spacing of the schedule: two firings closer than this are one slot."""
    if schedule.get("interval_seconds"):
        return float(schedule["interval_seconds"]) / 2
    return 30.0  # cron fires at most once a minute
