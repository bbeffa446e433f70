"""Alerts raised by monitors: list by state, acknowledge, resolve (issue 14)."""
from __future__ import annotations

from fastapi import APIRouter

from service.monitors.deps import MonitorsDep
from service.monitors.schemas import AlertList, AlertOut, AlertState
from service.schemas import ERROR_RESPONSES

router = APIRouter(prefix="/v1/alerts", tags=["alerts"], responses=ERROR_RESPONSES)


@router.get("", response_model=AlertList)
def list_alerts(monitors: MonitorsDep, state: AlertState | None = None, monitor: str | None = None) -> AlertList:
    return AlertList(items=[AlertOut.from_row(a) for a in monitors.store.alerts(monitor_id=monitor, state=state)])


@router.post("/{alert_id}/acknowledge", response_model=AlertOut)
def acknowledge_alert(alert_id: str, monitors: MonitorsDep) -> AlertOut:
    """Seen by a person: stays active (no new message for its key) until resolved."""
    return AlertOut.from_row(monitors.store.set_alert_state(alert_id, "acknowledged"))


@router.post("/{alert_id}/resolve", response_model=AlertOut)
def resolve_alert(alert_id: str, monitors: MonitorsDep) -> AlertOut:
    """Closed by a person: if the finding comes back, a new alert opens."""
    return AlertOut.from_row(monitors.store.set_alert_state(alert_id, "resolved"))
