"""Domain exceptions of the service; ``app.py`` maps them to the API's error shape."""
from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """An error with an HTTP status, a stable machine code and JSON details."""

    status_code = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, status_code: int | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        if status_code:
            self.status_code = status_code
        self.details = details or {}

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class BadUpload(ServiceError):
    """The uploaded file cannot be read as a table."""


class UploadTooLarge(ServiceError):
    status_code = 413
    code = "upload_too_large"


class UnsupportedFormat(ServiceError):
    status_code = 415
    code = "unsupported_format"


class InvalidRequest(ServiceError):
    status_code = 422
    code = "invalid_request"


class ValidationFailed(ServiceError):
    status_code = 422
    code = "validation_failed"


class NotFound(ServiceError):
    status_code = 404
    code = "not_found"


class Conflict(ServiceError):
    status_code = 409
    code = "conflict"


class QueueFull(ServiceError):
    """Too much work is waiting; the client should retry after ``retry_after_s`` seconds."""

    status_code = 429
    code = "queue_full"

    def __init__(self, message: str, *, retry_after_s: int, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after_s = int(retry_after_s)


class Unauthorized(ServiceError):
    status_code = 401
    code = "unauthorized"
