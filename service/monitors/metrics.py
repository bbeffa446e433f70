"""Prometheus metrics, computed from the database at scrape time (so every replica reports the same).

One :class:`prometheus_client.CollectorRegistry` per app, so several apps in one process (tests)
never collide in the library's global registry.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import func, select

from service.audits.models import AuditRow
from service.monitors.models import AlertRow, MonitorRow, MonitorRunRow, OutboxRow


class ServiceCollector:
    def __init__(self, sessions: Any) -> None:
        self.sessions = sessions

    def collect(self):
        with self.sessions() as s:
            audits = s.execute(select(AuditRow.status, func.count()).group_by(AuditRow.status)).all()
            # a compacted no-data row stands for no_data_count runs
            runs = s.execute(select(MonitorRunRow.monitor_id, MonitorRunRow.status,
                                    func.sum(func.coalesce(MonitorRunRow.no_data_count, 1)))
                             .group_by(MonitorRunRow.monitor_id, MonitorRunRow.status)).all()
            alerts = s.execute(select(AlertRow.severity, AlertRow.state, func.count())
                               .group_by(AlertRow.severity, AlertRow.state)).all()
            messages = s.execute(select(OutboxRow.state, func.count()).group_by(OutboxRow.state)).all()
            monitors = list(s.scalars(select(MonitorRow)))
            last_ok = dict(s.execute(select(MonitorRunRow.monitor_id, func.max(MonitorRunRow.finished_at))
                                     .where(MonitorRunRow.status == "succeeded")
                                     .group_by(MonitorRunRow.monitor_id)).all())
            latest = {m.id: s.scalars(select(MonitorRunRow).where(MonitorRunRow.monitor_id == m.id,
                                                                  MonitorRunRow.status == "succeeded")
                                      .order_by(MonitorRunRow.finished_at.desc()).limit(1)).first()
                      for m in monitors}
        yield _family(GaugeMetricFamily("contextshift_audits", "Audits by status.", labels=["status"]),
                      [((st,), n) for st, n in audits])
        yield _family(GaugeMetricFamily("contextshift_monitor_runs", "Monitor runs by monitor and status.",
                                        labels=["monitor", "status"]), [((m, st), n) for m, st, n in runs])
        yield _family(GaugeMetricFamily("contextshift_alerts", "Alerts by severity and state.",
                                        labels=["severity", "state"]), [((sev, st), n) for sev, st, n in alerts])
        yield _family(GaugeMetricFamily("contextshift_webhook_messages", "Webhook messages by delivery state "
                                        "(pending: not delivered yet, retried).", labels=["state"]),
                      [((st,), n) for st, n in messages])
        open_by_monitor = {m.id: 0 for m in monitors}
        with self.sessions() as s:
            for monitor_id, n in s.execute(select(AlertRow.monitor_id, func.count()).where(AlertRow.state == "open")
                                           .group_by(AlertRow.monitor_id)).all():
                open_by_monitor[monitor_id] = n
        yield _family(GaugeMetricFamily("contextshift_open_alerts", "Open alerts per monitor.", labels=["monitor"]),
                      [((m,), n) for m, n in open_by_monitor.items()])
        t = datetime.now(timezone.utc)
        yield _family(GaugeMetricFamily("contextshift_monitor_seconds_since_success",
                                        "Seconds since the monitor's last successful run.", labels=["monitor"]),
                      [((m,), (t - _aware(at)).total_seconds()) for m, at in last_ok.items() if at is not None])
        yield _family(GaugeMetricFamily("contextshift_monitor_primary_metric",
                                        "The monitor's latest production primary metric (observed with labels, "
                                        "else estimated).", labels=["monitor", "metric", "kind"]),
                      list(_latest_metric(latest)))


def _latest_metric(latest: dict[str, Any]):
    for monitor_id, run in latest.items():
        summary = (run.summary or {}) if run is not None else {}
        for kind in ("observed", "estimated"):
            block = summary.get(kind)
            if block and block.get("value") is not None:
                yield (monitor_id, str(summary.get("metric") or ""), kind), float(block["value"])
                break


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value


def _family(family: Any, samples: list) -> Any:
    for labels, value in samples:
        family.add_metric(list(labels), float(value))
    return family


def make_registry(sessions: Any) -> Any:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServiceCollector(sessions))
    return registry
