"""Request and response bodies of the monitor and alert routes."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Union

from pydantic import BaseModel, Field, model_validator

from audit.options import AuditOptions

Severity = Literal["low", "medium", "high"]
RunStatus = Literal["queued", "running", "succeeded", "failed", "no_new_data"]
AlertState = Literal["open", "acknowledged", "resolved"]


class DirectorySource(BaseModel):
    model_config = {"extra": "forbid"}

    type: Literal["directory"]
    path: str = Field(min_length=1, max_length=4096)
    pattern: str = Field(default="*.csv", min_length=1, max_length=255)


class SqlSource(BaseModel):
    model_config = {"extra": "forbid"}

    type: Literal["sql"]
    database: str = Field(min_length=1, max_length=64, description="A key of CONTEXTSHIFT_MONITOR_DATABASES.")
    query: str = Field(min_length=1, max_length=20_000)
    timestamp_column: str = Field(min_length=1, max_length=255)


Source = Union[DirectorySource, SqlSource]


class Schedule(BaseModel):
    model_config = {"extra": "forbid"}

    interval_seconds: float | None = Field(default=None, gt=0, le=366 * 86400)
    cron: str | None = Field(default=None, max_length=255, description="Five fields: minute hour day month weekday.")


class AlertSettings(BaseModel):
    model_config = {"extra": "forbid"}

    webhook: str | None = Field(default=None, max_length=2048)
    min_severity: Severity = "medium"


class MonitorOptions(AuditOptions):
    """Audit options plus the monitor's own: ``alpha`` is the false-alarm budget of its whole life."""

    harm_tolerance: float = Field(default=0.05, ge=0, lt=1,
                                  description="Alert on harm when production is worse than this.")


class MonitorCreate(BaseModel):
    model_config = {"extra": "forbid"}

    name: str = Field(min_length=1, max_length=255)
    benchmark: str = Field(min_length=1, max_length=64)
    domain: str = Field(default="generic", min_length=1, max_length=64)
    source: Source = Field(discriminator="type")
    schedule: Schedule
    options: MonitorOptions = Field(default_factory=MonitorOptions)
    alerts: AlertSettings = Field(default_factory=AlertSettings)


class Budget(BaseModel):
    alpha: float
    spent: float = Field(description="What the audits' fixed per-run level used over the last 52 tested runs "
                                     "(at most alpha/4); the e-detectors' shares are held by their thresholds.")
    runs_tested: int
    next_run_alpha: float
    method: str
    guarantee: str = ""
    arl_runs: float = Field(0.0, description="The guaranteed average run length to a false alert: 52/alpha.")
    measured: str = Field("", description="What the guarantee and the detectors' delays measured on real tables.")


class AlertOut(BaseModel):
    id: str
    monitor_id: str
    key: str
    kind: str
    severity: str
    statement: str
    state: AlertState
    opened_run_id: str
    last_seen_run_id: str
    created_at: datetime
    last_seen: datetime
    acknowledged_at: datetime | None = None
    resolved_at: datetime | None = None

    @classmethod
    def from_row(cls, row: Any) -> "AlertOut":
        return cls.model_validate(row, from_attributes=True)


class AlertList(BaseModel):
    items: list[AlertOut]


class RunOut(BaseModel):
    id: str
    monitor_id: str
    status: RunStatus
    trigger: str
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    n_rows: int | None = None
    audit_id: str | None = None
    alpha: float | None = None
    verdict: dict[str, Any] | None = None
    alerts: list[str] = Field(default_factory=list)
    error: dict[str, Any] | None = None
    no_data_runs: int | None = Field(default=None, description="A no-data row stands for this many consecutive "
                                     "no-data runs (one row is kept, not one per check).")
    no_data_since: datetime | None = None

    @classmethod
    def from_row(cls, row: Any) -> "RunOut":
        return cls(id=row.id, monitor_id=row.monitor_id, status=row.status, trigger=row.trigger,
                   created_at=row.created_at, started_at=row.started_at, finished_at=row.finished_at,
                   n_rows=row.n_rows, audit_id=row.audit_id, alpha=row.alpha, verdict=row.verdict,
                   alerts=list(row.alert_ids or []), error=row.error, no_data_runs=row.no_data_count,
                   no_data_since=row.no_data_since)


class RunList(BaseModel):
    items: list[RunOut]


class RunAccepted(BaseModel):
    run_id: str
    status: RunStatus


class MonitorOut(BaseModel):
    id: str
    name: str
    benchmark: str
    domain: str
    source: dict[str, Any]
    schedule: dict[str, Any]
    options: dict[str, Any]
    alerts: dict[str, Any]
    created_at: datetime
    next_run_time: datetime | None = None
    last_run: RunOut | None = None
    open_alerts: list[AlertOut] = Field(default_factory=list)
    budget: Budget
    source_warnings: list[str] = Field(default_factory=list, description="What is unsafe about the source, "
                                       "e.g. a SQL source whose database user is a superuser or can write.")

    @model_validator(mode="before")
    @classmethod
    def _warnings_of_source(cls, data: Any) -> Any:
        # stored with the source at definition (sql_source.check_sql_definition), shown beside it
        if isinstance(data, dict) and isinstance(data.get("source"), dict) and "warnings" in data["source"]:
            source = dict(data["source"])
            data = {**data, "source": source, "source_warnings": list(source.pop("warnings") or [])}
        return data


class MonitorList(BaseModel):
    items: list[MonitorOut]
