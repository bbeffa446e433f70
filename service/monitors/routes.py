"""Monitors: define, list, inspect, delete, run now, list runs, the trend page."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response, status
from fastapi.responses import HTMLResponse

from reports.monitor_html import render_monitor_html
from service.monitors.deps import MonitorsDep
from service.monitors.models import MonitorRow
from service.monitors.scheduler import next_run_times
from service.monitors.schemas import (
    AlertOut,
    Budget,
    MonitorCreate,
    MonitorList,
    MonitorOut,
    RunAccepted,
    RunList,
    RunOut,
)
from service.schemas import ERROR_RESPONSES

router = APIRouter(prefix="/v1/monitors", tags=["monitors"], responses=ERROR_RESPONSES)
MAX_OFFSET = 1_000_000_000
PAGED: dict[int | str, dict[str, Any]] = {200: {"headers": {
    "X-Next-Offset": {"description": "The offset of the next page; absent on the last page.",
                      "schema": {"type": "integer"}},
    "Link": {"description": 'The next page as `<url>; rel="next"`; absent on the last page.',
             "schema": {"type": "string"}}}}}


def page_headers(response: Response, url, offset: int, limit: int, more: bool) -> None:
    """A page of a list: the body stays ``{"items": [...]}``, the next page is in the headers."""
    if more:
        response.headers["X-Next-Offset"] = str(offset + limit)
        response.headers["Link"] = f'<{url.include_query_params(offset=offset + limit, limit=limit)}>; rel="next"'


def monitors_out(monitors: MonitorsDep, rows: list[MonitorRow]) -> list[MonitorOut]:
    """Monitors with their last run, open alerts and next run time: three queries for the page."""
    ids = [r.id for r in rows]
    last, open_alerts = monitors.store.last_runs(ids), monitors.store.open_alerts(ids)
    next_times = next_run_times(monitors.runtime.engine, ids)
    return [MonitorOut(id=row.id, name=row.name, benchmark=row.benchmark_id, domain=row.domain, source=row.source,
                       schedule=row.schedule, options=row.options, alerts=row.alerts, created_at=row.created_at,
                       next_run_time=next_times.get(row.id),
                       last_run=RunOut.from_row(last[row.id]) if row.id in last else None,
                       open_alerts=[AlertOut.from_row(a) for a in open_alerts[row.id]],
                       budget=Budget(**monitors.budget(row))) for row in rows]


def monitor_out(monitors: MonitorsDep, row: MonitorRow) -> MonitorOut:
    return monitors_out(monitors, [row])[0]


@router.post("", status_code=status.HTTP_201_CREATED, response_model=MonitorOut)
def create_monitor(body: MonitorCreate, monitors: MonitorsDep) -> MonitorOut:
    """Define a monitor; bad definitions answer 4xx and store nothing."""
    return monitor_out(monitors, monitors.create(body))


@router.get("", response_model=MonitorList, responses=PAGED)
def list_monitors(monitors: MonitorsDep, request: Request, response: Response,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                  offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0) -> MonitorList:
    """Monitors, oldest first, ``limit`` at a time; ``X-Next-Offset``/``Link`` name the next page."""
    rows = monitors.store.list(limit=limit + 1, offset=offset)
    page_headers(response, request.url, offset, limit, len(rows) > limit)
    return MonitorList(items=monitors_out(monitors, rows[:limit]))


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
def list_runs(monitor_id: str, monitors: MonitorsDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> RunList:
    """The newest runs first; consecutive no-data runs are one row (``no_data_runs`` counts them)."""
    monitors.store.get(monitor_id)
    return RunList(items=[RunOut.from_row(r) for r in monitors.store.runs(monitor_id, limit=limit)])


@router.get("/{monitor_id}/report", response_class=HTMLResponse,
            responses={200: {"content": {"text/html": {"schema": {"type": "string"}}}}})
def monitor_report(monitor_id: str, monitors: MonitorsDep) -> HTMLResponse:
    """The trend page: one offline HTML file, inline SVG, every user string escaped."""
    row = monitors.store.get(monitor_id)
    runs = list(reversed(monitors.store.runs(monitor_id, limit=500)))
    return HTMLResponse(render_monitor_html(row, runs, monitors.store.alerts(monitor_id=monitor_id),
                                            monitors.budget(row), monitors.store.deliveries(monitor_id)))
