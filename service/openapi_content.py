"""The OpenAPI document says what each response really is.

FastAPI files a route's error responses under the route's own media type, so an HTML report's
404 (a JSON error body) was documented as ``text/html``, and routes answering CSV, JSON Lines or
Markdown were documented as JSON or plain text. This pass, run once when the document is built:

* documents every error response (4xx/5xx) as ``application/json`` with the error schema;
* gives the routes whose bodies are not JSON their real media types (:data:`BODIES`);
* when API keys are configured, documents the 401 of every protected operation (``/metrics``
  included).
"""
from __future__ import annotations

from typing import Any

TEXT = {"schema": {"type": "string"}}
# (method, path) -> the media types its 2xx body can have (the first one is FastAPI's default)
BODIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("get", "/v1/audits/{audit_id}/report"): ("text/html",),
    ("get", "/v1/audits/{audit_id}/report.md"): ("text/markdown",),
    ("get", "/v1/audits/{audit_id}/report.evidently"): ("text/html",),
    ("get", "/v1/audits/{audit_id}/next-round"): ("application/json", "text/csv", "application/x-ndjson"),
    ("get", "/v1/benchmarks/{name}/report"): ("text/html",),
    ("get", "/v1/benchmarks/{name}/rounds/{number}/export"): ("application/x-ndjson", "text/csv"),
    ("get", "/v1/monitors/{monitor_id}/report"): ("text/html",),
    ("get", "/metrics"): ("text/plain",),
}
ERROR_REF = {"$ref": "#/components/schemas/ErrorResponse"}
PROTECTED = ("/v1/", "/metrics")


def fix_content_types(schema: dict[str, Any], *, keys: bool) -> dict[str, Any]:
    """Rewrite ``schema`` (a FastAPI OpenAPI document) in place; returns it."""
    has_error_schema = "ErrorResponse" in schema.get("components", {}).get("schemas", {})
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            for code, response in responses.items():
                if str(code)[0] in "45" and has_error_schema:
                    response["content"] = {"application/json": {"schema": ERROR_REF}}
            media = BODIES.get((method, path))
            if media:
                ok = next((c for c in responses if str(c).startswith("2")), "200")
                current = responses.setdefault(ok, {"description": "Successful Response"}).get("content") or {}
                responses[ok]["content"] = {m: current.get(m) or (current.get("application/json") if m ==
                                                                   "application/json" else None) or TEXT
                                            for m in media}
            if keys and path.startswith(PROTECTED):  # the bearer scheme itself comes from the key dependency
                responses.setdefault("401", {"description": "Missing or wrong API key (`Authorization: "
                                                            "Bearer <key>`)."})
                if has_error_schema:
                    responses["401"]["content"] = {"application/json": {"schema": ERROR_REF}}
    return schema
