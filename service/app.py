"""The FastAPI application factory."""
from __future__ import annotations

import logging
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from service.audits import routes as audits
from service.datasets import routes as datasets
from service.deps import require_api_key
from service.disconnect import DisconnectWatch
from service.errors import InsufficientStorage, ServiceError, storage_full
from service.key_roles import Keyring, document_roles
from service.limits import BodySizeLimit
from service.monitors import alert_routes as alerts, routes as monitors
from service.monitors.metrics import make_registry
from service.monitors.service import MonitorService
from service.openapi_content import fix_content_types
from service.operations import disk, health, metrics
from service.packs import routes as domains
from service.pages import docs, index
from service.rounds import routes as benchmarks
from service.runtime import Runtime
from service.security import SecurityHeaders, allowed_methods
from service.settings import Settings, get_settings

log = logging.getLogger("contextshift")

HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
              405: "method_not_allowed", 413: "upload_too_large", 415: "unsupported_format",
              422: "invalid_request"}


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; ``settings`` default to the environment (``get_settings()``)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.runtime = Runtime.start(settings)
        app.state.runtime.start_worker()

        app.state.monitors = MonitorService.start(app.state.runtime)  # scheduler unless SCHEDULER=off
        app.state.metrics_registry = make_registry(app.state.runtime.sessions)
        try:
            yield
        finally:
            app.state.monitors.close()
            app.state.runtime.close()

    app = FastAPI(title="contextshift", version="0.1.0", lifespan=lifespan,
                  description="Context-shift auditing for production ML models.",
                  docs_url=None, redoc_url=None)  # /docs is served offline by service.pages.docs
    app.dependency_overrides[get_settings] = lambda: settings
    app.state.keyring = Keyring.from_settings(settings)  # a bad keys file refuses to start
    app.add_middleware(DisconnectWatch)  # innermost: sees the body end, then watches for a hang-up
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_upload_bytes)
    app.add_middleware(SecurityHeaders)  # outermost: its headers are on the 413s too
    _install_error_handlers(app, full_disk=disk.FullDiskAnswer(settings.data_dir))
    _install_openapi(app, keys=settings.keys_configured)
    app.include_router(health.router)
    app.include_router(docs.router)
    protected = [Depends(require_api_key)]
    for router in (datasets.router, audits.router, domains.router, index.router, benchmarks.router,
                   monitors.router, alerts.router, metrics.router):
        app.include_router(router, dependencies=protected)
    return app


def _install_openapi(app: FastAPI, *, keys: bool) -> None:
    """The generated document, with the real media types of non-JSON bodies and errors, and the
    bearer scheme and 401s when API keys are configured (service/openapi_content.py)."""
    build = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = fix_content_types(build(), keys=keys)
            app.openapi_schema = document_roles(schema) if keys else schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to replace the schema


def _error(status: int, code: str, message: str, details: dict | None = None) -> JSONResponse:
    return JSONResponse(status_code=status,
                        content={"error": {"code": code, "message": message, "details": details or {}}})


def _install_error_handlers(app: FastAPI, *, full_disk: "disk.FullDiskAnswer") -> None:
    @app.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError) -> JSONResponse:
        if isinstance(exc, InsufficientStorage):
            return full_disk.response(exc)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
        retry_after_s = getattr(exc, "retry_after_s", None)  # QueueFull and its kin
        if retry_after_s:
            headers = {"Retry-After": str(retry_after_s)}
        response = JSONResponse(status_code=exc.status_code, content=exc.to_body(), headers=headers)
        return response

    @app.exception_handler(RequestValidationError)
    async def request_invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [{"location": [str(p) for p in e.get("loc", ())], "message": e.get("msg", "")}
                    for e in exc.errors()]
        where = ", ".join(".".join(p["location"]) + ": " + p["message"] for p in problems[:3])
        return _error(422, "invalid_request", f"Invalid request: {where}", {"problems": problems})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = HTTP_CODES.get(exc.status_code, "http_error")
        response = _error(exc.status_code, code, str(exc.detail))
        response.headers.update(exc.headers or {})
        if exc.status_code == 405:
            response.headers["Allow"] = allowed_methods(request.app, request.url.path)
        return response

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        if storage_full(exc):
            return full_disk.response(exc)
        log.exception("unhandled error")
        return _error(500, "internal_error", "An unexpected error occurred; it has been logged.")
