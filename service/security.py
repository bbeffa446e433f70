"""Security headers on every response; a Content-Security-Policy on every HTML page.

The report and index pages are static HTML without scripts: they get ``script-src 'none'``,
so even markup that slipped through escaping could not run. Evidently's companion page needs
its own inline scripts, so it is served in a CSP ``sandbox`` (an opaque origin: its scripts
cannot read or call the API as the page's visitor) and may not connect anywhere. ``/docs``
runs Swagger UI from this server only (``script-src 'self'``). No page may be framed.
"""
from __future__ import annotations

import re

from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC_PAGE = ("default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src data:; "
               "font-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SANDBOXED_PAGE = ("sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval' https:; "
                  "style-src 'unsafe-inline' https:; img-src data: blob: https:; font-src data: https:; "
                  "connect-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
DOCS_PAGE = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
             "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
POLICIES = ((re.compile(r"^/v1/audits/[^/]+/report\.evidently$"), SANDBOXED_PAGE),
            (re.compile(r"^/docs(/.*)?$"), DOCS_PAGE))
ALWAYS = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]


def policy_for(path: str) -> str:
    """The CSP of the HTML page at ``path`` (the strict static one unless listed above)."""
    for pattern, policy in POLICIES:
        if pattern.match(path):
            return policy
    return STATIC_PAGE


class SecurityHeaders:
    """ASGI middleware: ``nosniff`` everywhere; CSP and ``X-Frame-Options`` on HTML."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in
                           (b"x-content-type-options", b"content-security-policy")]
                headers += ALWAYS
                content_type = dict(headers).get(b"content-type", b"")
                if content_type.startswith(b"text/html"):
                    headers += [(b"content-security-policy", policy_for(path).encode()),
                                (b"x-frame-options", b"DENY")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


def allowed_methods(app, path: str) -> str:
    """Every method some route serves at ``path`` (Starlette's own 405 names one route's only)."""
    allowed = []
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
        scope: Scope = {"type": "http", "path": path, "method": method, "root_path": "", "headers": []}
        if any(route.matches(scope)[0] == Match.FULL for route in app.router.routes):
            allowed.append(method)
    return ", ".join(allowed)
