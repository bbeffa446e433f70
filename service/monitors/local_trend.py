"""The trend page of a ``monitor run --config`` monitor: the service's page, from the state file.

Written after every run that read new rows (or failed), next to the state file as ``trend.html``
(the YAML's ``trend`` key names another path), so a cron monitor has the same page a service
monitor serves at ``/v1/monitors/{id}/report``: the guarantee, the charts, the alerts and the runs,
numbered as the service numbers them. A run with no new data writes nothing (it must stay cheap).
"""
from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

__all__ = ["trend_path", "write_trend_page"]


def trend_path(config: dict[str, Any]) -> Path:
    return Path(config.get("trend") or Path(config["state"]).with_name("trend.html"))


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def write_trend_page(config: dict[str, Any], state: dict[str, Any], alerts: list[Any]) -> Path:
    """Render the page from ``state`` (the runs, oldest first) and the monitor's ``alerts`` rows."""
    # lazy: Jinja2 and the report package; only runs that read new rows (or failed) get here
    from reports.monitor_html import render_monitor_html
    from service.monitors.budget import budget_summary

    options = config.get("options") or {}
    source = config.get("source") or {}
    name = str(config.get("name") or "monitor")
    monitor = SimpleNamespace(id=name, name=name, benchmark_id=Path(config["benchmark"]).name,
                              domain=str(config.get("domain") or "generic"),
                              source={"type": source.get("type"), "warnings": list(source.get("warnings") or [])},
                              schedule={"cron": "external (monitor run --config)"})
    runs = [SimpleNamespace(id=r["id"], status=r["status"], started_at=_when(r.get("started_at")), created_at=None,
                            n_rows=r.get("n_rows"), audit_id=None, alpha=r.get("alpha"), verdict=r.get("verdict"),
                            error=r.get("error"), summary=r.get("summary")) for r in state.get("runs", [])]
    page = render_monitor_html(monitor, runs, alerts, budget_summary(float(options.get("alpha", 0.05)),
                                                                     int(state.get("n_tested", 0))))
    path = trend_path(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, path)  # a reader never sees half a page
    return path
