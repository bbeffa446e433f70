"""Domain exceptions of the service; ``app.py`` maps them to the API's error shape, and the audit
library's own refusals are mapped to them here (:func:`audit_input_errors`)."""
from __future__ import annotations

import errno
from contextlib import contextmanager
from typing import Any, Iterator

from audit.errors import AuditInputError

_FULL_TEXTS = ("no space left on device", "database or disk is full", "disk quota exceeded")


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


class Forbidden(ServiceError):
    """A valid key whose role does not allow the route."""

    status_code = 403
    code = "forbidden"


class InsufficientStorage(ServiceError):
    """The data dir's file system is full (507); the app names the data dir in the message."""

    status_code = 507
    code = "insufficient_storage"

    @classmethod
    def of(cls, exc: BaseException) -> "InsufficientStorage":
        return cls("The server's disk is full.", details={"reason": str(exc)[:200]})


def storage_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what it was raised from) is a full disk or quota: ``ENOSPC``/``EDQUOT``
    from the OS, or the same said by Arrow or SQLite, which carry it as text."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, InsufficientStorage):
            return True
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        # only an I/O or database error's text: an error about the user's data may quote anything
        if isinstance(exc, OSError) or type(exc).__name__ == "OperationalError":
            if any(t in str(exc).lower() for t in _FULL_TEXTS):
                return True
        exc = exc.__cause__ or exc.__context__ or getattr(exc, "orig", None)
        seen += 1
    return False


class StoredResultInvalid(ServiceError):
    """A stored result that no longer fits the AuditResult contract: said, never served unchecked."""

    status_code = 500
    code = "stored_result_invalid"


@contextmanager
def audit_input_errors() -> Iterator[None]:
    """The audit library's refusal of its input (:class:`audit.errors.AuditInputError`) as the
    service's 422, with the library's code and details: the API, the CLI and monitors say the same."""
    try:
        yield
    except AuditInputError as exc:
        raise InvalidRequest(exc.message, code=exc.code, details=exc.details) from None


class StoredOptionsInvalid(ServiceError):
    """Stored audit options that no longer parse as the audit's options: the audit fails, clearly."""

    status_code = 500
    code = "stored_options_invalid"
