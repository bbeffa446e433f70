"""FastAPI dependencies, as ``Annotated`` aliases used by the routers."""
from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from service.datasets.store import DatasetStore
from service.errors import Unauthorized
from service.runtime import Runtime
from service.settings import Settings, get_settings

_bearer = HTTPBearer(auto_error=False, description="API key, when CONTEXTSHIFT_API_KEYS is set.")


def get_runtime(request: Request) -> Runtime:
    return request.app.state.runtime


SettingsDep = Annotated[Settings, Depends(get_settings)]
RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def get_datasets(runtime: RuntimeDep) -> DatasetStore:
    return runtime.datasets


DatasetsDep = Annotated[DatasetStore, Depends(get_datasets)]


def require_api_key(settings: SettingsDep,
                    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
    """When keys are configured, demand ``Authorization: Bearer <key>`` (constant-time compare)."""
    if not settings.api_keys:
        return
    presented = credentials.credentials.encode() if credentials else b""
    matched = False
    for key in settings.api_keys:  # no early exit: timing does not reveal which key matched
        matched |= hmac.compare_digest(presented, key.encode())
    if not matched:
        raise Unauthorized("A valid API key is required: send 'Authorization: Bearer <key>'.")
