"""Monitors: define, list, inspect, delete, run now, list runs, the trend page (issue 14)."""
from __future__ import annotations

from fastapi import APIRouter, Response, status
from fastapi.responses import HTMLResponse

from service.monitors.deps import MonitorsDep
from service.monitors.models import MonitorRow
from service.monitors.schemas import (
    AlertOut, Budget, MonitorCreate, MonitorList, MonitorOut, RunAccepted, RunList, RunOut,
)
from service.schemas import ERROR_RESPONSES

router = APIRouter(prefix="/v1/monitors", tags=["monitors"], responses=ERROR_RESPONSES)


def monitor_out(monitors: MonitorsDep, row: MonitorRow) -> MonitorOut:
    runs = monitors.store.runs(row.id, limit=1)
    open_alerts = monitors.store.alerts(monitor_id=row.id, state="open")
    return MonitorOut(id=row.id, name=row.name, benchmark=row.benchmark_id, domain=row.domain, source=row.source,
                      schedule=row.schedule, options=row.options, alerts=row.alerts, created_at=row.created_at,
                      next_run_time=monitors.next_run_time(row.id),
                      last_run=RunOut.from_row(runs[0]) if runs else None,
                      open_alerts=[AlertOut.from_row(a) for a in open_alerts],
                      budget=Budget(**monitors.budget(row)))


@router.post("", status_code=status.HTTP_201_CREATED, response_model=MonitorOut)
def create_monitor(body: MonitorCreate, monitors: MonitorsDep) -> MonitorOut:
    """Define a monitor; bad definitions answer 4xx and store nothing."""
    return monitor_out(monitors, monitors.create(body))


@router.get("", response_model=MonitorList)
def list_monitors(monitors: MonitorsDep) -> MonitorList:
    return MonitorList(items=[monitor_out(monitors, m) for m in monitors.store.list()])


@router.get("/{monitor_id}", response_model=MonitorOut)
def get_monitor(monitor_id: str, monitors: MonitorsDep) -> MonitorOut:
    return monitor_out(monitors, monitors.store.get(monitor_id))


@router.delete("/{monitor_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_monitor(monitor_id: str, monitors: MonitorsDep) -> Response:
    monitors.delete(monitor_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{monitor_id}/run", status_code=status.HTTP_202_ACCEPTED, response_model=RunAccepted)
def run_monitor(monitor_id: str, monitors: MonitorsDep) -> RunAccepted:
    """A run now, outside the schedule (queued; executed in the background)."""
    run, _ = monitors.run_now(monitor_id)
    return RunAccepted(run_id=run.id, status="queued")


@router.get("/{monitor_id}/runs", response_model=RunList)
def list_runs(monitor_id: str, monitors: MonitorsDep, limit: int = 100) -> RunList:
    monitors.store.get(monitor_id)
    return RunList(items=[RunOut.from_row(r) for r in monitors.store.runs(monitor_id, limit=min(max(limit, 1), 1000))])


@router.get("/{monitor_id}/report", response_class=HTMLResponse)
def monitor_report(monitor_id: str, monitors: MonitorsDep) -> HTMLResponse:
    """The trend page: one offline HTML file, inline SVG, every user string escaped."""
    from reports.monitor_html import render_monitor_html

    row = monitors.store.get(monitor_id)
    runs = list(reversed(monitors.store.runs(monitor_id, limit=500)))
    return HTMLResponse(render_monitor_html(row, runs, monitors.store.alerts(monitor_id=monitor_id),
                                            monitors.budget(row), monitors.store.deliveries(monitor_id)))
