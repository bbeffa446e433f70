"""``GET /metrics``: Prometheus text format (audits, monitor runs, alerts, monitor freshness, free
space on the data dir)."""
from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from service.operations.disk import DiskCollector

router = APIRouter(tags=["metrics"])


def _disk_registry(request: Request) -> CollectorRegistry:
    registry = getattr(request.app.state, "disk_registry", None)
    if registry is None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(DiskCollector(request.app.state.runtime.settings.data_dir))
        request.app.state.disk_registry = registry
    return registry


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {}}, "description": "Prometheus exposition format"}})
def metrics(request: Request) -> Response:
    body = generate_latest(request.app.state.metrics_registry) + generate_latest(_disk_registry(request))
    return Response(body, media_type=CONTENT_TYPE_LATEST)
