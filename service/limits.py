"""ASGI middleware that caps request bodies while they stream in (never read whole first)."""
from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MULTIPART_SLACK = 1024 * 1024  # form fields and part headers around the file


class BodyTooLarge(HTTPException):
    """Raised from ``receive``; FastAPI re-raises HTTPExceptions met while parsing forms."""

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=f"Request body exceeds {limit} bytes.")
        self.limit = limit


def too_large_body(limit: int) -> bytes:
    return json.dumps({"error": {"code": "upload_too_large",
                                 "message": f"The upload exceeds the limit of {limit / 2**20:g} MB.",
                                 "details": {"max_bytes": limit, "limit": "CONTEXTSHIFT_MAX_UPLOAD_MB"}}}).encode()


class BodySizeLimit:
    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes + MULTIPART_SLACK
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _send_413(send, self.max_bytes)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await _send_413(send, self.max_bytes)


async def _send_413(send: Send, limit: int) -> None:
    body = too_large_body(limit)
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
