"""``/docs`` served entirely from this server: Swagger UI 5 (which reads OpenAPI 3.1, the version
FastAPI writes; Swagger UI 4 refuses it with "does not specify a valid version field") comes from
the ``fastapi-offline`` package's files, so the page works offline and under ``script-src 'self'``."""
from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, Response

router = APIRouter(include_in_schema=False)
# the names the page asks for -> the package's file names
ASSETS = {"swagger-ui-bundle.js": "swagger-ui-bundle.js", "swagger-ui.css": "swagger-ui.css",
          "favicon-32x32.png": "favicon.png"}
PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>contextshift API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"><link rel="icon" href="/docs/assets/favicon-32x32.png">
</head><body><div id="swagger-ui"></div><script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script></body></html>"""
# an inline script would need 'unsafe-inline'; a file from 'self' does not
INIT = """window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis], layout: "BaseLayout"});"""


def _assets_dir() -> Path:
    spec = find_spec("fastapi_offline")  # located, not imported: only its static files are used
    if spec is None or not spec.submodule_search_locations:
        raise HTTPException(status_code=404, detail="Swagger UI is not installed (package fastapi-offline).")
    return Path(list(spec.submodule_search_locations)[0]) / "static"


@router.get("/docs", response_class=HTMLResponse)
def docs() -> HTMLResponse:
    return HTMLResponse(PAGE)


@router.get("/docs/init.js")
def docs_init() -> Response:
    return Response(INIT, media_type="text/javascript")


@router.get("/docs/assets/{name}")
def docs_asset(name: str) -> FileResponse:
    if name not in ASSETS:  # a fixed list: no path from the request reaches the file system
        raise HTTPException(status_code=404, detail=f"No asset {name!r}.")
    return FileResponse(_assets_dir() / ASSETS[name], headers={"Cache-Control": "public, max-age=86400"})
