"""FastAPI dependencies, as ``Annotated`` aliases used by the routers."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from service.errors import Forbidden, Unauthorized
from service.key_roles import Keyring, allows, route_role
from service.settings import Settings, get_settings

if TYPE_CHECKING:
    from service.runtime import Runtime

_bearer = HTTPBearer(auto_error=False, description="API key with a role, when keys are configured.")


def get_runtime(request: Request) -> Runtime:
    return request.app.state.runtime


SettingsDep = Annotated[Settings, Depends(get_settings)]
# Any where FastAPI reads it: the runtime wires every resource's store together, so importing it here
# would make each resource's routes depend on all the others (the resources' import-linter contract)
RuntimeDep = Annotated[Any, Depends(get_runtime)]


def require_api_key(request: Request, settings: SettingsDep,
                    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
    """When keys are configured, demand ``Authorization: Bearer <key>`` (401 without a valid one,
    constant-time compare) whose role allows this route (403 otherwise): the one check of every
    protected route (:mod:`service.key_roles`)."""
    if not settings.keys_configured:
        return
    keyring = getattr(request.app.state, "keyring", None) or Keyring.from_settings(settings)
    role = keyring.role_of(credentials.credentials.encode() if credentials else b"")
    if role is None:
        raise Unauthorized("A valid API key is required: send 'Authorization: Bearer <key>'.")
    route = request.scope.get("route")
    needed = route_role(request.method, getattr(route, "path", request.url.path))
    if not allows(role, needed):
        raise Forbidden(f"This key has the {role!r} role; {request.method} {getattr(route, 'path', '')} needs "
                        f"{needed!r}.", details={"role": role, "needed": needed})
