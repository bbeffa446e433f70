"""Knowing, from a worker thread, that the client of the current request hung up.

An image upload derives its images in a worker thread for minutes after its body arrived; if
the client goes away meanwhile there is nobody to answer, so the work should stop and its
scratch files go. :class:`DisconnectWatch` (ASGI middleware) waits, once the request body has
been read, for the server's ``http.disconnect`` message and sets an event that
:func:`client_gone` reads; the event travels to the worker thread in a context variable (the
thread pool runs each request's function in a copy of the request's context). Long loops call
:func:`check_client` between steps.
"""
from __future__ import annotations

import asyncio
import contextvars
import threading

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.errors import ServiceError

__all__ = ["ClientGone", "DisconnectWatch", "check_client", "client_gone"]

_gone: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("client_gone", default=None)


class ClientGone(ServiceError):
    """The client hung up; nobody reads the answer (nginx's 499, for the log)."""

    status_code = 499
    code = "client_closed_request"


def client_gone() -> bool:
    event = _gone.get()
    return event is not None and event.is_set()


def check_client() -> None:
    """Raise :class:`ClientGone` when the current request's client hung up."""
    if client_gone():
        raise ClientGone("The client closed the connection; the upload was abandoned and nothing was stored.")


class DisconnectWatch:
    """Watch POST requests for a hang-up after their body was read (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        event = threading.Event()
        token = _gone.set(event)
        watcher: asyncio.Task | None = None

        async def watch() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                event.set()
            return message

        async def watched_receive() -> Message:
            nonlocal watcher
            if watcher is not None:  # the body is done: the next message is the one watched for
                return await asyncio.shield(watcher)
            message = await receive()
            if message["type"] == "http.disconnect":
                event.set()
            elif message["type"] == "http.request" and not message.get("more_body", False):
                watcher = asyncio.ensure_future(watch())
            return message

        try:
            await self.app(scope, watched_receive, send)
        finally:
            if watcher is not None and not watcher.done():
                watcher.cancel()
            _gone.reset(token)
