"""Alerts raised by monitors: list by state, acknowledge, resolve."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from service.monitors.deps import MonitorsDep
from service.monitors.routes import MAX_OFFSET, PAGED, page_headers
from service.monitors.schemas import AlertList, AlertOut, AlertState
from service.schemas import ERROR_RESPONSES

router = APIRouter(prefix="/v1/alerts", tags=["alerts"], responses=ERROR_RESPONSES)


@router.get("", response_model=AlertList, responses=PAGED)
def list_alerts(monitors: MonitorsDep, request: Request, response: Response, state: AlertState | None = None,
                monitor: str | None = None, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0) -> AlertList:
    """Alerts, oldest first, ``limit`` at a time; ``X-Next-Offset``/``Link`` name the next page."""
    rows = monitors.store.alerts(monitor_id=monitor, state=state, limit=limit + 1, offset=offset)
    page_headers(response, request.url, offset, limit, len(rows) > limit)
    return AlertList(items=[AlertOut.from_row(a) for a in rows[:limit]])


@router.post("/{alert_id}/acknowledge", response_model=AlertOut)
def acknowledge_alert(alert_id: str, monitors: MonitorsDep) -> AlertOut:
    """Seen by a person: stays active (no new message for its key) until resolved."""
    return AlertOut.from_row(monitors.store.set_alert_state(alert_id, "acknowledged"))


@router.post("/{alert_id}/resolve", response_model=AlertOut)
def resolve_alert(alert_id: str, monitors: MonitorsDep) -> AlertOut:
    """Closed by a person: if the finding comes back, a new alert opens."""
    return AlertOut.from_row(monitors.store.set_alert_state(alert_id, "resolved"))
