"""The ``Annotated`` dependency of the monitor and alert routers."""
from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from service.monitors.service import MonitorService


def get_monitors(request: Request) -> MonitorService:
    return request.app.state.monitors


MonitorsDep = Annotated[MonitorService, Depends(get_monitors)]
